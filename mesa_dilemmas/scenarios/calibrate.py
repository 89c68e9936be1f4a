"""Calibration of a game's open parameters against target statistics: ``mesa-dilemmas calibrate``.

``mesa-dilemmas calibrate SCENARIO --targets FILE [--trials N] [--param NAME=LOW:HIGH ...]
[--processes P] [--out DIR | --resume DIR]``

The targets file (TOML) lists one table per objective::

    [[target]]
    metric = "survival_time"      # a run metric of the game
    direction = "maximize"        # or "minimize"

    [[target]]
    metric = "compliance"
    value = 0.8                   # match: minimise |mean - value| / scale
    scale = 0.1                   # optional (default 1)

Each trial's point runs the scenario's replications (common seeds; the game's vectorised engine
where it applies, through the process pool or Ray) and each objective is the mean of its metric
over them.  One target is a single-objective study; several are a multi-objective one (its
Pareto front is the trade-off between them).  Optuna's study lives in the run directory as
SQLite (``study.db``) and every evaluated point is appended to ``evaluations.jsonl``, so
``--resume DIR`` continues a killed run: finished trials are kept, a trial that was running is
told its values if they were saved, else dropped and asked again.

Outputs: ``best.json`` (the best trial, or the Pareto front's trials), ``trials.csv`` and
``calibration.png`` (objective by trial with the best so far, or the objectives' trade-off with
the Pareto front marked).

Not yet: targets that are claims of the reproduction report (a standardised effect per claim);
a target with ``claim = ...`` is a one-line error saying so.
"""

from __future__ import annotations

import argparse
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.scenarios.config import ConfigError, Scenario, did_you_mean
from mesa_dilemmas.scenarios.sensitivity import (
    evaluate_points,
    execution_for,
    load_for_command,
    parse_ranges,
    read_evaluations,
    resumed,
)


@dataclass(frozen=True)
class Target:
    metric: str
    direction: str  # "maximize" | "minimize"
    value: float | None = None
    scale: float = 1.0

    @property
    def label(self) -> str:
        if self.value is None:
            return f"{self.direction} {self.metric}"
        return f"|{self.metric} - {self.value:g}|" + (
            f" / {self.scale:g}" if self.scale != 1 else ""
        )

    def objective(self, mean: float) -> float:
        if self.value is None:
            return mean
        return abs(mean - self.value) / self.scale


def read_targets(path: Path, model_cls: type) -> list[Target]:
    try:
        raw = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"--targets: {path}: {exc}") from None
    rows = raw.get("target")
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"--targets: {path} has no [[target]] tables")
    known = list(getattr(model_cls, "RUN_METRICS", ()) or ())
    out = []
    for i, row in enumerate(rows):
        where = f"--targets: target {i + 1}"
        extra = set(row) - {"metric", "direction", "value", "scale", "claim"}
        if extra:
            raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r}")
        if "claim" in row:
            raise ConfigError(f"{where}: claim targets are not supported yet; use a metric")
        metric = row.get("metric")
        if not isinstance(metric, str):
            raise ConfigError(f'{where}: needs metric = "NAME"')
        if known and metric not in known:
            raise ConfigError(
                f"{where}: {metric!r} is not a run metric{did_you_mean(metric, known)}"
            )
        if "value" in row:
            if "direction" in row:
                raise ConfigError(f"{where}: give either value (match) or direction, not both")
            scale = float(row.get("scale", 1.0))
            if not scale > 0:
                raise ConfigError(f"{where}: scale must be positive")
            out.append(Target(metric, "minimize", float(row["value"]), scale))
            continue
        direction = row.get("direction")
        if direction not in ("maximize", "minimize"):
            raise ConfigError(
                f"{where}: direction must be 'maximize' or 'minimize' (or give value)"
            )
        out.append(Target(metric, direction))
    return out


@dataclass
class CalibrationResult:
    out_dir: Path
    best: list[dict[str, Any]]
    trials: pd.DataFrame
    figure: Path


def _suggest(trial: Any, model_cls: type, ranges: dict[str, list[float]]) -> dict[str, Any]:
    fields = params_model(model_cls).model_fields
    out = {}
    for name, (low, high) in ranges.items():
        if fields[name].annotation is int:
            out[name] = trial.suggest_int(name, math.ceil(low), math.floor(high))
        else:
            out[name] = trial.suggest_float(name, low, high)
    return out


