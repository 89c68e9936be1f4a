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

Trial 0 is the scenario's own point (its parameters, else the model's defaults) when it lies
inside the ranges, so every study shows where the defaults stand.  Outputs: ``best.json``
(the best trial, or the Pareto front's trials), ``trials.csv`` and
``calibration.png`` (objective by trial with the best so far, or the objectives' trade-off with
the Pareto front marked).

A target can also be a claim of the reproduction report: its verdict's standardised effect
(``Verdict.z``, > 0 the paper's direction) is maximised, judged by the same code as
``mesa-dilemmas reproduce`` on the claim's experiment run with the trial's parameters
(:mod:`~mesa_dilemmas.scenarios.claim_points`)::

    mode = "quick"                # the report's experiment sizes: tiny | quick | full
    combine = "min"               # one objective: the weakest claim's z (else one per claim)

    [[target]]
    claims = "003"                # every claim of paper 003 the scenario's game registers
                                  # (or claim = "beta_survival": one claim by its key)

    [ranges]                      # optional: the search box when no --param is given
    catchability = [0.02, 0.06]

    [sizes]                       # optional: an experiment's overrides instead of the mode's
    beta_r = ["replications=8", "grid.growth_rate=[0.3,0.5,0.7]"]

Each trial then runs those experiments in turn (each through ``--processes``); besides the
files above, ``claims.csv`` holds every trial's z and verdict per claim, ``tradeoff.md``
which claims hold where (the points that hold the most claims, and the non-dominated ones)
and ``claims.png`` the same as a table of colours.
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
from mesa_dilemmas.scenarios.claim_points import ClaimSet, evaluate_claims, registered, select
from mesa_dilemmas.scenarios.config import ConfigError, Scenario, did_you_mean
from mesa_dilemmas.scenarios.sensitivity import (
    add_run_options,
    evaluate_points,
    execution_for,
    load_for_command,
    parse_ranges,
    read_evaluations,
    resumed,
)


@dataclass(frozen=True)
class Target:
    metric: str  # a run metric, or a claim's key for a claim target
    direction: str  # "maximize" | "minimize"
    value: float | None = None
    scale: float = 1.0
    claim: bool = False

    @property
    def label(self) -> str:
        if self.claim:
            return f"z {self.metric}"
        if self.value is None:
            return f"{self.direction} {self.metric}"
        return f"|{self.metric} - {self.value:g}|" + (
            f" / {self.scale:g}" if self.scale != 1 else ""
        )

    def objective(self, mean: float) -> float:
        if self.value is None:
            return mean
        return abs(mean - self.value) / self.scale


@dataclass(frozen=True)
class Targets:
    """A targets file: its objectives and, for claim targets, how the claims are run."""

    targets: list[Target]
    combine: str = "each"  # "each": one objective per target; "min": the weakest claim's z
    mode: str = "quick"
    sizes: dict[str, list[str]] | None = None
    #: the search box when no --param is given: ``["NAME=LOW:HIGH", ...]``
    ranges: list[str] | None = None

    @property
    def claims(self) -> bool:
        return any(t.claim for t in self.targets)

    @property
    def labels(self) -> list[str]:
        if self.combine == "min":
            return ["weakest claim's z"]
        return [t.label for t in self.targets]

    @property
    def directions(self) -> list[str]:
        return ["maximize"] if self.combine == "min" else [t.direction for t in self.targets]

    def values(
        self, means: dict[str, float], statuses: dict[str, str] | None = None
    ) -> list[float]:
        """The trial's objectives.  With ``combine = "min"`` a claim that cannot fail at the
        point ("not testable": a tie at a cap, a ceiling) is left out of the minimum, not
        scored zero; a claim its judge could not judge otherwise fails the trial, as does a
        point where no claim can fail."""
        values = [t.objective(means.get(t.metric, math.nan)) for t in self.targets]
        if self.combine == "min":
            statuses = statuses or {}
            kept = [
                v
                for t, v in zip(self.targets, values, strict=True)
                if statuses.get(t.metric) != "not testable"
            ]
            return [min(kept) if kept and all(math.isfinite(v) for v in kept) else math.nan]
        return values

    def as_dict(self) -> dict[str, Any]:
        return {
            "targets": [t.__dict__ for t in self.targets],
            "combine": self.combine,
            "mode": self.mode,
            "sizes": self.sizes,
        }

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> Targets:
        return cls(
            [Target(**t) for t in spec["targets"]],
            spec.get("combine", "each"),
            spec.get("mode", "quick"),
            spec.get("sizes"),
        )


FILE_KEYS = {"target", "combine", "mode", "sizes", "ranges"}


def read_targets(path: Path, model_cls: type, game: str = "") -> Targets:
    try:
        raw = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"--targets: {path}: {exc}") from None
    extra = set(raw) - FILE_KEYS
    if extra:
        key = sorted(extra)[0]
        raise ConfigError(f"--targets: unknown key {key!r}{did_you_mean(key, list(FILE_KEYS))}")
    combine = raw.get("combine", "each")
    if combine not in ("each", "min"):
        raise ConfigError("--targets: combine must be 'each' or 'min'")
    mode = raw.get("mode", "quick")
    if mode not in ("tiny", "quick", "full"):
        raise ConfigError("--targets: mode must be 'tiny', 'quick' or 'full'")
    sizes = raw.get("sizes")
    if sizes is not None and not (
        isinstance(sizes, dict)
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in sizes.values())
    ):
        raise ConfigError('--targets: [sizes] maps an experiment to a list of "KEY=VALUE"')
    ranges = raw.get("ranges")
    if ranges is not None:
        if not isinstance(ranges, dict) or not all(
            isinstance(v, list) and len(v) == 2 for v in ranges.values()
        ):
            raise ConfigError("--targets: [ranges] maps a parameter to [LOW, HIGH]")
        ranges = [f"{k}={lo}:{hi}" for k, (lo, hi) in ranges.items()]
        parse_ranges(ranges, model_cls)  # checked against the game's schema now
    rows = raw.get("target")
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"--targets: {path} has no [[target]] tables")
    known = list(getattr(model_cls, "RUN_METRICS", ()) or ())
    out = []
    for i, row in enumerate(rows):
        where = f"--targets: target {i + 1}"
        extra = set(row) - {"metric", "direction", "value", "scale", "claim", "claims"}
        if extra:
            raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r}")
        if "claim" in row or "claims" in row:
            out += _claim_targets(row, where, game)
            continue
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
    claim_targets = [t for t in out if t.claim]
    if claim_targets and len(claim_targets) < len(out):
        raise ConfigError("--targets: give claim targets or metric targets, not both")
    if combine == "min" and not claim_targets:
        raise ConfigError("--targets: combine = 'min' takes claim targets (their z)")
    out = list({t.metric: t for t in out}.values())  # a claim named twice counts once
    if sizes is not None and claim_targets:
        known = registered(game).experiments
        for key in sizes:
            if key not in known:
                raise ConfigError(
                    f"--targets: [sizes] {key!r} is not an experiment{did_you_mean(key, list(known))}"
                )
    return Targets(out, combine, mode, sizes, ranges)


