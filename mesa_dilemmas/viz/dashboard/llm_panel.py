"""What the LLM agents did: accounting so far, failures, and each agent's latest prompt and answer.

Read from the run record while rounds are being played (the worker writes each
call the moment it returns), so the panel fills in live.  The decision counts
(asked, parse failures, retries, fallbacks) come from the game's broker, which
counts them for every agent whatever answered.
"""

from __future__ import annotations

from typing import Any

import solara

from mesa_dilemmas.viz.dashboard.components import Metric, Metrics, Pre, Table, Text, fmt
from mesa_dilemmas.viz.dashboard.llm_run import Transcript
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel

ALL = "all agents"


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
            row = out.setdefault("narrator" if aid == -1 else str(aid), dict.fromkeys(
                ("asked", "parse_failures", "retries", "fallbacks"), 0))  # fmt: skip
            for k in row:
                row[k] += rec[k]
    return out


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
            solara.Error(f"call failed: {t.error}")
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
    with solara.Card(f"LLM agents ({model.n_llm_agents} on {run.choice.spec})"):
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
            rows.append((
                label, dec.get("asked", 0), acc.get("calls", 0), acc.get("tokens_in", 0),
                acc.get("tokens_out", 0), fmt(acc.get("cost_usd", 0.0)),
                acc.get("parse_failures", 0), acc.get("fallbacks", 0), acc.get("call_errors", 0),
            ))  # fmt: skip
        Table(
            ["agent", "decisions", "calls", "tokens in", "tokens out", "cost", "parse failures",
             "fallbacks", "failed calls"],
            rows,
            key="llm-accounting",
        )  # fmt: skip
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
            solara.InputText("search prompts and answers", value=text_filter,
                             on_value=set_text_filter, continuous_update=True)  # fmt: skip
            solara.Checkbox(label="failed calls only", value=errors_only, on_value=set_errors_only)
        shown = [
            t for t in transcripts
            if _matches(t, agent_filter, text_filter, errors_only, _label(model, t.agent))
        ]  # fmt: skip
        Text(
            f"Latest prompt and answer per agent: {len(shown)} of {len(transcripts)} shown"
            if transcripts
            else "No LLM call yet: press Step."
        )
        # the filter is echoed by the server: a test can tell the page reacted during a round
        with solara.Div(
            attributes={"data-transcripts": str(len(shown)), "data-filter": text_filter}
        ):
            for t in shown:
                TranscriptCard(t, _label(model, t.agent))
