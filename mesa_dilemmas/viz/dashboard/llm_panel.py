"""What the LLM agents did: accounting so far, failures, and each agent's latest prompt and answer.

Read from the run record while rounds are being played (the worker writes each
call the moment it returns), so the panel fills in live.  The decision counts
(asked, parse failures, retries, fallbacks) come from the game's broker, which
counts them for every agent whatever answered.
"""

from __future__ import annotations

import re
import time
from typing import Any

import solara

from mesa_dilemmas.viz.dashboard.components import Metric, Metrics, Pre, Table, Text, fmt
from mesa_dilemmas.viz.dashboard.llm_run import Transcript
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel

ALL = "all agents"

#: how a prompt larger than the model's context window reads, whoever raised it: the LLM
#: layer's own error (a class named like ``ContextOverflow``), llama.cpp ("Requested tokens (3012)
#: exceed context window of 2048"), OpenAI-style servers ("maximum context length is 8192
#: tokens"), Anthropic ("prompt is too long"), Gemini ("exceeds the maximum number of tokens")
OVERFLOW = re.compile(
    r"context ?(window|length|overflow|size|too small)|contextoverflow|contexttoo|n_ctx"
    r"|exceed\w* (the )?context|prompt is too long|too many tokens|maximum number of tokens",
    re.IGNORECASE,
)
#: the fix for a context overflow, per provider
OVERFLOW_FIX = {
    "local": (
        "The fix: give the embedded model a larger window -- start the dashboard with "
        '--llm-config FILE where FILE holds [llm.local] n_ctx = 8192 or "auto" (the default: '
        "the window grows with the prompt up to the bundled model's 8192), or use a larger local model; a smaller 'LLM max tokens per reply' "
        "also leaves more room for the prompt."
    ),
    "remote": (
        "The fix: choose a model with a larger context window, or lower 'LLM max tokens per "
        "reply' (fewer players or rounds also shorten the prompt)."
    ),
}


def is_context_overflow(text: str | None) -> bool:
    """Whether an error (its text, or its class name in a traceback) says the prompt did not fit."""
    return bool(text) and OVERFLOW.search(str(text)) is not None


def llm_fix(error: str | None, provider: str = "local") -> str:
    """The sentence that says how to fix ``error`` ("" when there is nothing specific to say)."""
    if is_context_overflow(error):
        return (
            "The prompt is larger than the model's context window. "
            + OVERFLOW_FIX["local" if provider == "local" else "remote"]
        )
    return ""


def stop_reason(model: DashboardModel) -> tuple[str, str] | None:
    """(what stopped the LLM run, the fix) when a round failed because of the LLM layer.

    The round's error is on the status line already; this names the LLM layer's reason
    (the exception class from the traceback: ProviderRejected, BudgetExceeded, a context
    overflow ...) so the panel can say what to change."""
    if not model.error or model.llm is None:
        return None
    detail = model.detail or ""
    last = next((line for line in reversed(detail.strip().splitlines()) if line.strip()), "")
    name = last.split(":", 1)[0].rsplit(".", 1)[-1].strip()
    text = f"{model.error}\n{detail}"
    provider = model.llm.choice.provider
    if is_context_overflow(text):
        return "the prompt did not fit the model's context window", llm_fix(text, provider)
    reasons = {
        "ProviderRejected": (
            "the provider refused the run",
            "Check the model name, the API key "
            "and the endpoint (the message above says which), then Reset.",
        ),
        "BudgetExceeded": (
            "the run's LLM budget is spent",
            "Raise [llm.budget] in the --llm-config file, or Reset to start a new run.",
        ),
        "LLMConfigError": (
            "the LLM settings are incomplete",
            "The message above says what is missing (a key, a package, a model file).",
        ),
        "CallFailed": ("an LLM call failed for good", "See the failed call below."),
    }
    if name == "ProviderRejected":
        lowered = text.lower()
        if "unreachable" in lowered or "cannot connect" in lowered:
            return (
                "the provider's endpoint cannot be reached",
                "Check the address in 'LLM model' "
                "(name@http://host/v1) and that the server is running, then Reset.",
            )
        if re.search(r"\b(401|403)\b|api key|unauthori[sz]ed", lowered):
            return (
                "the provider rejected the API key",
                "Set a valid key in the environment the dashboard was started from, then Reset.",
            )
        if re.search(r"\b404\b|unknown model|not found", lowered):
            return ("the provider does not know the model", "Check 'LLM model', then Reset.")
    if name in reasons:
        return reasons[name]
    if "mesa_dilemmas/llm" in detail or "mesa_dilemmas.llm" in detail:
        return f"the LLM layer stopped the round ({name or 'error'})", ""
    return None


def _label(model: DashboardModel, agent: int | None) -> str:
    if agent is None:
        return "narrator"
    return model.agent_labels.get(agent, f"agent {agent}")


