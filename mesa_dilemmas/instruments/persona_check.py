"""``mesa-dilemmas personas check``: does a model given a persona's words measure as that persona?

Each bundled persona of a game (:func:`mesa_dilemmas.instruments.persona_cases`) is put through
every instrument it has a target for: the game's own persona wording is the system prompt, each
item of the instrument is one decision (a :class:`~mesa_dilemmas.agents.decisions.ChoiceSpec`
over its options) rendered and parsed by the LLM layer for the run's answer mode, and the whole
instrument is answered ``samples`` times.  A sample's value is the instrument's score of its
answers; the table gives the mean over samples with a 95% t-interval, the category measured
against the target's, and the verdict (pass when the mean is within the instrument's tolerance
of the target, with at least ``min_samples`` valid samples).

An invalid answer is asked again with the LLM layer's corrective message, up to ``[llm]
answer_retries`` times; an item still without a valid answer makes its sample invalid: the
sample is counted (``invalid items``) and left out of the mean, never filled in.  Every call goes
through the LLM layer's client (shared response cache, budget, run record): the sample id of a
call is (seed, sample, item, attempt), so a rerun is answered from the cache (no provider call).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.instruments import Instrument, Item, PersonaCase, target_window

if TYPE_CHECKING:
    from mesa_dilemmas.llm.settings import LLMSettings

HELP = "persona manipulation checks: standard instruments put to a model in each persona's words"

DESCRIPTION = (
    "Each bundled persona is put through every instrument it has a target for (the SVO slider "
    "measure, the cultural-orientation axes, the prosociality battery): the game's own persona "
    "words are the system prompt, each item is one decision, and the instrument is answered "
    "--samples times. The table gives the mean with a 95% t-interval, the category measured "
    "against the target's, pass or fail (a value within the tolerance, or the target category), "
    "and the personas with different targets an instrument does not separate. Invalid answers "
    "are asked again and counted, never filled in. Calls go through the response cache: a rerun "
    "makes no provider call. The result is stored per (model, game) for [llm] "
    "require_persona_check."
)

#: the columns of the table, in order
COLUMNS = (
    "game",
    "persona",
    "instrument",
    "target",
    "target_category",
    "pass_low",
    "pass_high",
    "mean",
    "ci_low",
    "ci_high",
    "measured_category",
    "distance",
    "verdict",
    "samples",
    "valid_samples",
    "invalid_items",
    "reasks",
    "paid_calls",
    "cached_calls",
    "first_option_share",
    "window_overlaps",
    "ci_overlaps",
    "note",
)


def escape_braces(text: str) -> str:
    """``text`` as a literal in a ``str.format`` template (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def _template(decision: Any, fields: dict[str, Any]) -> Any:
    """An item's prompt: the persona's words as the system prompt, the question as the user's."""
    from mesa_dilemmas.llm.prompts import Template

    obs = decision.observation
    return Template(user=escape_braces(obs["question"]), system=escape_braces(obs["system"]))


class _Asker:
    """One model's client, asking items in a persona's words (cache, budget, record)."""

    def __init__(self, spec: str, settings: LLMSettings, seed: int) -> None:
        from mesa_dilemmas.llm.checks import check_spec, resolve
        from mesa_dilemmas.llm.client import get_client

        resolved = resolve(spec, settings)
        self.spec = resolved
        self.client = None  # a dry run (pricing: --estimate) calls nothing and needs no key
        if not settings.dry_run:
            check_spec(resolved, settings)
            self.client = get_client(resolved, settings)
        self.label = resolved.label
        self.settings = settings
        self.seed = seed

    async def ask(
        self, instrument: Instrument, case: PersonaCase, item: Item, sample: int
    ) -> dict[str, Any]:
        """One item, asked until valid or out of re-asks: the answer (None when none came),
        re-asks, why it failed, and where each call was answered from."""
        import dataclasses
        import json

        from mesa_dilemmas.agents.decisions import ChoiceSpec, Decision, InvalidAnswer
        from mesa_dilemmas.llm import session
        from mesa_dilemmas.llm.answers import failure_kind, parse_response
        from mesa_dilemmas.llm.prompts import reask_messages, register_template, render
        from mesa_dilemmas.llm.request import CallContext, ChatRequest, Message, seed_for
        from mesa_dilemmas.llm.specs import schema_in_text, shares_schema

        if self.client is None:
            import numpy as np

            from mesa_dilemmas.agents.random_policy import random_answer
            from mesa_dilemmas.llm.estimate import dry_call

        s = self.settings
        kind = getattr(instrument, "kind", f"instrument.{instrument.name}")
        register_template(kind, _template)
        decision = Decision(
            kind=kind,
            spec=ChoiceSpec(item.options),
            observation={"system": case.prompt, "question": item.text},
            step=item.number,
        )
        native = s.answer_mode == "native" and self.client is not None  # a dry run probes nothing
        mode = await self.client.answer_mode() if native else s.answer_mode
        prompt = render(
            decision,
            mode=mode,
            round_=sample,
            system_extra=s.system_prompt,
            templates_dir=s.templates_dir,
            reasoning=s.reasoning_for(self.spec),
            reasoning_max_chars=s.reasoning_max_chars,
            max_tokens=s.max_tokens,
            shared_schema=shares_schema(self.spec),
            schema_text=schema_in_text(self.spec),
        )
        ctx = CallContext(
            kind=kind,
            agent_id=0,
            round=sample,
            step=item.number,
            run_seed=str(self.seed),
            policy=f"persona_check:{case.game}:{case.label}",
            reasoning=prompt.reasoning,
        )
        messages = [Message("system", prompt.system), Message("user", prompt.user)]
        sources: list[str] = []
        error: str | None = None
        why = "invalid"
        for attempt in range(s.answer_retries + 1):
            call_ctx = dataclasses.replace(ctx, attempt=attempt)
            request = ChatRequest(
                messages=tuple(messages),
                temperature=s.temperature,
                max_tokens=prompt.max_tokens or s.max_tokens,
                seed=seed_for(call_ctx.sample_id),
                top_p=s.top_p,
                schema=prompt.schema,
            )
            if self.client is None:  # dry: the prompt counted, a random legal answer
                value = random_answer(decision.spec, np.random.default_rng(request.seed))
                dry_call(self.spec, s, call_ctx, request, mode, value)
                self._record(session, call_ctx, 0, None, None, value)
                return {"answer": value, "reasks": 0, "why": None, "sources": ["dry"]}
            outcome = await self.client.complete(request, call_ctx)
            sources.append(outcome.source)
            response = outcome.response
            raw = (
                response.refusal
                or response.text
                or (json.dumps(response.data) if response.data is not None else "")
            )
            try:
                parsed = parse_response(response, decision.spec, mode, prompt.tag, prompt.schema)
            except InvalidAnswer as exc:
                error = str(exc)
                why = failure_kind(response)
                messages = reask_messages(
                    messages, raw, error, decision.spec, mode, prompt.tag, prompt.schema
                )
                continue
            self._record(session, call_ctx, attempt, None, None, parsed.value)
            return {"answer": parsed.value, "reasks": attempt, "why": None, "sources": sources}
        self._record(session, ctx, s.answer_retries, why, error, None)
        return {"answer": None, "reasks": s.answer_retries, "why": why, "sources": sources}

    @staticmethod
    def _record(
        session: Any, ctx: Any, reasks: int, why: str | None, error: str | None, value: Any
    ) -> None:
        run = session.current()
        if run is not None:
            run.recorder.record_decision(
                ctx,
                retries=reasks,
                parse_failures=reasks + (why is not None),
                fell_back=why is not None,
                call_errors=0,
                error=error,
                value=value,
                fallback=why,
            )


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The t-interval of the mean (NaN for fewer than two values)."""
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    from scipy.stats import t

    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half, mean + half


def summarise(
    instrument: Instrument, case: PersonaCase, samples: list[dict[str, Any]]
) -> dict[str, Any]:
    """One table row from one persona's samples under one instrument."""
    values = [s["value"] for s in samples if s["value"] is not None]
    mean = sum(values) / len(values) if values else math.nan
    low, high = t_interval(values)
    target = case.target(instrument.name)
    w_low, w_high = target_window(instrument, target)
    if not values:
        distance = math.nan
        verdict = "no valid sample"
    else:
        if target.category is not None:
            inside = instrument.category(mean) == target.category
            distance = 0.0 if inside else min(abs(mean - w_low), abs(mean - w_high))
        else:
            assert target.value is not None
            distance = abs(mean - target.value)
            inside = distance <= (w_high - w_low) / 2
        verdict = "pass" if inside else "fail"
        if len(values) < instrument.min_samples:
            verdict += f" (n<{instrument.min_samples})"
    sources = [src for s in samples for src in s["sources"]]
    positions = [i for s in samples for i in s["positions"] if i is not None]
    low_end, high_end = getattr(instrument, "reachable", (-math.inf, math.inf))
    note = ""
    if target.value is not None and not low_end <= target.value <= high_end:
        nearest = min(max(target.value, low_end), high_end)
        note = (
            f"target beyond the instrument's range [{low_end:g}, {high_end:g}]: "
            f"the nearest any answers reach is {nearest:g}, {abs(target.value - nearest):.1f} away"
        )
    return {
        "game": case.game,
        "persona": case.label,
        "instrument": instrument.name,
        "target": target.value if target.value is not None else target.category,
        "target_category": target.category or instrument.category(float(target.value)),
        "pass_low": max(w_low, low_end),
        "pass_high": min(w_high, high_end),
        "mean": mean,
        "ci_low": low,
        "ci_high": high,
        "measured_category": instrument.category(mean) if values else "",
        "distance": distance,
        "verdict": verdict,
        "samples": len(samples),
        "valid_samples": len(values),
        "invalid_items": sum(s["invalid_items"] for s in samples),
        "reasks": sum(s["reasks"] for s in samples),
        "paid_calls": sum(src == "provider" for src in sources),
        "cached_calls": sum(src != "provider" for src in sources),
        "first_option_share": (
            sum(i == 0 for i in positions) / len(positions) if positions else math.nan
        ),
        "window_overlaps": "",
        "ci_overlaps": "",
        "note": note,
    }


def _overlap(a: tuple[float, float], b: tuple[float, float], *, closed: bool = True) -> bool:
    """Whether two intervals share a point (NaN ends share none); ``closed=False``: more than
    an end (two categories' ranges meet at their boundary, which belongs to one of them)."""
    if any(math.isnan(x) for x in (*a, *b)):
        return False
    if closed:
        return a[0] <= b[1] and b[0] <= a[1]
    return a[0] < b[1] and b[0] < a[1]


def flag_overlaps(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    """Mark the personas an instrument is meant to tell apart but does not: for each game and
    instrument, every pair whose targets are of one kind (two values, such as two SVO angles, or
    two categories, such as two cultural groups) and differ, and whose
    pass windows overlap (``window_overlaps``: a pass for both does not show them apart) or
    whose measured 95% intervals overlap (``ci_overlaps``: this model did not tell them apart).
    Returns the flagged pairs as (game, instrument, persona, persona, kinds)."""
    flagged = []
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if (a["game"], a["instrument"]) != (b["game"], b["instrument"]):
                continue
            categories = isinstance(a["target"], str) and isinstance(b["target"], str)
            if (
                a["target"] == b["target"]
                or categories != isinstance(b["target"], str)
                or (categories != isinstance(a["target"], str))
            ):
                continue  # the same target, or a value and a category: not meant to be told apart
            kinds = []
            windows = (a["pass_low"], a["pass_high"]), (b["pass_low"], b["pass_high"])
            if _overlap(*windows, closed=not categories):
                kinds.append("targets")
                for x, y in ((a, b), (b, a)):
                    x["window_overlaps"] = ";".join(
                        filter(None, [x["window_overlaps"], y["persona"]])
                    )
            if _overlap((a["ci_low"], a["ci_high"]), (b["ci_low"], b["ci_high"])):
                kinds.append("measured")
                for x, y in ((a, b), (b, a)):
                    x["ci_overlaps"] = ";".join(filter(None, [x["ci_overlaps"], y["persona"]]))
            if kinds:
                flagged.append(
                    (a["game"], a["instrument"], a["persona"], b["persona"], "+".join(kinds))
                )
    return flagged


def check(
    spec: str,
    cases: Sequence[PersonaCase],
    *,
    instruments: Sequence[Instrument] | None = None,
    samples: int = 30,
    seed: int = 0,
    settings: LLMSettings | None = None,
    details: list[dict[str, Any]] | None = None,
    dry_ok: bool = False,
) -> list[dict[str, Any]]:
    """Put every case through every instrument it has a target for (default: every registered
    instrument), ``samples`` times each, with model ``spec``; one row per (case, instrument).
    ``details`` (a list) receives one row per sample: its answers and value.  Call inside a run
    session to record the calls; outside one they still go through the cache and budget.
    ``dry_ok``: settings with ``dry_run`` are accepted (pricing the check, whose random answers
    measure nothing: ``--estimate``)."""
    import asyncio

    from mesa_dilemmas.instruments import INSTRUMENTS, load_instrument
    from mesa_dilemmas.llm import session
    from mesa_dilemmas.llm.settings import LLMSettings as _Settings

    if samples < 1:
        raise ValueError(f"samples must be at least 1 (got {samples})")
    settings = settings or session.current_settings() or _Settings()
    if settings.dry_run and not dry_ok:
        raise ValueError("a persona check asks a model; dry_run answers at random")
    tools = (
        list(instruments) if instruments is not None else [load_instrument(n) for n in INSTRUMENTS]
    )
    asker = _Asker(spec, settings, seed)

    async def one_sample(instrument: Instrument, case: PersonaCase, k: int) -> dict[str, Any]:
        items = list(instrument.items())
        got = await asyncio.gather(*(asker.ask(instrument, case, it, k) for it in items))
        answers = [g["answer"] for g in got]
        valid = all(a is not None for a in answers)
        return {
            "game": case.game,
            "persona": case.label,
            "instrument": instrument.name,
            "sample": k,
            "answers": answers,
            "positions": [
                None if a is None else it.options.index(a)
                for a, it in zip(answers, items, strict=True)
            ],
            "value": instrument.score(answers) if valid else None,
            "invalid_items": sum(a is None for a in answers),
            "failures": [g["why"] for g in got if g["why"]],
            "reasks": sum(g["reasks"] for g in got),
            "sources": [src for g in got for src in g["sources"]],
        }

    async def run_all() -> list[dict[str, Any]]:
        jobs = [(tool, case) for case in cases for tool in tools if tool.name in case.targets]
        results = await asyncio.gather(
            *(
                asyncio.gather(*(one_sample(tool, case, k) for k in range(samples)))
                for tool, case in jobs
            )
        )
        rows = []
        for (tool, case), per_sample in zip(jobs, results, strict=True):
            rows.append(summarise(tool, case, list(per_sample)))
            if details is not None:
                details.extend(per_sample)
        flag_overlaps(rows)
        return rows

    return asyncio.run(run_all())


# -- the table -------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def _pct(share: float) -> str:
    return "" if math.isnan(share) else f"{share:.0%}"


def markdown(rows: Sequence[dict[str, Any]], header: Sequence[str] = ()) -> str:
    """The table as Markdown: persona, target, mean [95% CI], categories, verdict, counts."""
    lines = [*header, ""] if header else []
    lines += [
        "| persona | instrument | target | passes in | measured mean | 95% CI "
        "| category (target / measured) | verdict | samples (valid / asked) | invalid items "
        "| re-asks | calls (paid / cached) | first option chosen | overlaps (targets / measured) |",
        "|---|---|---:|---|---:|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    notes = []
    for r in rows:
        mark = ""
        if r.get("note"):
            notes.append(f"{r['game']}/{r['persona']}: {r['note']}.")
            mark = "*" * len(notes)
        ci = (
            f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]" if not math.isnan(r["ci_low"]) else "n/a"
        )
        digits = 1 if r["instrument"] == "svo_slider" else 2
        window = f"[{_fmt(r['pass_low'], digits)}, {_fmt(r['pass_high'], digits)}]"
        overlaps = f"{r.get('window_overlaps') or '-'} / {r.get('ci_overlaps') or '-'}"
        lines.append(
            f"| {r['game']}/{r['persona']} | {r['instrument']} | {_fmt(r['target'])}{mark} "
            f"| {window} | {_fmt(r['mean'], digits)} | {ci if digits == 1 else _ci(r)} "
            f"| {r['target_category']} / {r['measured_category'] or '-'} | {r['verdict']} "
            f"| {r['valid_samples']} / {r['samples']} | {r['invalid_items']} | {r['reasks']} "
            f"| {r['paid_calls']} / {r['cached_calls']} | {_pct(r['first_option_share'])} "
            f"| {overlaps} |"
        )
    if notes:
        lines += ["", *(f"{'*' * (i + 1)} {n}" for i, n in enumerate(notes))]
    flags = [
        f"- {r['game']} {r['instrument']}: {r['persona']} and {other} ({kind})"
        for r in rows
        for kind, key in (
            ("pass windows overlap", "window_overlaps"),
            ("95% CIs overlap", "ci_overlaps"),
        )
        for other in (r.get(key) or "").split(";")
        if other and r["persona"] < other
    ]
    if flags:
        lines += [
            "",
            "Overlap flags (personas with different targets that an instrument does not separate):",
            "",
            *flags,
        ]
    return "\n".join(lines) + "\n"


def _ci(r: dict[str, Any]) -> str:
    if math.isnan(r["ci_low"]):
        return "n/a"
    return f"[{_fmt(r['ci_low'], 2)}, {_fmt(r['ci_high'], 2)}]"


def write_tables(
    rows: Sequence[dict[str, Any]],
    details: Sequence[dict[str, Any]],
    out: Path,
    header: Sequence[str] = (),
) -> list[Path]:
    """``persona_check.csv``, ``persona_check.md``, ``persona_check_samples.csv`` and
    ``persona_check.json`` (the rows and the header) in ``out``."""
    import csv
    import json

    out.mkdir(parents=True, exist_ok=True)
    table = out / "persona_check.csv"
    with table.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r[k], 3) if isinstance(r[k], float) else r[k] for k in COLUMNS})
    per_sample = out / "persona_check_samples.csv"
    with per_sample.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["game", "persona", "instrument", "sample", "value", "positions", "answers", "failures"]
        )
        for d in details:
            w.writerow(
                [
                    d["game"],
                    d["persona"],
                    d["instrument"],
                    d["sample"],
                    "" if d["value"] is None else f"{d['value']:.3f}",
                    " ".join("-" if i is None else str(i + 1) for i in d["positions"]),
                    " | ".join("" if a is None else a for a in d["answers"]),
                    " ".join(d["failures"]),
                ]
            )
    md = out / "persona_check.md"
    md.write_text(markdown(rows, header))
    as_json = out / "persona_check.json"
    clean = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in rows
    ]
    as_json.write_text(json.dumps({"header": list(header), "rows": clean}, indent=1) + "\n")
    return [table, md, per_sample, as_json]


