"""``mesa-dilemmas reproduce``: every bundled paper experiment that needs no paid provider, run
and judged claim by claim, into one report (``reproduction.md``).

An :class:`Experiment` is a bundled scenario with the sizes of each mode (``tiny`` for the
test of the report's structure, ``quick`` for about ten minutes on two cores over three
seed streams, ``full`` for the scenario as bundled over five, about 25); a :class:`Claim` is
one statement of a paper, paraphrased with its section or figure, and a function that reads the experiment's run directory and returns our
number, its uncertainty, the test used and a verdict.  Each game brings its own claims: a
module registered in the entry point group ``mesa_dilemmas.claims`` with ``EXPERIMENTS``,
``CLAIMS`` and, optionally, ``SECTIONS`` (functions that add a section to the report),
``PAPERS`` (paper id -> the title the report gives it), ``LLM_CLAIMS`` (claims about LLM
players: listed as not run here, each with what one run of its scenario would cost on the
paper's model, from ``mesa-dilemmas estimate``) and ``CALIBRATION_TARGETS`` (the game's
calibration targets file: its claims are then checked at the -25% / +25% neighbours of the
defaults in every open parameter, :mod:`mesa_dilemmas.scenarios.robustness`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mesa_dilemmas.analysis.verdicts import (
    Claim,
    Experiment,
    LLMClaim,
    Mode,
    Section,
    SectionFn,
    Verdict,
)
from mesa_dilemmas.files import out_dir_problem, write_text_atomic

if TYPE_CHECKING:
    from mesa_dilemmas.analysis.register import Register


@dataclass
class Outcome:
    claim: Claim
    verdict: Verdict
    run_dir: Path | None
    #: the paper's number or finding beside ours (claims run on the authors' published sets)
    paper: str = ""
    #: the verdict on each of the report's k seed streams (the first is ``verdict``'s)
    streams: list[Verdict] = field(default_factory=list)
    #: the claim's key in the claims register (default: ``claim.key``; a published run's
    #: verdicts are keyed per game and model, ``analysis.register.published_key``)
    register_key: str = ""

    @property
    def agreement(self) -> str:
        """In how many of the k streams the held-out verdict holds (``3/5``; "" for one)."""
        if len(self.streams) < 2:
            return ""
        same = sum(v.status == self.verdict.status for v in self.streams)
        return f"{same}/{len(self.streams)}"


@dataclass
class Report:
    mode: Mode
    outcomes: list[Outcome] = field(default_factory=list)
    runs: dict[str, tuple[Path, list[str], float]] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    sections: list[Section] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    #: experiment -> why it could not run (one line; ``tolerate`` runs only)
    failed: dict[str, str] = field(default_factory=dict)
    #: replaces the report's paragraph on what runs (a :class:`ReproduceSource`'s run)
    intro: list[str] = field(default_factory=list)
    #: claims about LLM players, not run here, each with the estimate of one run (or why none)
    llm: list[tuple[LLMClaim, str]] = field(default_factory=list)
    #: the independent seed streams every judged claim ran on (1..k)
    streams: int = 1
    #: lines a :class:`ReproduceSource` adds after the sections (what its inputs flagged)
    flagged: list[str] = field(default_factory=list)
    #: what one dry run of a scenario costs on a model, by (scenario, model): the register's
    #: LLM rows and the LLM claims (recomputed on every invocation)
    prices: dict[tuple[str, str], str] = field(default_factory=dict)
    #: the papers whose claims register the report prints (None: every registered one)
    register_papers: set[str] | None = None


def registered_claims() -> tuple[list[Experiment], list[Claim], list[SectionFn]]:
    """Every registered game's experiments, claims and extra sections (entry point group
    ``mesa_dilemmas.claims``), in the order of the papers and then of the games' names."""
    from mesa_dilemmas.dilemmas.registry import CLAIMS, load_extensions

    experiments: list[Experiment] = []
    claims: list[Claim] = []
    sections: list[SectionFn] = []
    for module in load_extensions(CLAIMS).values():
        experiments += list(getattr(module, "EXPERIMENTS", []))
        claims += list(getattr(module, "CLAIMS", []))
        sections += list(getattr(module, "SECTIONS", []))
    claims.sort(key=lambda c: -int(c.paper) if c.paper.isdigit() else 0)  # stable within a paper
    return experiments, claims, sections