def _claim_targets(row: dict[str, Any], where: str, game: str) -> list[Target]:
    if set(row) - {"claim", "claims"}:
        raise ConfigError(f"{where}: a claim target takes only claim = KEY or claims = PAPER")
    keys = [row[k] for k in ("claim", "claims") if k in row]
    if not all(isinstance(k, str) for k in keys):
        raise ConfigError(f'{where}: claim = "KEY" (or claims = "PAPER" / "all")')
    chosen = select(registered(game), keys, where)
    if not chosen.claims:
        raise ConfigError(f"{where}: the game {game!r} registers no claims")
    return [Target(c.key, "maximize", claim=True) for c in chosen.claims]


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


def seed_clash(scenario: Scenario, targets: Targets | None, stream: int) -> str | None:
    """Why a calibration on seed stream ``stream`` would share seeds with the reproduction
    report, its checks or the committed docs (None: it would not).  Every run of a calibration
    is on ``stream`` of its scenario's seed (for a claim target, of each experiment's, under
    the targets file's sizes); the report, its robustness check and its re-check use streams
    below :data:`~mesa_dilemmas.scenarios.batch.CALIBRATION_STREAM` of the bundled seeds, and
    the docs the bundled seeds themselves."""
    from mesa_dilemmas.scenarios.batch import CALIBRATION_STREAM, reserved_stream, stream_seed
    from mesa_dilemmas.scenarios.claim_points import scenario_seed

    used = reserved_stream(stream)
    if used is not None:
        return (
            f"--stream {stream}: those seeds are used by {used}; calibrate on a stream >= "
            f"{CALIBRATION_STREAM} (default {CALIBRATION_STREAM})"
        )
    runs: list[tuple[str, int]] = []  # (what, the seed it runs with before streaming)
    bundled: list[int] = []
    if targets is not None and targets.claims:
        chosen = select(registered(scenario.game), [t.metric for t in targets.targets], "targets")
        for exp in ClaimSet(chosen.claims, chosen.experiments).needed():
            overrides = (targets.sizes or {}).get(exp.key, exp.overrides(targets.mode))  # type: ignore[arg-type]
            runs.append((f"experiment {exp.key}", scenario_seed(exp.scenario, overrides)))
            bundled.append(scenario_seed(exp.scenario))
    else:
        runs.append((scenario.name, int(scenario.seed)))
        try:
            bundled.append(scenario_seed(scenario.name))
        except ConfigError:  # a scenario file of the user's: its own seed is the bundled one
            bundled.append(int(scenario.seed))
    reserved = {b for b in bundled} | {
        stream_seed(b, s) for b in bundled for s in range(1, CALIBRATION_STREAM)
    }
    for what, seed in runs:
        if stream_seed(seed, stream) in reserved:
            return (
                f"--stream {stream}: {what} would run on seeds the reproduction report or the "
                f"docs use (seed {seed}); pick another stream or seed"
            )
    return None