def run_calibration(
    scenario: Scenario,
    *,
    targets: list[Target] | None,
    ranges: dict[str, tuple[float, float]] | None,
    trials: int,
    out_dir: Path,
    processes: int = 1,
    resume: bool = False,
    progress: bool = False,
) -> CalibrationResult:
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    model_cls = game_model(scenario.game)
    spec_path = out_dir / "calibration.json"
    if resume:
        if not spec_path.exists():
            raise ConfigError(f"--resume: {out_dir} holds no calibration.json")
        spec = json.loads(spec_path.read_text())
        targets = [Target(**t) for t in spec["targets"]]
        scenario = resumed(scenario, spec)
        ranges_l = spec["ranges"]
        trials = spec["trials"] if trials <= 0 else trials
    else:
        assert targets is not None and ranges is not None
        out_dir.mkdir(parents=True, exist_ok=True)
        if (out_dir / "study.db").exists():
            raise ConfigError(f"--out: {out_dir} already holds a study; use --resume {out_dir}")
        ranges_l = {k: list(v) for k, v in ranges.items()}
        spec = {
            "scenario": scenario.name,
            "game": scenario.game,
            "trials": trials,
            "targets": [t.__dict__ for t in targets],
            "ranges": ranges_l,
            "seed": scenario.seed,
            "replications": scenario.replications,
            "max_steps": scenario.max_steps,
            "params": scenario.params,
        }
        spec_path.write_text(json.dumps(spec, indent=2, default=str) + "\n")
    metrics = tuple(dict.fromkeys(t.metric for t in targets))
    log = out_dir / "evaluations.jsonl"
    directions = [t.direction for t in targets]
    sampler = optuna.samplers.TPESampler(seed=scenario.seed)
    study = optuna.create_study(
        storage=f"sqlite:///{out_dir / 'study.db'}",
        study_name="calibrate",
        directions=directions,
        sampler=sampler,
        load_if_exists=True,
    )

    def values_of(means: dict[str, float]) -> list[float]:
        return [t.objective(means[t.metric]) for t in targets]

    # a killed run: trials left running are told their saved values, or failed and asked again
    saved = read_evaluations(log)
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t.number in saved:
            study.tell(t.number, values_of(saved[t.number]))
        else:
            study.tell(t.number, state=TrialState.FAIL)

    def complete() -> int:
        return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))

    batch = max(1, processes)
    while complete() < trials:
        asked = [study.ask() for _ in range(min(batch, trials - complete()))]
        points = {t.number: _suggest(t, model_cls, ranges_l) for t in asked}
        numbers = sorted(points)
        done: dict[int, dict[str, float]] = {}
        if numbers == list(range(numbers[0], numbers[0] + len(numbers))):  # one parallel batch
            done = evaluate_points(
                scenario,
                [points[n] for n in numbers],
                metrics,
                log,
                processes=processes,
                offset=numbers[0],
            )
        else:
            for number in numbers:  # numbered by trial, appended as each point ends
                done.update(
                    evaluate_points(scenario, [points[number]], metrics, log, offset=number)
                )
        for t in asked:
            values = values_of(done[t.number])
            if all(math.isfinite(v) for v in values):
                study.tell(t, values)
            else:
                study.tell(t, state=TrialState.FAIL)
    frame = study.trials_dataframe(attrs=("number", "params", "values", "state"))
    frame = frame.rename(columns=lambda c: c.replace("params_", ""))
    names = {f"values_{i}": t.label for i, t in enumerate(targets)}
    frame = frame.rename(columns={**names, "value": targets[0].label, "values": targets[0].label})
    frame.to_csv(out_dir / "trials.csv", index=False)
    best_trials = [study.best_trial] if len(targets) == 1 else study.best_trials
    best = [
        {
            "trial": t.number,
            "params": t.params,
            "objectives": dict(zip([x.label for x in targets], t.values, strict=True)),
        }
        for t in best_trials
    ]
    (out_dir / "best.json").write_text(
        json.dumps(
            {
                "targets": [t.label for t in targets],
                "trials": complete(),
                "pareto_front" if len(targets) > 1 else "best": best,
            },
            indent=2,
        )
        + "\n"
    )
    fig = _figure(
        frame, targets, [t.number for t in best_trials], out_dir / "calibration.png", scenario.name
    )
    return CalibrationResult(out_dir, best, frame, fig)


def _figure(
    frame: pd.DataFrame, targets: list[Target], best: list[int], path: Path, title: str
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = frame[frame["state"] == "COMPLETE"]
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    if len(targets) == 1:
        label = targets[0].label
        y = done[label].to_numpy(dtype=float)
        acc = np.maximum.accumulate if targets[0].direction == "maximize" else np.minimum.accumulate
        ax.plot(done["number"], y, "o", ms=3, alpha=0.6, label="trial")
        ax.plot(done["number"], acc(y), "-", label="best so far")
        ax.set_xlabel("trial")
        ax.set_ylabel(label)
    else:
        a, b = targets[0].label, targets[1].label
        ax.plot(done[a], done[b], "o", ms=3, alpha=0.5, label="trial")
        front = done[done["number"].isin(best)].sort_values(a)
        ax.plot(front[a], front[b], "o-", color="C3", label="Pareto front")
        ax.set_xlabel(f"{a} ({targets[0].direction})")
        ax.set_ylabel(f"{b} ({targets[1].direction})")
    ax.set_title(f"{title}: calibration", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate", help="search open parameters against target statistics (optuna)"
    )
    p.add_argument("scenario", help="a bundled scenario name or a TOML file")
    p.add_argument("--targets", type=Path, help="a TOML file of [[target]] tables")
    p.add_argument("--trials", type=int, default=0, help="trials to complete (default 50)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=LOW:HIGH")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field (replications=8, max_steps=50, ...)",
    )
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--backend", choices=("local", "ray"), default=None)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--out", type=Path, default=None)
    group.add_argument("--resume", type=Path, default=None, metavar="DIR")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    scenario, out = load_for_command(args, "calibrate")
    model_cls = game_model(scenario.game)
    resume = args.resume is not None
    targets = ranges = None
    if not resume:
        if args.targets is None:
            raise ConfigError("--targets: give a TOML file of [[target]] tables")
        targets = read_targets(args.targets, model_cls)
        ranges = parse_ranges(args.param, model_cls)
    with execution_for(scenario, args):
        result = run_calibration(
            scenario,
            targets=targets,
            ranges=ranges,
            trials=args.trials or (0 if resume else 50),
            out_dir=out,
            processes=args.processes,
            resume=resume,
            progress=not args.no_progress,
        )
    print(json.dumps(result.best, indent=2))
    print(f"\n{len(result.trials)} trials; best.json, trials.csv and the figure in {out}")
    return 0