# -- the stored result, per (model, game) --------------------------------------------------------


def store_results(
    label: str,
    rows: Sequence[dict[str, Any]],
    settings: LLMSettings,
    meta: dict[str, Any] | None = None,
) -> list[Path]:
    """Store each game's rows as the check's result for (``label``, game), where the run guard
    finds it (``[llm] require_persona_check``; :func:`mesa_dilemmas.llm.guard.persona_check_path`).

    A check of some personas only updates their rows in the stored result (the newest row per
    persona and instrument wins); the result is ``passed`` when every bundled persona of the
    game has a row for every instrument it has a target for, and every such row passes (at least
    the instrument's ``min_samples`` valid samples, mean within its target)."""
    import time

    from mesa_dilemmas.instruments import persona_cases
    from mesa_dilemmas.llm.guard import store_persona_check, stored_persona_check

    paths = []
    for game in sorted({r["game"] for r in rows}):
        old = stored_persona_check(settings, label, game) or {}
        merged = {(r["persona"], r["instrument"]): r for r in old.get("rows", [])}
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for r in rows:
            if r["game"] == game:
                row = {
                    k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()
                }
                merged[(r["persona"], r["instrument"])] = {**row, **(meta or {}), "checked": stamp}
        expected = [(c.label, name) for c in persona_cases(game) for name in c.targets]
        missing = [f"{p}/{i}" for p, i in expected if (p, i) not in merged]
        failed = [
            f"{p}/{i}"
            for p, i in expected
            if (p, i) in merged and merged[(p, i)]["verdict"] != "pass"
        ]
        why = ""
        if missing:
            why = f"not checked: {', '.join(missing)}"
        elif failed:
            why = f"{len(expected) - len(failed)} of {len(expected)} rows passed; failed: {', '.join(failed)}"
        record = {
            "model": label,
            "game": game,
            "passed": not missing and not failed,
            "why": why,
            "expected": [f"{p}/{i}" for p, i in expected],
            "rows": list(merged.values()),
            "updated": stamp,
        }
        paths.append(store_persona_check(settings, label, game, record))
    return paths