def run_calibration(
    scenario: Scenario,
    *,
    targets: Targets | None,
    ranges: dict[str, tuple[float, float]] | None,
    trials: int,
    out_dir: Path,
    processes: int = 1,
    resume: bool = False,
    progress: bool = False,
    stream: int | None = None,
) -> CalibrationResult:
    """Search ``ranges`` against ``targets``; every trial runs on seed stream ``stream`` of
    its scenarios (default :data:`~mesa_dilemmas.scenarios.batch.CALIBRATION_STREAM`), held
    out from the seeds the reproduction report judges the chosen point on."""
    import optuna
    from optuna.trial import TrialState

    from mesa_dilemmas.scenarios.batch import CALIBRATION_STREAM, stream_seed

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    model_cls = game_model(scenario.game)
    spec_path = out_dir / "calibration.json"
    if resume:
        if not spec_path.exists():
            raise ConfigError(f"--resume: {out_dir} holds no calibration.json")
        spec = json.loads(spec_path.read_text())
        targets = Targets.from_dict(spec)
        scenario = resumed(scenario, spec)
        if "stream" not in spec:
            raise ConfigError(
                f"--resume: {out_dir} ran on the scenarios' own seeds, before calibrations had "
                "a seed stream of their own; start a new study (--out)"
            )
        stream = int(spec["stream"])
        ranges_l = spec["ranges"]
        trials = spec["trials"] if trials <= 0 else trials
    else:
        assert targets is not None and ranges is not None
        out_dir.mkdir(parents=True, exist_ok=True)
        if (out_dir / "study.db").exists():
            raise ConfigError(f"--out: {out_dir} already holds a study; use --resume {out_dir}")
        ranges_l = {k: list(v) for k, v in ranges.items()}
        stream = CALIBRATION_STREAM if stream is None else stream
        if clash := seed_clash(scenario, targets, stream):
            raise ConfigError(clash)
        spec = {
            "scenario": scenario.name,
            "game": scenario.game,
            "trials": trials,
            **targets.as_dict(),
            "ranges": ranges_l,
            "seed": scenario.seed,
            "stream": stream,
            "replications": scenario.replications,
            "max_steps": scenario.max_steps,
            "params": scenario.params,
        }
        spec_path.write_text(json.dumps(spec, indent=2, default=str) + "\n")
    metrics = tuple(dict.fromkeys(t.metric for t in targets.targets))
    log = out_dir / "evaluations.jsonl"
    sampler = optuna.samplers.TPESampler(seed=scenario.seed)
    held_out = scenario.model_copy(update={"seed": stream_seed(scenario.seed, stream)})
    study = optuna.create_study(
        storage=f"sqlite:///{out_dir / 'study.db'}",
        study_name="calibrate",
        directions=targets.directions,
        sampler=sampler,
        load_if_exists=True,
    )
    if not resume:  # trial 0 is the scenario's own point, where it lies inside the ranges
        start = _starting_point(scenario, model_cls, ranges_l)
        if start:
            study.enqueue_trial(start)

    # a killed run: trials left running are told their saved values, or failed and asked again
    saved = read_evaluations(log)
    statuses = _read_statuses(log) if log.exists() else {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t.number in saved:
            study.tell(t.number, targets.values(saved[t.number], statuses.get(t.number)))
        else:
            study.tell(t.number, state=TrialState.FAIL)

    def complete() -> int:
        return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))

    claim_set = None
    if targets.claims:
        chosen = select(registered(scenario.game), [t.metric for t in targets.targets], "targets")
        claim_set = ClaimSet(chosen.claims, chosen.experiments)
    batch = 1 if claim_set is not None else max(1, processes)
    bar = _progress(progress, trials, complete())
    while complete() < trials:
        asked = [study.ask() for _ in range(min(batch, trials - complete()))]
        points = {t.number: _suggest(t, model_cls, ranges_l) for t in asked}
        numbers = sorted(points)
        done: dict[int, dict[str, float]] = {}
        if claim_set is not None:  # a trial runs the claims' experiments, each in parallel
            done = _evaluate_claim_point(
                claim_set, targets, points[numbers[0]], numbers[0], log, out_dir, processes, stream
            )
        elif numbers == list(range(numbers[0], numbers[0] + len(numbers))):  # one batch
            done = evaluate_points(
                held_out,
                [points[n] for n in numbers],
                metrics,
                log,
                processes=processes,
                offset=numbers[0],
            )
        else:
            for number in numbers:  # numbered by trial, appended as each point ends
                done.update(
                    evaluate_points(held_out, [points[number]], metrics, log, offset=number)
                )
        statuses = _read_statuses(log) if claim_set is not None else {}
        for t in asked:
            values = targets.values(done[t.number], statuses.get(t.number))
            if all(math.isfinite(v) for v in values):
                study.tell(t, values)
            else:
                study.tell(t, state=TrialState.FAIL)
        if bar is not None:
            bar.n = complete()
            bar.refresh()
    if bar is not None:
        bar.close()
    labels = targets.labels
    frame = study.trials_dataframe(attrs=("number", "params", "values", "state"))
    frame = frame.rename(columns=lambda c: c.replace("params_", ""))
    names = {f"values_{i}": label for i, label in enumerate(labels)}
    frame = frame.rename(columns={**names, "value": labels[0], "values": labels[0]})
    frame.to_csv(out_dir / "trials.csv", index=False)
    best_trials = [study.best_trial] if len(labels) == 1 else study.best_trials
    best = [
        {
            "trial": t.number,
            "params": t.params,
            "objectives": dict(zip(labels, t.values, strict=True)),
        }
        for t in best_trials
    ]
    if claim_set is not None:
        statuses = _read_statuses(log)
        for b in best:
            b["claims"] = statuses.get(b["trial"], {})
        _claim_tables(frame, read_evaluations(log), statuses, list(ranges_l), out_dir)
    (out_dir / "best.json").write_text(
        json.dumps(
            {
                "targets": labels,
                "trials": complete(),
                "pareto_front" if len(labels) > 1 else "best": best,
            },
            indent=2,
        )
        + "\n"
    )
    fig = _figure(
        frame,
        labels,
        targets.directions,
        [t.number for t in best_trials],
        out_dir / "calibration.png",
        scenario.name,
    )
    return CalibrationResult(out_dir, best, frame, fig)


