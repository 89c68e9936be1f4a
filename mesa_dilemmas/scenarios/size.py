"""How big a run is, said before it starts.

A scenario of the default experiment is ``cells x replications`` model runs. From
``LARGE_RUNS`` runs on, the runner prints the number of runs and an estimate of
time and disk before anything starts; the estimate comes from one model run each of
the scenario's first and last grid cells, timed and measured here (rule-based games only:
an LLM game's time is the provider's).  Above ``CONFIRM_RUNS`` runs, or an
estimated ``CONFIRM_SECONDS`` of work or ``CONFIRM_BYTES`` of output, the run
starts only when confirmed (``--yes``).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.scenarios.config import ConfigError, Scenario

LARGE_RUNS = 1_000
CONFIRM_RUNS = 100_000
CONFIRM_SECONDS = 3600.0
CONFIRM_BYTES = 2 * 1024**3


@dataclass
class RunSize:
    runs: int
    seconds: float | None = None  # estimated wall time on the run's processes
    bytes: float | None = None  # estimated size of the tables written (uncompressed)

    def describe(self, processes: int) -> str:
        parts = [f"{self.runs:,} runs"]
        if self.seconds is not None:
            parts.append(f"about {_duration(self.seconds)} on {processes} process(es)")
        if self.bytes is not None:
            parts.append(f"about {_size(self.bytes)} of tables")
        return ", ".join(parts)

    def needs_confirmation(self) -> bool:
        return (
            self.runs > CONFIRM_RUNS
            or (self.seconds or 0) > CONFIRM_SECONDS
            or (self.bytes or 0) > CONFIRM_BYTES
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def count_runs(scenario: Scenario, experiment: Any) -> int | None:
    """Model runs of a default-experiment scenario (None for other experiments)."""
    if type(experiment).__name__ != "BatchExperiment":
        return None
    cells = math.prod(len(v) for v in scenario.grid.values()) if scenario.grid else 1
    return cells * scenario.replications


def sample_run(scenario: Scenario, cell: int = 0) -> tuple[float, float]:
    """Seconds and bytes (model + agent reporter rows) of one run of the first (``cell=0``)
    or last (``cell=-1``) grid cell."""
    from mesa_dilemmas.dilemmas import game_model

    point = {k: v[cell] for k, v in scenario.grid.items()}
    model = build_model(game_model(scenario.game), {**scenario.params, **point}, scenario.seed)
    started = time.perf_counter()
    for _ in range(scenario.max_steps):
        if not model.running:
            break
        model.step()
    seconds = time.perf_counter() - started
    size = 0.0
    collector = getattr(model, "datacollector", None)
    if collector is not None:
        size += float(collector.get_model_vars_dataframe().memory_usage(deep=True).sum())
        with_agents = bool(getattr(collector, "agent_reporters", None))
        if with_agents:
            size += float(collector.get_agent_vars_dataframe().memory_usage(deep=True).sum())
    return seconds, size


def estimate(scenario: Scenario, experiment: Any, llm: bool) -> RunSize | None:
    runs = count_runs(scenario, experiment)
    if runs is None:
        return None
    size = RunSize(runs)
    if runs >= LARGE_RUNS and not llm:
        try:  # the mean of the first and the last cell of the grid
            (t0, b0), (t1, b1) = sample_run(scenario, 0), sample_run(scenario, -1)
        except Exception:  # an estimate is advice: a failing sample leaves it out
            return size
        seconds, per_run = (t0 + t1) / 2, (b0 + b1) / 2
        size.seconds = seconds * runs / max(1, scenario.processes)
        size.bytes = per_run * runs
    return size


def check_run_size(
    scenario: Scenario, options: BaseModel, experiment: Any, *, yes: bool, llm: bool = False
) -> RunSize | None:
    """Print the size of a large run; refuse one that needs confirmation unless ``yes``."""
    size = estimate(scenario, experiment, llm)
    if size is None or size.runs < LARGE_RUNS:
        return size
    text = size.describe(scenario.processes)
    if size.needs_confirmation() and not yes:
        raise ConfigError(f"run size: {text}; pass --yes to start a run this large")
    print(f"run size: {text}", file=sys.stderr)
    return size


# -- LLM runs: calls, tokens, dollars and time, from a dry run of the first rounds ---------

#: rounds of each distinct LLM cell the estimate plays (prompts grow with history, so a
#: few rounds rather than one)
ESTIMATE_ROUNDS = 3


@dataclass
class LLMEstimate:
    rows: list[Any]
    table: str
    list_usd: float
    paid: bool


def llm_estimate(
    scenario: Scenario, rounds: int = ESTIMATE_ROUNDS, settings: Any = None
) -> LLMEstimate | None:
    """Play the first ``rounds`` rounds of one replication of each grid cell group that
    uses a distinct set of LLM specs, with every LLM seat answered at random and every
    prompt rendered and counted (``[llm] dry_run``: no network), then scale to the
    scenario's rounds, replications and cells.  None for experiments other than the
    default batch one (or when no cell uses an LLM)."""
    import itertools
    import tempfile
    from pathlib import Path

    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.llm import LLMSettings, session
    from mesa_dilemmas.llm.accounting import load_calls
    from mesa_dilemmas.llm.checks import is_paid_api, resolve
    from mesa_dilemmas.llm.estimate import Tally, format_table, price_rows, tally
    from mesa_dilemmas.scenarios.batch import derive_seeds

    if scenario.experiment not in ("batch", "batch:BatchExperiment"):
        return None
    model_cls = game_model(scenario.game)
    base = settings or LLMSettings.from_table(scenario.llm)
    dry = base.model_copy(update={"dry_run": True, "cache": False})
    keys = list(scenario.grid)
    cells = [dict(zip(keys, c, strict=True)) for c in itertools.product(*scenario.grid.values())]
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    for point in cells or [{}]:
        specs = frozenset(model_cls.llm_specs({**scenario.params, **point}))
        if specs:
            groups.setdefault(specs, []).append(point)
    if not groups:
        return None
    seed = derive_seeds(scenario.seed, 1)[0]
    rounds = max(1, min(rounds, scenario.max_steps))
    total: dict[str, Tally] = {}
    # the dry run records in a run of its own, never in a run active in this context
    with session.use(None):
        for points in groups.values():
            with tempfile.TemporaryDirectory(prefix="mesa-dilemmas-estimate-") as tmp:
                dry_run = session.start_run(dry, Path(tmp))
                try:
                    model = build_model(model_cls, {**scenario.params, **points[0]}, seed)
                    played = 0
                    for _ in range(rounds):
                        if not model.running:
                            break
                        model.step()
                        played += 1
                    broker = getattr(model, "broker", None)
                    if broker is not None and hasattr(broker, "close"):
                        broker.close()
                finally:
                    session.finish_run(dry_run)
                    calls = list(load_calls(Path(tmp)))
            # per round of one replication, times every round of every replication of the
            # cells of this group
            factor = scenario.max_steps * scenario.replications * len(points) / max(1, played)
            for label, t in tally(calls).items():
                total.setdefault(label, Tally(label)).add(t.scaled(factor))
    rows = price_rows(total, base, processes=scenario.processes)
    paid = any(is_paid_api(resolve(s, base), base) for specs in groups for s in specs)
    sampled = f"first {rounds} rounds of {len(groups)} cell(s) played dry and scaled"
    table = format_table(rows, sampled)
    return LLMEstimate(rows, table, sum(r.list_usd or 0.0 for r in rows), paid)


def confirm_llm_cost(scenario: Scenario, *, yes: bool, settings: Any = None) -> None:
    """Before a run that calls a paid provider: print the estimate; above
    ``CONFIRM_USD`` dollars, start only when confirmed (``--yes``)."""
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.llm import LLMSettings
    from mesa_dilemmas.llm.checks import is_paid_api, resolve
    from mesa_dilemmas.llm.estimate import CONFIRM_USD

    settings = settings or LLMSettings.from_table(scenario.llm)
    model_cls = game_model(scenario.game)
    specs: set[str] = set(model_cls.llm_specs(scenario.params))
    for key, values in scenario.grid.items():  # any grid point may name another model
        for value in values:
            specs |= set(model_cls.llm_specs({**scenario.params, key: value}))
    if not any(is_paid_api(resolve(s, settings), settings) for s in specs):
        return  # the embedded model and self-hosted servers cost no money
    try:
        found = llm_estimate(scenario, settings=settings)
    except ConfigError:
        raise
    except Exception as exc:  # an estimate is advice: say so and go on
        print(f"llm estimate: not available ({type(exc).__name__}: {exc})", file=sys.stderr)
        return
    if found is None or not found.paid:
        return
    print(f"llm estimate:\n{found.table}", file=sys.stderr)
    if found.list_usd > CONFIRM_USD and not yes:
        raise ConfigError(
            f"llm estimate: about ${found.list_usd:,.2f} at list prices (above "
            f"${CONFIRM_USD:g}); pass --yes to start this run"
        )


def register(subparsers: Any) -> None:
    """``mesa-dilemmas estimate SCENARIO [--set ...]``."""
    p = subparsers.add_parser(
        "estimate",
        help="what an LLM scenario will cost: calls, tokens, dollars and time (no calls made)",
    )
    p.add_argument("scenario", help="a bundled scenario name or a TOML file")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field")
    p.add_argument(
        "--rounds",
        type=int,
        default=ESTIMATE_ROUNDS,
        help="rounds played dry per cell before scaling (default 3)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    g = p.add_argument_group(
        "power before paying",
        "replications per cell for each contrast of the scenario, and their price "
        "(see docs/power.md)",
    )
    g.add_argument(
        "--power", type=float, metavar="P", help="the power wanted for each contrast (e.g. 0.8)"
    )
    g.add_argument(
        "--effect",
        type=float,
        metavar="D",
        help="the standardised effect to detect: Cohen's d (a mean), h (a share: --outcome proportion)",
    )
    g.add_argument(
        "--effect-from",
        metavar="RUN",
        help="read each contrast's effect from a pilot run directory, or 'rule' (the scenario "
        "played by rule players at reduced size: free)",
    )
    g.add_argument("--metric", help="the run metric compared (default: the game's first)")
    g.add_argument(
        "--outcome",
        choices=("auto", "mean", "proportion", "survival"),
        default="auto",
        help="the outcome's kind (auto: read off the pilot's values; with --effect, a mean)",
    )
    g.add_argument(
        "--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)"
    )
    p.set_defaults(func=cmd_estimate)


def cmd_estimate(args: Any) -> int:
    import json

    from mesa_dilemmas.llm import LLMConfigError
    from mesa_dilemmas.scenarios.config import load_scenario

    scenario, _ = load_scenario(args.scenario, args.set or [])
    if args.power is not None or args.effect is not None or args.effect_from is not None:
        return cmd_power(args, scenario)
    try:
        found = llm_estimate(scenario, rounds=args.rounds)
    except LLMConfigError as exc:
        raise ConfigError(str(exc)) from None
    if found is None:
        print(f"{scenario.name}: no LLM calls to estimate (or not a batch scenario)")
        return 0
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "model": r.label,
                        "calls": r.tally.calls,
                        "tokens_in": r.tally.tokens_in,
                        "cached_tokens": r.tally.cached_in,
                        "shared_prefix_tokens": r.tally.shared_in,
                        "tokens_out": r.tally.tokens_out,
                        "list_usd": r.list_usd,
                        "cached_usd": r.cached_usd,
                        "batch_usd": r.batch_usd,
                        "wall_s": r.seconds,
                    }
                    for r in found.rows
                ],
                indent=2,
            )
        )
        return 0
    print(found.table)
    return 0


# -- power before paying ---------------------------------------------------------------------

#: the group-sequential designs printed beside the fixed ones (spending, looks)
SEQUENTIAL_DESIGNS = (("obf", 5), ("pocock", 5))


def power_report(scenario: Scenario, args: Any) -> dict[str, Any]:
    """What ``estimate --power`` prints, as data: the contrasts, the replications each needs,
    and the designs' sizes and prices."""
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.scenarios import power as pw
    from mesa_dilemmas.scenarios.sequential import plan

    target = 0.8 if args.power is None else args.power
    if not 0 < target < 1:
        raise ConfigError(f"--power: must be between 0 and 1 (got {target:g})")
    if not 0 < args.alpha < 0.5:
        raise ConfigError(f"--alpha: must be in (0, 0.5) (got {args.alpha:g})")
    if (args.effect is None) == (args.effect_from is None):
        raise ConfigError("--power: give one of --effect D or --effect-from RUN|rule")
    if args.effect is not None and not (math.isfinite(args.effect) and args.effect > 0):
        raise ConfigError(f"--effect: must be a positive standardised effect (got {args.effect:g})")
    contrasts, source = pw.contrasts_for(scenario)
    metric = args.metric or next(iter(getattr(game_model(scenario.game), "RUN_METRICS", ())), None)
    out: dict[str, Any] = {
        "scenario": scenario.name,
        "power": target,
        "alpha": args.alpha,
        "metric": metric,
        "contrast_source": source,
        "claims": pw.declared_claims(scenario.name),
    }
    kind = None if args.outcome == "auto" else args.outcome
    if not contrasts:
        out["sizes"] = []
        return out
    if args.effect is not None:
        sizes = pw.size_from_effect(contrasts, args.effect, kind or "mean", target, args.alpha)
        out["effect_source"] = "given"
    else:
        if metric is None:
            raise ConfigError("--metric: the game names no run metric; give --metric NAME")
        runs, where = pw.pilot_runs(
            args.effect_from, args.scenario, list(args.set or []), processes=scenario.processes
        )
        sizes = pw.size_from_runs(
            contrasts, runs, metric, scenario.max_steps, target, args.alpha, kind, where=where
        )
        out["effect_source"] = where
    out["sizes"] = sizes
    n = pw.needed(sizes)
    rows = [
        pw.DesignRow(f"fixed as bundled ({scenario.replications} per cell)", scenario.replications)
    ]
    if n is not None:
        rows.append(pw.DesignRow(f"fixed for {target:.0%} power", n))
        for spending, looks in SEQUENTIAL_DESIGNS:
            d = plan(n, target, args.alpha, spending, looks)  # type: ignore[arg-type]
            rows.append(pw.DesignRow(f"sequential {spending}, {looks} looks: at most", d.max))
            rows.append(
                pw.DesignRow(
                    f"sequential {spending}, {looks} looks: expected at the effect",
                    round(d.expected, 1),
                )
            )
    out["designs"] = rows
    out["needed"] = n
    if n is not None:
        d = plan(n, target, args.alpha, "obf", SEQUENTIAL_DESIGNS[0][1])
        out["until"] = f"decided,max={d.max},batch={d.max // d.looks},alpha={args.alpha:g}"
    out["cells"] = math.prod(len(v) for v in scenario.grid.values()) if scenario.grid else 1
    return out