# -- the command -------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """``mesa-dilemmas personas check --llm SPEC [--game G] [--samples N] [--out DIR]``."""
    p = subparsers.add_parser("personas", help=HELP)
    sub = p.add_subparsers(dest="personas_command", required=True)
    c = sub.add_parser(
        "check",
        help="measure each bundled persona with each instrument it has a target for",
        description=DESCRIPTION,
    )
    c.add_argument(
        "--llm", required=True, metavar="SPEC", help="the model: local, openai:MODEL, ..."
    )
    c.add_argument(
        "--game",
        action="append",
        metavar="G",
        help="a game (repeatable; default: every game with personas)",
    )
    c.add_argument(
        "--persona",
        action="append",
        metavar="LABEL",
        help="only this persona (repeatable), e.g. svo30",
    )
    c.add_argument("--samples", type=int, default=30, help="samples per persona (default 30)")
    c.add_argument("--seed", type=int, default=0, help="the run seed of the sample ids (default 0)")
    c.add_argument(
        "--out", metavar="DIR", help="where the tables go (default runs/persona_check-<time>)"
    )
    add_llm_arguments(c)
    c.set_defaults(func=cmd_check)
    ls = sub.add_parser("list", help="the bundled personas, their targets and their words")
    ls.add_argument("--game", action="append", metavar="G", help="a game (repeatable)")
    ls.set_defaults(func=cmd_list)