def _broker_rows(model: DashboardModel) -> dict[str, dict[str, int]]:
    """Decision counters of the LLM agents and the narrator, keyed like the accounting."""
    broker = getattr(model.game, "broker", None)
    if broker is None:
        return {}
    llm_ids = model.llm_agent_ids
    narrator_is_llm = str(getattr(broker.narrator, "name", "")).startswith("llm:")
    out: dict[str, dict[str, int]] = {}
    for rec in model.decision_stats:  # as of the last finished round: never read mid-round
        aid = rec["agent_id"]
        if aid in llm_ids or (aid == -1 and narrator_is_llm):
            row = out.setdefault(
                "narrator" if aid == -1 else str(aid),
                dict.fromkeys(("asked", "parse_failures", "retries", "fallbacks"), 0),
            )
            for k in row:
                row[k] += rec[k]
    return out


@solara.component
def RoundProgress(model: DashboardModel, run: Any, summary: dict[str, Any], tick: int = 0) -> None:
    """The round in flight: how long it has run, its calls answered and in flight, which LLM
    agents have answered; and the run's tokens and cost so far (re-rendered every second
    while a round plays: ``tick`` changes)."""
    job = model.job
    busy = model.busy
    failed_round = None if busy else getattr(model, "failed_round", None)
    round_ = job.round if busy and job is not None else (failed_round or model.round)
    try:
        progress = run.round_progress(round_) if round_ else None
    except Exception:  # the record is being rewritten; the panel's numbers below still show
        progress = None
    tokens = int(summary.get("tokens_in", 0)) + int(summary.get("tokens_out", 0))
    cost = float(summary.get("cost_usd", 0.0))
    parts = []
    if busy and job is not None:
        parts.append(f"round {job.round} playing for {time.monotonic() - job.started:.0f} s")
    elif failed_round:
        parts.append(f"round {failed_round} failed")
    elif round_:
        parts.append(f"round {round_} done")
    else:
        parts.append("no round played yet")
    if progress is not None:
        agents = len(progress["agents"] & model.llm_agent_ids)
        parts.append(
            f"calls answered {progress['answered']}"
            + (f" (+{progress['failed']} failed)" if progress["failed"] else "")
            + (f", in flight {progress['in_flight']}" if busy else "")
        )
        if model.llm_agent_ids:
            parts.append(f"{agents} of {len(model.llm_agent_ids)} LLM agents called")
        if progress["answered"] or progress["failed"]:
            parts.append(f"first call to last answer {progress['span_s']:.1f} s")
    parts.append(f"so far {tokens:,} tokens, cost ${cost:.4f}")
    with solara.Div(
        classes=["mdd-llm-progress"],
        attributes={
            "data-llm-progress": "playing" if busy else "idle",
            "data-answered": str(progress["answered"] if progress else 0),
            "data-in-flight": str(progress["in_flight"] if progress and busy else 0),
        },
    ):
        Text(" · ".join(parts), bold="LLM round: ")


def _matches(t: Transcript, agent: str, text: str, errors_only: bool, label: str) -> bool:
    if agent != ALL and label != agent:
        return False
    if errors_only and not t.error:
        return False
    if text:
        hay = " ".join([label, t.kind, t.answer, t.error or "", *(c for _, c in t.prompt)]).lower()
        return text.lower() in hay
    return True


@solara.component
def TranscriptCard(t: Transcript, label: str) -> None:
    details = (
        f"· {t.kind} · round {t.round} · attempt {t.attempt} · {t.model} · "
        f"{t.tokens_in} → {t.tokens_out} tokens · from {t.source}"
    )
    with solara.Div(attributes={"data-transcript": label}):
        Text(details, bold=label)
        if t.error:
            fix = llm_fix(t.error)
            solara.Error(f"call failed: {t.error.rstrip('.')}." + (f" {fix}" if fix else ""))
        prompt = "\n\n".join(f"[{role}]\n{content}" for role, content in t.prompt)
        with solara.Details("prompt", expand=False):
            Pre(prompt, key=f"prompt:{label}")
        solara.Text("answer:")
        Pre(t.answer or "(no answer)", key=f"answer:{label}")