def _starting_point(
    scenario: Scenario, model_cls: type, ranges: dict[str, list[float]]
) -> dict[str, Any]:
    """The scenario's values of the searched parameters (its params, else the model's
    defaults), when every one lies inside its range."""
    fields = params_model(model_cls).model_fields
    point = {}
    for name, (low, high) in ranges.items():
        value = scenario.params.get(name, fields[name].default)
        if not isinstance(value, int | float) or not low <= value <= high:
            return {}
        point[name] = value
    return point


def _progress(on: bool, total: int, done: int) -> Any:
    if not on:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, desc="calibrate", unit="trial")


def _evaluate_claim_point(
    claims: ClaimSet,
    targets: Targets,
    point: dict[str, Any],
    number: int,
    log: Path,
    out_dir: Path,
    processes: int,
    stream: int,
) -> dict[int, dict[str, float]]:
    """One trial of a claim calibration on seed stream ``stream``: its claims' z (saved to
    ``log`` with their verdicts)."""
    done = read_evaluations(log)
    if number in done:
        return done
    result = evaluate_claims(
        claims,
        point,
        mode=targets.mode,  # type: ignore[arg-type]
        work_dir=out_dir / "work" / f"trial_{number:05d}",
        processes=processes,
        sizes=targets.sizes,
        stream=stream,
    )
    zs = {k: v["z"] for k, v in result.items()}
    with log.open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "index": number,
                    "metrics": zs,
                    "status": {k: v["status"] for k, v in result.items()},
                    "params": point,
                }
            )
            + "\n"
        )
    done[number] = zs
    return done