def registered_extras() -> tuple[list[LLMClaim], list[tuple[str, list[Claim], Path]]]:
    """The games' LLM claims, and per game with a calibration targets file: (game, its claims,
    the file)."""
    from mesa_dilemmas.dilemmas.registry import CLAIMS, load_extensions

    llm: list[LLMClaim] = []
    calibrated: list[tuple[str, list[Claim], Path]] = []
    for module in load_extensions(CLAIMS).values():
        llm += list(getattr(module, "LLM_CLAIMS", []))
        targets = getattr(module, "CALIBRATION_TARGETS", None)
        experiments = list(getattr(module, "EXPERIMENTS", []))
        if targets is not None and experiments:
            game = experiments[0].scenario.split("/")[0]
            calibrated.append((game, list(getattr(module, "CLAIMS", [])), Path(targets)))
    return llm, calibrated


def price_runs(
    runs: Iterable[tuple[str, str, Sequence[str]]], mode: Mode
) -> dict[tuple[str, str], str]:
    """What one run of each ``(scenario, model, overrides)`` would cost: the estimate command's
    dry run on today's prompts and prices, recomputed on every invocation (tiny mode only names
    the command).  A model without a list price says so instead of a dollar figure."""
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.size import llm_estimate

    out: dict[tuple[str, str], str] = {}
    for scenario_name, model, overrides in runs:
        key = (scenario_name, model)
        if key in out:
            continue
        command = (
            f"`mesa-dilemmas estimate {scenario_name} "
            + " ".join(f"--set '{o}'" for o in overrides)
            + "`"
        )
        if mode == "tiny":
            out[key] = f"cost: {command}"
            continue
        try:
            scenario, _ = load_scenario(scenario_name, list(overrides))
            found = llm_estimate(scenario)
        except Exception as exc:  # noqa: BLE001 - an estimate is advice; say why it is missing
            out[key] = f"no estimate ({type(exc).__name__}: {exc})"
            continue
        if found is None:
            out[key] = "no estimate (no LLM calls found)"
            continue
        calls = sum(r.tally.calls for r in found.rows)
        if found.list_usd is None:
            out[key] = f"one run of `{scenario_name}`: {calls:,} calls, unpriced ({command})"
            continue
        batch = sum(r.batch_usd or 0.0 for r in found.rows)
        out[key] = (
            f"one run of `{scenario_name}`: about ${found.list_usd:,.2f} at list prices "
            f"(${batch:,.2f} batch), {calls:,} calls ({command})"
        )
    return out


def estimate_llm_claims(
    claims: Sequence[LLMClaim], mode: Mode, prices: dict[tuple[str, str], str] | None = None
) -> list[tuple[LLMClaim, str]]:
    """Each LLM claim with what one run of its scenario would cost on each model the paper
    states it for (:func:`price_runs`; ``prices``: runs priced already)."""
    prices = dict(prices or {})
    prices.update(
        price_runs(
            (
                (c.scenario, m, c.estimate_overrides(m))
                for c in claims
                for m in c.priced
                if (c.scenario, m) not in prices
            ),
            mode,
        )
    )
    return [(c, "; ".join(f"{m}: {prices[(c.scenario, m)]}" for m in c.priced)) for c in claims]


def robustness_sections(
    claims: Sequence[Claim], mode: Mode, out: Path, processes: int, progress: bool
) -> list[Section]:
    """The robustness check of every game with a calibration targets file, over its claims
    among ``claims``."""
    from mesa_dilemmas.scenarios.claim_points import ClaimSet
    from mesa_dilemmas.scenarios.robustness import robustness_section

    experiments, _, _ = registered_claims()
    by_key = {e.key: e for e in experiments}
    sections = []
    for game, game_claims, targets in registered_extras()[1]:
        chosen = tuple(c for c in game_claims if c in claims)
        section = robustness_section(
            ClaimSet(chosen, by_key),
            game,
            targets,
            mode=mode,
            out=out,
            processes=processes,
            progress=progress,
        )
        if section is not None:
            sections.append(section)
    return sections