@solara.component
def LLMPanel(model: DashboardModel, tick: int = 0) -> None:
    """Accounting, failures and the filterable transcript of the page's LLM agents (re-rendered
    with ``ModelView``, its parent, on every Step and live tick: ``tick`` is Mesa's update
    counter, whose change makes this component re-render)."""
    agent_filter, set_agent_filter = solara.use_state(ALL)
    text_filter, set_text_filter = solara.use_state("")
    errors_only, set_errors_only = solara.use_state(False)
    run = model.llm
    if run is None:
        return
    try:
        summary: dict[str, Any] = run.summary()
        transcripts = run.transcripts()
        errors = run.errors()
    except Exception as exc:  # the record is being rewritten or is gone: say so, keep the page
        solara.Warning(f"LLM record unavailable: {exc}")
        return
    broker = _broker_rows(model)
    with (
        solara.Card(f"LLM agents ({model.n_llm_agents} on {run.choice.spec})"),
        solara.Div(attributes={"data-llm-panel": "1"}),
    ):
        RoundProgress(model, run, summary, tick)
        stopped = stop_reason(model)
        if stopped is not None:
            what, fix = stopped
            with solara.Div(attributes={"data-llm-stop": what}):
                solara.Error(f"The LLM run stopped: {what}. {fix}".strip())
        overflows = [e for e in errors if is_context_overflow(e["error"])]
        if overflows and stopped is None:
            e = overflows[0]
            with solara.Div(attributes={"data-llm-overflow": str(len(overflows))}):
                solara.Error(
                    f"{len(overflows)} recent LLM decision(s) did not fit the model's context "
                    f"window (latest: {_label(model, e['agent'])}, {e['kind']} in round "
                    f"{e['round']}; the decision fell back). "
                    + OVERFLOW_FIX["local" if run.choice.provider == "local" else "remote"]
                )
        Metrics(
            [
                Metric("llm_calls", "calls", summary.get("calls", 0)),
                Metric("llm_provider_calls", "provider calls", summary.get("provider_calls", 0)),
                Metric("llm_tokens_in", "tokens in", summary.get("tokens_in", 0)),
                Metric("llm_tokens_out", "tokens out", summary.get("tokens_out", 0)),
                Metric("llm_cost", "cost (USD)", float(summary.get("cost_usd", 0.0)), 4),
                Metric("llm_parse_failures", "parse failures", summary.get("parse_failures", 0)),
                Metric("llm_fallbacks", "fallbacks", summary.get("fallbacks", 0)),
                Metric("llm_call_errors", "failed calls", summary.get("call_errors", 0)),
            ]
        )
        if summary.get("unpriced_calls"):
            solara.Info(f"{summary['unpriced_calls']} calls have no price (cost counted as 0)")
        by_agent: dict[str, dict[str, Any]] = summary.get("by_agent", {})
        keys = sorted(set(by_agent) | set(broker), key=lambda k: (k == "narrator", k.zfill(9)))
        rows = []
        for key in keys:
            acc, dec = by_agent.get(key, {}), broker.get(key, {})
            label = "narrator" if key == "narrator" else _label(model, int(key))
            rows.append(
                (
                    label,
                    dec.get("asked", 0),
                    acc.get("calls", 0),
                    acc.get("tokens_in", 0),
                    acc.get("tokens_out", 0),
                    fmt(acc.get("cost_usd", 0.0)),
                    acc.get("parse_failures", 0),
                    acc.get("fallbacks", 0),
                    acc.get("call_errors", 0),
                )
            )
        Table(
            [
                "agent",
                "decisions",
                "calls",
                "tokens in",
                "tokens out",
                "cost",
                "parse failures",
                "fallbacks",
                "failed calls",
            ],
            rows,
            key="llm-accounting",
        )
        if errors:
            latest = errors[0]
            with solara.Div(attributes={"data-llm-errors": str(len(errors))}):
                solara.Warning(
                    f"{len(errors)} recent LLM decision(s) had a problem; the latest: "
                    f"{_label(model, latest['agent'])}, {latest['kind']} in round {latest['round']}: "
                    f"{latest['error']}"
                    + (
                        " (the decision's documented fallback was used)"
                        if latest["fell_back"]
                        else ""
                    )
                )
        labels = [ALL, *dict.fromkeys(_label(model, t.agent) for t in transcripts)]
        with solara.Row():
            solara.Select("agent", value=agent_filter, values=labels, on_value=set_agent_filter)
            solara.InputText(
                "search prompts and answers",
                value=text_filter,
                on_value=set_text_filter,
                continuous_update=True,
            )
            solara.Checkbox(label="failed calls only", value=errors_only, on_value=set_errors_only)
        shown = [
            t
            for t in transcripts
            if _matches(t, agent_filter, text_filter, errors_only, _label(model, t.agent))
        ]
        Text(
            f"Latest prompt and answer per agent: {len(shown)} of {len(transcripts)} shown"
            if transcripts
            else "No LLM call yet: press Step."
        )
        # the filter is echoed by the server: a test can tell the page reacted during a round
        # scrolled within the panel: at the top of the page, it must not push the game down
        with solara.Div(
            classes=["mdd-llm-transcripts"],
            attributes={"data-transcripts": str(len(shown)), "data-filter": text_filter},
        ):
            for t in shown:
                TranscriptCard(t, _label(model, t.agent))