#: each instrument's one-line description in the table's header
_RULES = {
    "svo_slider": "SVO slider: the six primary items of Murphy, Ackermann & Handgraaf (2011); a "
    "value target passes within 15 degrees",
    "culture_individualism": "Cultural orientation, individualism axis: six statements (our "
    "wording), -2..2; individualist above +0.25, communitarian below -0.25, mixed between",
    "culture_hierarchy": "Cultural orientation, hierarchy axis: six statements (our wording), "
    "-2..2; hierarchical above +0.25, egalitarian below -0.25, mixed between",
    "prosociality": "Prosociality: share of prosocial choices in eight forced-choice allocation "
    "and donation dilemmas (our wording); proself below 0.35, prosocial above 0.65",
}


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every instrument command takes for its model's settings, budget and price
    (read back by :func:`llm_table`)."""
    parser.add_argument(
        "--settings", metavar="TOML", help="a file whose [llm] table sets the LLM layer"
    )
    parser.add_argument(
        "--answer-mode", choices=("native", "tags"), help="override [llm] answer_mode"
    )
    parser.add_argument("--temperature", type=float, help="override [llm] temperature")
    parser.add_argument("--max-calls", type=int, help="budget: most provider calls")
    parser.add_argument("--max-cost", type=float, help="budget: most dollars")
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print what the check would cost (calls, tokens, dollars) and call nothing",
    )


def llm_table(args: argparse.Namespace, **overrides: Any) -> dict[str, Any]:
    """The ``[llm]`` table of ``--settings`` with the options of :func:`add_llm_arguments` and
    ``overrides`` (None: not given) over it (OSError and TOMLDecodeError propagate)."""
    import tomllib

    table: dict[str, Any] = {}
    if args.settings:
        table = tomllib.loads(Path(args.settings).read_text()).get("llm", {})
    given = {"answer_mode": args.answer_mode, "temperature": args.temperature, **overrides}
    table.update({k: v for k, v in given.items() if v is not None})
    budget = dict(table.get("budget", {}))
    if args.max_calls is not None:
        budget["max_calls"] = args.max_calls
    if args.max_cost is not None:
        budget["max_cost_usd"] = args.max_cost
    if budget:
        table["budget"] = budget
    return table


def usage_error(message: str) -> int:
    """Say a bad argument in one line on stderr; the exit code of a usage error (2)."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def recorded_run[T](
    settings: Any, out: Path, work: Callable[[], T]
) -> tuple[tuple[T, dict[str, Any]] | None, int]:
    """Run an instrument's calls (``work``) in an LLM session recorded in ``out``: its result and
    the session's accounting with exit code 0; or None and the exit code of a stop, said in one
    line on stderr -- 3 for a budget reached or a provider down (a rerun continues from the
    cache), 2 for a replay miss or a model that cannot be used."""
    from mesa_dilemmas import llm
    from mesa_dilemmas.llm.guard import RunGuard

    guard = RunGuard(frozenset(), settings)  # its session: recorded, finished however it ends
    try:
        with guard.session(out, resume=False):
            result = work()
    except llm.BudgetExceeded as exc:
        print(
            f"stopped: {exc}; rerun with a larger budget: answered calls come from the cache",
            file=sys.stderr,
        )
        return None, 3
    except (llm.ProviderRejected, llm.CallFailed) as exc:  # a provider down after its retries
        print(f"stopped: {exc}; a rerun continues from the cache", file=sys.stderr)
        return None, 3
    except (llm.ReplayMiss, llm.LLMConfigError) as exc:  # a replay miss; a variant too far
        return None, usage_error(str(exc))
    assert guard.summary is not None
    return (result, guard.summary), 0