def _read_statuses(log: Path) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    for line in log.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "status" in row:
            out[int(row["index"])] = row["status"]
    return out


def _claim_tables(
    frame: pd.DataFrame,
    zs: dict[int, dict[str, float]],
    statuses: dict[int, dict[str, str]],
    params: list[str],
    out_dir: Path,
) -> None:
    """``claims.csv`` (every trial's z and verdict per claim) and ``tradeoff.md``: the points
    holding the most claims (direction right, z > 0) and those no other point beats on every
    claim's z."""
    rows = []
    for _, trial in frame.iterrows():
        n = int(trial["number"])
        if n not in zs:
            continue
        row: dict[str, Any] = {"trial": n, **{p: trial[p] for p in params}}
        row.update({f"z {k}": v for k, v in zs[n].items()})
        row.update({f"verdict {k}": v for k, v in statuses.get(n, {}).items()})
        row["holds"] = sum(v > 0 for v in zs[n].values())
        row["significant"] = sum(v > 1.64 for v in zs[n].values())
        testable = [v for v in zs[n].values() if math.isfinite(v)]  # NaN: not testable there
        row["weakest z"] = min(testable) if testable else math.nan
        rows.append(row)
    table = pd.DataFrame(rows)
    table.to_csv(out_dir / "claims.csv", index=False)
    if table.empty:
        return
    claims = [c.removeprefix("z ") for c in table.columns if c.startswith("z ")]
    z = table[[f"z {c}" for c in claims]].to_numpy(dtype=float)
    dominated = [
        bool(((z >= z[i]).all(axis=1) & (z > z[i]).any(axis=1)).any()) for i in range(len(z))
    ]
    table["non-dominated"] = [not d for d in dominated]
    top = table.sort_values(["holds", "weakest z"], ascending=False).head(10)
    front = table[table["non-dominated"]].sort_values(["holds", "weakest z"], ascending=False)
    front = front.head(10)
    lines = [
        f"# Trade-off between the claims ({len(table)} trials)",
        "",
        "z > 0: the claim's direction holds at that point; z > 1.64: significant (one-sided "
        "5%); nan: the claim cannot fail there (not testable: a tie at a cap, a ceiling).",
        "",
        "Best z seen per claim: "
        + ", ".join(f"{c} {table[f'z {c}'].max():+.1f}" for c in claims)
        + ".",
        "",
    ]
    for title, part in (("Points holding the most claims", top), ("Non-dominated points", front)):
        lines += [f"## {title}", "", _markdown(part, params, claims), ""]
    (out_dir / "tradeoff.md").write_text("\n".join(lines))
    shown = pd.concat([top, front]).drop_duplicates("trial").head(12)
    _claims_figure(shown, claims, out_dir / "claims.png")