def registered_papers() -> dict[str, str]:
    """Paper id -> title, from the registered claim modules' ``PAPERS``, in the papers' order."""
    from mesa_dilemmas.dilemmas.registry import CLAIMS, load_extensions

    papers: dict[str, str] = {}
    for module in load_extensions(CLAIMS).values():
        papers.update(getattr(module, "PAPERS", {}))
    return dict(sorted(papers.items()))


def finished_run(run_dir: Path, scenario: str, mode: Mode) -> float | None:
    """The wall time of a run a previous ``reproduce --MODE`` finished in ``run_dir``, if any.

    A run counts as finished when its manifest (written last) is there; it must be of the
    same scenario and mode, so a resumed report never mixes sizes."""
    manifest = run_dir / "manifest.json"
    if not manifest.is_file():
        return None
    from mesa_dilemmas.scenarios.config import ConfigError

    try:
        saved = json.loads(manifest.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--resume: {manifest} cannot be read ({exc})") from None
    command = saved.get("command", [])
    modes = [m for m in ("tiny", "quick", "full") if f"--{m}" in command] or ["quick"]
    if saved.get("scenario") != scenario or modes[0] != mode:
        raise ConfigError(
            f"--resume: {run_dir} holds a --{modes[0]} run of {saved.get('scenario')}, "
            f"not a --{mode} run of {scenario}"
        )
    return float(saved.get("wall_time_s", 0.0))


#: the report's seed streams per mode (``reproduce --streams K`` overrides)
STREAMS: dict[str, int] = {"tiny": 1, "quick": 3, "full": 5}


def stream_dir(out: Path, key: str, stream: int) -> Path:
    """Where stream ``stream`` of an experiment runs: the first in ``runs/KEY`` (its figures
    are the report's), the others in ``runs/streams/KEY-sN``."""
    return out / "runs" / key if stream == 1 else out / "runs" / "streams" / f"{key}-s{stream}"


def stream_overrides(exp: Experiment, overrides: Sequence[str], stream: int) -> list[str]:
    """The experiment's overrides with the seed of seed stream ``stream`` of its scenario."""
    from mesa_dilemmas.scenarios.batch import stream_seed
    from mesa_dilemmas.scenarios.claim_points import scenario_seed

    base = scenario_seed(exp.scenario, [o for o in overrides if o.startswith("seed=")])
    return [*overrides, f"seed={stream_seed(base, stream)}"]


def _run_one(
    exp: Experiment,
    run_dir: Path,
    overrides: list[str],
    mode: Mode,
    processes: int,
    progress: bool,
    report: Report,
    label: str,
) -> float | None:
    """Run (or reuse) one stream of an experiment; its wall time, None when reused."""
    from mesa_dilemmas.scenarios.runner import run_scenario

    finished = finished_run(run_dir, exp.scenario, mode)
    if finished is not None:  # --resume: this run finished in an earlier invocation
        if progress:
            print(f"reproduce: {label} finished earlier ({finished:.0f} s), reused", flush=True)
        report.reused.append(label)
        return finished
    started = time.perf_counter()
    if progress:
        print(f"reproduce: {label} ({exp.scenario} {' '.join(overrides)})", flush=True)
    run_scenario(
        exp.scenario,
        out_dir=None if run_dir.exists() else run_dir,
        resume=run_dir if run_dir.exists() else None,
        overrides=overrides,
        progress=False,
        processes=processes,
    )
    return time.perf_counter() - started


def judge(claim: Claim, run_dir: Path) -> Verdict:
    """A claim's verdict on one run: its judge's, made "by construction" when the claim names
    the parameters that encode it (never counted as reproduced); a judge that raises is
    reported as not run, with why."""
    from mesa_dilemmas.analysis.verdicts import apply_construction

    try:
        with expected_constant_input():
            verdict = claim.judge(run_dir)
    except Exception as exc:  # noqa: BLE001 - a claim that cannot be judged is reported, not fatal
        return Verdict(f"could not be evaluated: {type(exc).__name__}: {exc}", "-", "not run")
    return apply_construction(claim, verdict)


def run_experiments(
    experiments: Sequence[Experiment],
    claims: Sequence[Claim],
    mode: Mode,
    out: Path,
    progress: bool,
    processes: int = 1,
    sections: Sequence[SectionFn] = (),
    tolerate: bool = False,
    robustness: bool = False,
    streams: int = 1,
) -> Report:
    """Run every experiment some claim needs on ``streams`` independent seed streams (stream
    s of a scenario: :func:`~mesa_dilemmas.scenarios.batch.stream_seed`, never the seeds a
    calibration or the docs use), judge every claim on each (the first stream's verdict is
    the held-out verdict; the others say how often it holds), then add the games' extra
    sections (a game's robustness check, say).  With ``tolerate`` an experiment that stops (a
    strategy set whose strategies all fail, say) is reported with its one-line reason and the
    others still run."""
    from mesa_dilemmas.scenarios.config import ConfigError

    report = Report(mode, streams=streams)
    needed = {c.experiment for c in claims}
    stream_runs: dict[str, list[Path]] = {}
    for exp in experiments:
        if exp.key not in needed:
            continue
        overrides = exp.overrides(mode)
        dirs: list[Path] = []
        wall = 0.0
        try:
            for stream in range(1, streams + 1):
                run_dir = stream_dir(out, exp.key, stream)
                label = exp.key if stream == 1 else f"{exp.key} stream {stream}"
                took = _run_one(
                    exp,
                    run_dir,
                    stream_overrides(exp, overrides, stream),
                    mode,
                    processes,
                    progress,
                    report,
                    label,
                )
                wall += took or 0.0
                dirs.append(run_dir)
        except (ConfigError, ValueError) as exc:
            if not tolerate:
                raise
            report.failed[exp.key] = " ".join(str(exc).split())
            if progress:
                print(f"reproduce: {exp.key} stopped: {report.failed[exp.key]}", flush=True)
            continue
        report.runs[exp.key] = (dirs[0], overrides, wall)
        stream_runs[exp.key] = dirs
    for claim in claims:
        run = report.runs.get(claim.experiment)
        if run is None:
            why = report.failed.get(claim.experiment)
            verdict = (
                Verdict(claim.note or "-", "not judged", "not run")
                if not claim.experiment
                else Verdict(f"stopped: {why}" if why else "-", "-", "not run")
            )
            report.outcomes.append(Outcome(claim, verdict, None))
            continue
        verdicts = [judge(claim, d) for d in stream_runs[claim.experiment]]
        report.outcomes.append(Outcome(claim, verdicts[0], run[0], streams=verdicts))
    made = []
    for make in sections:
        with expected_constant_input():
            made.append(
                make(claims=claims, mode=mode, out=out, processes=processes, progress=progress)
            )
    if robustness:
        with expected_constant_input():
            made += robustness_sections(claims, mode, out, processes, progress)
    for section in made:
        if section is not None:
            report.sections.append(section)
            if section.reused:
                report.reused.append(section.name)
    return report


def draw_figures(report: Report, out: Path) -> dict[str, list[str]]:
    """Each experiment's scenario figures, drawn into its run directory (paths relative to out)."""
    from mesa_dilemmas.viz.figures import render_figures

    drawn: dict[str, list[str]] = {}
    for key, (run_dir, _, _) in report.runs.items():
        try:
            paths = render_figures(run_dir)
        except Exception as exc:  # noqa: BLE001 - a figure that fails is noted, the report stands
            drawn[key] = [f"(figure failed: {exc})"]
            continue
        drawn[key] = [str(Path(p).relative_to(out)) for p in paths]
    return drawn


def write_report(report: Report, out: Path, figures: dict[str, list[str]]) -> Path:
    """``out/reproduction.md`` and ``out/reproduction.json``."""
    counts = pd.Series([o.verdict.status for o in report.outcomes]).value_counts().to_dict()
    if report.llm:
        counts["not run here (LLM players)"] = len(report.llm)
    lines = [
        "# Reproduction report",
        "",
        f"Generated by `mesa-dilemmas reproduce --{report.mode}` on "
        f"{datetime.fromtimestamp(report.started, UTC).strftime('%Y-%m-%d %H:%M UTC')} "
        f"in {time.time() - report.started:.0f} s"
        + (
            f" (reusing {', '.join(report.reused)}, finished by an earlier invocation; "
            "their wall times are listed below)."
            if report.reused
            else "."
        )
        + f" The runs and checks took {_wall_text(_total_wall(report))} of wall time in all.",
        "",
        _mode_note(report.mode),
        "",
        *_streams_note(report),
        "Verdicts: " + ", ".join(f"**{k}** {v}" for k, v in sorted(counts.items())) + ".",
        "",
        "Claims are the papers' findings in our words, with the section or figure they come from.",
        "A verdict is **reproduced** when the effect is significant at 5% in the paper's "
        "direction over the range the paper states it for; **not reproduced** when it is "
        "significant the other way, or when the test finds nothing although it had 80% power "
        "to see the paper's effect (the power is stated); **inconclusive** when it finds "
        "nothing with less power (with the replications that would be needed); **by "
        "construction** when the players were written or tuned to show it (never counted as "
        "reproduced; the parameters are named below); **not testable** when the claim cannot "
        "fail here (every run tied at the round cap, a ceiling).",
        *(
            report.intro
            or [
                "Only experiments that need no paid provider run here: games played by rule "
                "players and",
                "by the bundled reference strategy sets. Claims about LLM players are listed "
                "below each paper's",
                "table as not run here, each with the scenario that tests it and what one run "
                "of it would cost",
                "on the paper's model (`mesa-dilemmas estimate`, list and batch prices).",
            ]
        ),
        "",
    ]
    registers = _registers(report)
    if registers:
        from mesa_dilemmas.analysis.register import intro_line

        lines += [intro_line(registers) + " The whole register is at the end of this report.", ""]
    papers = registered_papers()
    for paper in sorted({*papers, *(o.claim.paper for o in report.outcomes)}):
        title = papers.get(paper, "")
        outcomes = [o for o in report.outcomes if o.claim.paper == paper]
        llm = [(c, cost) for c, cost in report.llm if c.paper == paper]
        if not outcomes:
            continue
        beside = any(o.paper for o in outcomes)
        several = report.streams > 1
        lines += [
            f"## Paper {paper}" + (f": {title}" if title else ""),
            "",
            "| where | claim | "
            + ("paper | " if beside else "")
            + "ours | test | "
            + (f"streams agreeing (of {report.streams}) | " if several else "")
            + "verdict |",
            "|---|---|---|---|---|" + ("---|" if beside else "") + ("---|" if several else ""),
        ]
        for o in outcomes:
            v = o.verdict
            ours = v.ours + (f" ({v.uncertainty})" if v.uncertainty else "")
            said = f"{o.paper or '-'} | " if beside else ""
            test = v.test + (
                f"; as judged: {v.judged}" if v.status == "by construction" and v.judged else ""
            )
            agree = f"{o.agreement or '-'} | " if several else ""
            lines.append(
                f"| {o.claim.where} | {o.claim.statement} | {said}{ours} | {test} | {agree}"
                f"**{v.status}** |"
            )
        lines.append("")
        if llm:
            lines += [
                "Claims about LLM players (not run here):",
                "",
                "| where | claim | scenario | what one run would cost |",
                "|---|---|---|---|",
            ]
            lines += [f"| {c.where} | {c.statement} | `{c.scenario}` | {cost} |" for c, cost in llm]
            lines.append("")
    for section in report.sections:
        lines += section.lines
    lines += report.flagged
    lines += _notes_section(report)
    lines += _register_section(report, registers)
    lines += ["## Runs", "", "| experiment | sizes | wall time | figures |", "|---|---|---|---|"]
    for key, (_run_dir, overrides, wall) in report.runs.items():
        figs = ", ".join(
            f"[{Path(f).name}]({f})" if not f.startswith("(") else f for f in figures.get(key, [])
        )
        lines.append(f"| `{key}` | {' '.join(overrides) or 'as bundled'} | {wall:.0f} s | {figs} |")
    lines.append("")
    path = out / "reproduction.md"
    write_text_atomic(path, "\n".join(lines))
    write_text_atomic(
        out / "reproduction.json",
        json.dumps(
            {
                "mode": report.mode,
                "streams": report.streams,
                "claims": [
                    {
                        "paper": o.claim.paper,
                        "where": o.claim.where,
                        "statement": o.claim.statement,
                        "experiment": o.claim.experiment,
                        "ours": o.verdict.ours,
                        "uncertainty": o.verdict.uncertainty,
                        "test": o.verdict.test,
                        "status": o.verdict.status,
                        **({"judged": o.verdict.judged} if o.verdict.judged else {}),
                        **(
                            {"by_construction": list(o.claim.by_construction)}
                            if o.claim.by_construction
                            else {}
                        ),
                        "streams": [v.status for v in o.streams],
                        **({"paper_value": o.paper} if o.paper else {}),
                    }
                    for o in report.outcomes
                ],
                "runs": {
                    k: {"dir": str(v[0]), "overrides": v[1], "wall_s": round(v[2], 1)}
                    for k, v in report.runs.items()
                },
                "stopped": report.failed,
                "llm_claims": [
                    {
                        "paper": c.paper,
                        "where": c.where,
                        "statement": c.statement,
                        "scenario": c.scenario,
                        "model": c.model,
                        "status": "not run here",
                        "cost": cost,
                    }
                    for c, cost in report.llm
                ],
                "sections": {
                    s.name: {"wall_s": round(s.wall, 1), "reused": s.reused}
                    for s in report.sections
                },
            },
            indent=2,
        ),
    )
    return path


def _registers(report: Report) -> list[Register]:
    """The claims registers the report prints (every registered game's, or the papers the
    report is about)."""
    from mesa_dilemmas.analysis.register import load_registers

    found = load_registers()
    if report.register_papers is not None:
        found = [r for r in found if r.paper in report.register_papers]
    return found


def _register_section(report: Report, registers: Sequence[Register]) -> list[str]:
    """Every finding of the papers, one row each, with the verdicts this report computed, the
    prices of the LLM rows and the reasons of the rest (:mod:`~.analysis.register`)."""
    from mesa_dilemmas.analysis.register import claims_modules, missing_registers, render_register

    if not registers:
        return []
    verdicts = {(o.register_key or o.claim.key): o.verdict for o in report.outcomes if o.run_dir}
    claims = {o.claim.key: o.claim for o in report.outcomes}
    missing = [] if report.register_papers else missing_registers(claims_modules())
    return render_register(registers, verdicts, report.prices, claims, missing)


def _wall_text(seconds: float) -> str:
    """``42 s``, ``12.5 min`` or ``1.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _total_wall(report: Report) -> float:
    return sum(wall for _, _, wall in report.runs.values()) + sum(s.wall for s in report.sections)


def _notes_section(report: Report) -> list[str]:
    """Why each claim that was not reproduced came out as it did (its ``note``), and the
    parameters that encode each claim decided by construction."""
    notes = [
        o
        for o in report.outcomes
        if o.claim.experiment
        and (
            o.verdict.status not in ("reproduced", "not run")
            or any(v.status != o.verdict.status for v in o.streams)
        )
    ]
    if not notes:
        return []
    lines = ["## Where a claim is not reproduced (on some seed stream), and why", ""]
    for o in notes:
        why = o.claim.note or "no explanation recorded yet."
        if o.agreement and o.verdict.status == "reproduced":
            why = f"reproduced on {o.agreement} seed streams only: {why}"
        if o.verdict.status == "by construction":
            why = (
                "the rule players encode it ("
                + "; ".join(o.claim.by_construction)
                + "), so it is not evidence for the paper's finding"
                + (f"; {o.claim.note}" if o.claim.note else ".")
            )
        lines += [f"- **{o.claim.where}, {o.claim.statement}** ({o.verdict.status}): {why}"]
    return [*lines, ""]


def _streams_note(report: Report) -> list[str]:
    if report.streams < 2:
        return []
    return [
        f"Every judged claim ran on {report.streams} independent seed streams (stream s of a "
        "scenario runs on the seed `SeedSequence((scenario seed, s))` draws, never the seeds "
        "a calibration or the docs use). The verdict shown is stream 1's, held out from the "
        "calibration; the last column says on how many of the streams the same verdict came "
        "out.",
        "",
    ]


def _mode_note(mode: Mode) -> str:
    if mode == "full":
        return "Mode **full**: every experiment at the size its bundled scenario has."
    if mode == "quick":
        return (
            "Mode **quick**: reduced replications and samples (listed per run below), so the "
            "uncertainties are wider than a full run's; the verdicts use the same tests."
        )
    return "Mode **tiny**: a structural check of the report only; the numbers mean nothing."


# -- other inputs: the games' reproduce sources --------------------------------------------------


@dataclass(frozen=True)
class ReproduceSource:
    """Another input ``reproduce`` judges claims on instead of the bundled experiments, given by
    its own option (``reproduce --OPTION VALUE``; entry point group
    ``mesa_dilemmas.reproduce_sources``).

    ``find(value, only)`` reads the input before anything is written (a one-line
    :class:`ConfigError` when nothing there can be used) and returns what it found;
    ``run(value, found, mode=, out=, processes=, progress=, only=, streams=)`` runs and judges
    its claims into a :class:`Report`.  Its claims run on one seed stream unless ``--streams``
    says more."""

    option: str
    metavar: str
    help: str
    find: Callable[[Path, set[str]], Any]
    run: Callable[..., Report]

    @property
    def dest(self) -> str:
        return self.option.lstrip("-").replace("-", "_")


def registered_sources() -> list[ReproduceSource]:
    """Every registered :class:`ReproduceSource`, by entry point name."""
    from mesa_dilemmas.dilemmas.registry import REPRODUCE_SOURCES, load_extensions

    return list(load_extensions(REPRODUCE_SOURCES).values())


# -- command line ------------------------------------------------------------------------------


@contextlib.contextmanager
def expected_constant_input() -> Iterator[None]:
    """Silence scipy's warnings about a constant input (a correlation of a column that does not
    vary, as at ``--tiny`` sizes): the claim reports that correlation as n/a.  The warning
    names the caller's module, so a filter on ``module="scipy"`` does not catch it."""
    from scipy import stats

    kinds = [getattr(stats, n, None) for n in ("ConstantInputWarning", "NearConstantInputWarning")]
    with warnings.catch_warnings():
        for kind in kinds:
            if kind is not None:
                warnings.simplefilter("ignore", kind)
        yield