def _cases(games: Sequence[str] | None, personas: Sequence[str] | None) -> list[PersonaCase]:
    from mesa_dilemmas.instruments import persona_cases, persona_games

    cases = [c for g in (games or persona_games()) for c in persona_cases(g)]
    if personas:
        unknown = set(personas) - {c.label for c in cases}
        if unknown:
            known = ", ".join(c.label for c in cases)
            raise LookupError(f"--persona: unknown {', '.join(sorted(unknown))}; known: {known}")
        cases = [c for c in cases if c.label in personas]
    return cases


def cmd_list(args: argparse.Namespace) -> int:
    try:
        cases = _cases(args.game, None)
    except LookupError as exc:
        return usage_error(str(exc))
    for c in cases:
        targets = ", ".join(f"{k} = {c.target(k)}" for k in c.targets) or "no target"
        print(f"{c.game}/{c.label}: {targets}\n    {c.prompt}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import json
    import time
    import tomllib

    from mesa_dilemmas import llm
    from mesa_dilemmas.dilemmas.registry import UnknownGame
    from mesa_dilemmas.files import out_dir_unusable

    if args.samples < 1:
        return usage_error(f"--samples: must be at least 1 (got {args.samples})")
    try:
        table = llm_table(args)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return usage_error(f"--settings {args.settings}: {exc}")
    try:
        settings = llm.LLMSettings.from_table(table)
        if not args.estimate:  # a price needs no key
            llm.preflight([args.llm], settings)
    except (llm.LLMConfigError, ValueError) as exc:
        return usage_error(f"--llm: {str(exc).splitlines()[0]}")
    try:
        cases = _cases(args.game, args.persona)
    except (LookupError, UnknownGame) as exc:
        return usage_error(str(exc))
    if not cases:
        return usage_error("no persona to check")
    if args.estimate:
        from mesa_dilemmas.llm.estimate import priced_dry

        def play(dry: LLMSettings) -> None:
            check(args.llm, cases, samples=args.samples, seed=args.seed, settings=dry, dry_ok=True)

        what = f"{len(cases)} personas x {args.samples} samples"
        print(priced_dry(play, settings, what))
        return 0
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = Path(args.out or f"runs/persona_check-{stamp}")
    if problem := out_dir_unusable(out):
        return usage_error(f"--out {str(out)!r}: {problem}")
    details: list[dict[str, Any]] = []
    done, code = recorded_run(
        settings,
        out,
        lambda: check(
            args.llm,
            cases,
            samples=args.samples,
            seed=args.seed,
            settings=settings,
            details=details,
        ),
    )
    if done is None:
        return code
    rows, accounting = done
    from mesa_dilemmas.instruments import load_instrument
    from mesa_dilemmas.llm.checks import resolve

    label = resolve(args.llm, settings).label
    used = sorted({r["instrument"] for r in rows})
    rules = " ".join(f"{_RULES.get(name, load_instrument(name).title)}." for name in used)
    header = [
        f"# Persona manipulation check: {label}",
        "",
        f"Model `{label}`, {args.samples} samples per persona, seed {args.seed}, answer mode "
        f"{settings.answer_mode}, temperature {settings.temperature:g}, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}. {rules} A category target passes when the "
        "mean measures in that category. 95% CI: t-interval over samples. "
        f"LLM calls: {accounting.get('provider_calls', 0)} to the provider, "
        f"{accounting.get('cache_hits', 0)} from the cache.",
    ]
    write_tables(rows, details, out, header)
    meta = {
        "samples_asked": args.samples,
        "seed": args.seed,
        "answer_mode": settings.answer_mode,
        "temperature": settings.temperature,
        "tables": str(out),
    }
    stored = store_results(label, rows, settings, meta)
    print(markdown(rows), end="")
    for path in stored:
        record = json.loads(path.read_text())
        verdict = "passed" if record["passed"] else f"not passed ({record['why']})"
        print(f"stored: {label} / {record['game']}: {verdict} -> {path}")
    print(
        f"llm: {accounting.get('provider_calls', 0)} provider calls, "
        f"{accounting.get('cache_hits', 0)} from the cache -> {out}"
    )
    return 0