def _claims_figure(part: pd.DataFrame, claims: list[str], path: Path) -> None:
    """Which claims hold where: z per claim (columns) at the shown points (rows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    z = part[[f"z {c}" for c in claims]].to_numpy(dtype=float)
    rows = [
        f"trial {int(t)}: {int(h)}/{len(claims)} hold"
        for t, h in zip(part["trial"], part["holds"], strict=True)
    ]
    with plt.rc_context({"font.size": 8}):
        fig, ax = plt.subplots(figsize=(7.0, 1.2 + 0.28 * len(rows)), layout="constrained")
        image = ax.imshow(np.clip(z, -3, 3), cmap="RdBu", vmin=-3, vmax=3, aspect="auto")
        for (i, j), v in np.ndenumerate(z):
            dark = abs(v) > 2
            ax.text(
                j,
                i,
                f"{v:+.1f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if dark else "black",
            )
        ax.set_xticks(range(len(claims)), claims, rotation=20, ha="right", fontsize=7)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.set_xlabel("claim")
        ax.set_ylabel("searched point")
        ax.set_title("Each claim's z at the best and non-dominated points (> 0: the paper's way)")
        fig.colorbar(image, ax=ax, label="z (colour clipped at ±3)")
        fig.savefig(path, dpi=150)
        plt.close(fig)


def _markdown(part: pd.DataFrame, params: list[str], claims: list[str]) -> str:
    head = ["trial", *params, *claims, "holds"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in part.iterrows():
        cells = [str(int(r["trial"]))]
        cells += [f"{r[p]:.3g}" for p in params]
        cells += [f"{r[f'z {c}']:+.1f}" for c in claims]
        cells.append(f"{int(r['holds'])}/{len(claims)}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _figure(
    frame: pd.DataFrame,
    labels: list[str],
    directions: list[str],
    best: list[int],
    path: Path,
    title: str,
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = frame[frame["state"] == "COMPLETE"]
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    if len(labels) == 1:
        label = labels[0]
        y = done[label].to_numpy(dtype=float)
        acc = np.maximum.accumulate if directions[0] == "maximize" else np.minimum.accumulate
        ax.plot(done["number"], y, "o", ms=3, alpha=0.6, label="trial")
        ax.plot(done["number"], acc(y), "-", label="best so far")
        ax.set_xlabel("trial")
        ax.set_ylabel(label)
    else:
        a, b = labels[0], labels[1]
        ax.plot(done[a], done[b], "o", ms=3, alpha=0.5, label="trial")
        front = done[done["number"].isin(best)].sort_values(a)
        ax.plot(front[a], front[b], "o-", color="C3", label="Pareto front")
        ax.set_xlabel(f"{a} ({directions[0]})")
        ax.set_ylabel(f"{b} ({directions[1]})")
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
        "--stream",
        type=int,
        default=None,
        help="the seed stream every trial runs on (default 1000; the reproduction report's "
        "streams, below 1000, are refused so the chosen point is judged on held-out seeds)",
    )
    add_run_options(p)
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    scenario, out = load_for_command(args, "calibrate")
    model_cls = game_model(scenario.game)
    resume = args.resume is not None
    targets = ranges = None
    if not resume:
        if args.targets is None:
            raise ConfigError("--targets: give a TOML file of [[target]] tables")
        targets = read_targets(args.targets, model_cls, scenario.game)
        ranges = parse_ranges(args.param or targets.ranges or [], model_cls)
        if args.stream is not None and (clash := seed_clash(scenario, targets, args.stream)):
            raise ConfigError(clash)
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
            stream=args.stream,
        )
    print(json.dumps(result.best, indent=2))
    print(f"\n{len(result.trials)} trials; best.json, trials.csv and the figure in {out}")
    return 0