def cmd_power(args: Any, scenario: Scenario) -> int:
    import json

    from mesa_dilemmas.llm import LLMConfigError
    from mesa_dilemmas.scenarios import power as pw

    report = power_report(scenario, args)
    found = None
    if report.get("designs"):
        try:
            found = llm_estimate(scenario, rounds=args.rounds)
        except LLMConfigError as exc:
            raise ConfigError(str(exc)) from None
    if args.json:
        print(json.dumps(_power_json(report, found), indent=2))
        return 0
    print(f"{scenario.name}: outcome {report['metric']}; contrasts: {report['contrast_source']}")
    for claim in report["claims"]:
        print(f"  claim {claim}")
    if not report["sizes"]:
        print("no contrast to size: give the scenario a grid axis with two levels or more")
        return 0
    print(pw.format_sizes(report["sizes"], report["power"], report["alpha"]))
    if report["needed"] is None:
        print("no contrast could be sized: no effect in the pilot (give --effect D)")
    print(pw.format_design_table(report["designs"], report["cells"], scenario.replications, found))
    if found is not None:
        print(found.table.splitlines()[-1].replace("total about", "fixed design as bundled: about"))
    if report.get("until"):
        sets = " ".join(f"--set {o!r}" for o in args.set or [])
        print(
            f"the sequential design: mesa-dilemmas run {scenario.name} {sets} "
            f"--until {report['until']}".replace("  ", " ")
        )
    elif report.get("designs"):
        print("(no LLM calls: runs only)")
    return 0


def _power_json(report: dict[str, Any], found: LLMEstimate | None) -> dict[str, Any]:
    per_rep = None
    if found is not None:
        reps = max(1, int(report["designs"][0].replications))
        per_rep = {
            "calls": sum(r.tally.calls for r in found.rows) / reps,
            "tokens_in": sum(r.tally.tokens_in for r in found.rows) / reps,
            "tokens_out": sum(r.tally.tokens_out for r in found.rows) / reps,
            "list_usd": sum(r.list_usd or 0.0 for r in found.rows) / reps,
            "batch_usd": sum(r.batch_usd or 0.0 for r in found.rows) / reps,
        }
    return {
        **{k: v for k, v in report.items() if k not in ("sizes", "designs")},
        "sizes": [
            {
                "contrast": s.contrast.name,
                "kind": s.kind,
                "effect": s.effect if math.isfinite(s.effect) else None,
                "source": s.source,
                "replications": s.n,
            }
            for s in report["sizes"]
        ],
        "designs": [
            {
                "design": d.label,
                "replications": d.replications,
                **(
                    {k: v * d.replications for k, v in per_rep.items()}
                    if per_rep is not None
                    else {}
                ),
            }
            for d in report.get("designs", [])
        ],
    }