def cmd_reproduce(args: object) -> int:
    from mesa_dilemmas.scenarios.config import ConfigError

    mode: Mode = "full" if args.full else "tiny" if args.tiny else "quick"  # type: ignore[attr-defined]
    out = Path(
        args.out or f"runs/reproduction-{mode}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    )  # type: ignore[attr-defined]
    if args.resume:  # type: ignore[attr-defined]
        out = Path(args.resume)  # type: ignore[attr-defined]
        if not (out / "runs").is_dir():
            raise ConfigError(f"--resume {out}: not a reproduction directory (no runs/)")
    elif problem := out_dir_problem(args.out if args.out is not None else out):  # type: ignore[attr-defined]
        raise ConfigError(f"--out {args.out if args.out is not None else out!r}: {problem}")  # type: ignore[attr-defined]
    elif out.exists() and any(out.iterdir()):
        raise ConfigError(f"--out {out}: directory exists and is not empty (or use --resume)")
    cores = os.cpu_count() or 1
    if not 1 <= args.processes <= cores:  # type: ignore[attr-defined]
        raise ConfigError(f"--processes: must be between 1 and {cores} (this machine's cores)")
    only = set(args.only or [])  # type: ignore[attr-defined]
    given = [(s, getattr(args, s.dest, None)) for s in registered_sources()]
    given = [(s, Path(v)) for s, v in given if v is not None]
    if len(given) > 1:
        raise ConfigError(f"{given[0][0].option} and {given[1][0].option}: give one of them")
    source = given[0] if given else None
    from mesa_dilemmas.scenarios.batch import REPORT_STREAMS

    streams = getattr(args, "streams", None)
    if streams is None:
        streams = 1 if source is not None else STREAMS[mode]
    if not 1 <= streams <= len(REPORT_STREAMS):
        raise ConfigError(f"--streams: must be between 1 and {len(REPORT_STREAMS)}")
    if source is not None:
        found = source[0].find(source[1], only)  # checked before anything is written
        claims: list[Claim] = []
    else:
        EXPERIMENTS, CLAIMS, SECTIONS = registered_claims()  # noqa: N806
        claims = [c for c in CLAIMS if not only or c.experiment in only or c.paper in only]
        if not claims:
            raise ConfigError(f"--only: no claim matches {sorted(only)}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create it: {exc.strerror or exc}") from None
    if source is not None:
        report = source[0].run(
            source[1],
            found,
            mode=mode,
            out=out,
            processes=args.processes,  # type: ignore[attr-defined]
            progress=not args.no_progress,  # type: ignore[attr-defined]
            only=only,
            streams=streams,
        )
    else:
        report = run_experiments(
            EXPERIMENTS,
            claims,
            mode,
            out,
            progress=not args.no_progress,  # type: ignore[attr-defined]
            processes=args.processes,  # type: ignore[attr-defined]
            sections=SECTIONS,
            robustness=True,
            streams=streams,
        )
        from mesa_dilemmas.analysis.register import load_registers, priced_runs

        registers = [r for r in load_registers() if not only or r.paper in only]
        report.register_papers = {r.paper for r in registers} if only else None
        report.prices = price_runs(
            ((p.scenario, p.model, p.overrides) for p in priced_runs(registers)), mode
        )
        llm_claims, _ = registered_extras()
        report.llm = estimate_llm_claims(
            [c for c in llm_claims if not only or c.paper in only], mode, report.prices
        )
    figures = {} if mode == "tiny" else draw_figures(report, out)
    path = write_report(report, out, figures)
    counts = pd.Series([o.verdict.status for o in report.outcomes]).value_counts().to_dict()
    print(f"{path}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


def register(sub: object) -> None:
    p = sub.add_parser(  # type: ignore[attr-defined]
        "reproduce",
        help="run every bundled paper experiment that needs no paid provider; write reproduction.md",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--quick",
        action="store_true",
        help="reduced sizes on 3 seed streams, about 8-12 minutes on 2 cores (default)",
    )
    size.add_argument(
        "--full",
        action="store_true",
        help="every experiment at its bundled size on 5 seed streams (about 25 minutes on 2 "
        "cores; --resume continues a killed one)",
    )
    size.add_argument(
        "--tiny", action="store_true", help="a structural smoke run (seconds; numbers mean nothing)"
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--out", help="report directory (default runs/reproduction-<mode>-<timestamp>)"
    )
    where.add_argument(
        "--resume",
        metavar="DIR",
        help="continue a killed reproduction: runs it finished are reused, a partial run resumes",
    )
    p.add_argument(
        "--only",
        nargs="*",
        metavar="KEY",
        help="only these experiments (e.g. shock pom_svo) or papers (003)",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="worker processes for each run and the robustness check (results do not change)",
    )
    sources = registered_sources()
    for source in sources:  # the games' other inputs, each its own option
        p.add_argument(source.option, metavar=source.metavar, help=source.help)
    p.add_argument(
        "--streams",
        type=int,
        default=None,
        metavar="K",
        help="run every judged claim on K independent seed streams and say in how many its "
        "verdict holds (default: 1 tiny, 3 quick, 5 full"
        + "".join(f"; 1 with {s.option}" for s in sources)
        + ")",
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_reproduce)
