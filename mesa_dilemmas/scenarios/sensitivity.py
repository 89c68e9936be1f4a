"""Global sensitivity analysis of any game's run metric: ``mesa-dilemmas sensitivity``.

``mesa-dilemmas sensitivity SCENARIO --method sobol|morris --param NAME=LOW:HIGH ...
--samples N --metric M [--processes P] [--backend ray] [--out DIR] [--resume DIR]``

The open parameters (``--param``) are checked against the game's parameter schema
(:func:`~mesa_dilemmas.dilemmas.base.params_model`: a name it does not have, or a bound outside
its range, is a one-line error; an integer parameter is rounded).  SALib draws the points (Sobol:
Saltelli's scheme, N (D + 2) points; Morris: N trajectories of D + 1 points); every point runs
the scenario's ``replications`` with the scenario's seeds (common random numbers across points)
and the point's value is the mean of the run metric over them.  Points go out in blocks through
:func:`~mesa_dilemmas.scenarios.execution.map_tasks` (local pool or Ray), on the game's
vectorised engine where it has one (``batch_chunks.choose_engine``), and every finished block is
appended to ``evaluations.jsonl`` as it arrives: ``--resume DIR`` reads the design back from
``DIR`` and evaluates only the points not yet there.

Outputs in the run directory: ``design.json`` (problem, method, samples, metric, seed),
``points.npy`` (the sample), ``evaluations.jsonl``, ``indices.json`` / ``indices.csv`` (Sobol: S1,
S1_conf, ST, ST_conf; Morris: mu, mu_star, mu_star_conf, sigma, sigma_conf -- sigma's interval a
bootstrap over trajectories, as SALib does for mu*), and ``sensitivity.png``.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import build_model, params_model
from mesa_dilemmas.scenarios import execution
from mesa_dilemmas.scenarios.batch import derive_seeds
from mesa_dilemmas.scenarios.batch_chunks import vector_engine
from mesa_dilemmas.scenarios.config import ConfigError, Scenario, did_you_mean

#: points per task (each point runs the scenario's replications)
POINTS_PER_TASK = 64
CONF_LEVEL = 0.95


# -- the open parameters ---------------------------------------------------------------------


def parse_ranges(items: list[str], model_cls: type) -> dict[str, tuple[float, float]]:
    """``["NAME=LOW:HIGH", ...]`` checked against the game's schema."""
    fields = params_model(model_cls).model_fields
    out: dict[str, tuple[float, float]] = {}
    for item in items:
        name, eq, span = item.partition("=")
        low_s, colon, high_s = span.partition(":")
        if not eq or not colon:
            raise ConfigError(f"--param: {item!r} must have the form NAME=LOW:HIGH")
        name = name.strip()
        if name not in fields:
            raise ConfigError(
                f"--param: {name!r} is not a parameter of {model_cls.__name__}"
                f"{did_you_mean(name, list(fields))}"
            )
        kind = fields[name].annotation
        if kind not in (int, float):
            raise ConfigError(f"--param: {name} is {getattr(kind, '__name__', kind)}, not a number")
        try:
            low, high = float(low_s), float(high_s)
        except ValueError:
            raise ConfigError(f"--param: {item!r}: LOW and HIGH must be numbers") from None
        if not low < high:
            raise ConfigError(f"--param: {name}: LOW must be below HIGH (got {low}:{high})")
        for value in (low, high):
            check_value(model_cls, name, value)
        out[name] = (low, high)
    if not out:
        raise ConfigError("--param: give at least one NAME=LOW:HIGH")
    return out


def check_value(model_cls: type, name: str, value: float) -> None:
    """A bound outside the schema's range is a one-line error."""
    schema = params_model(model_cls)
    from pydantic import ValidationError

    info = schema.model_fields[name]
    try:
        schema.__pydantic_validator__.validate_assignment(
            schema.model_construct(), name, cast(info.annotation, value)
        )
    except ValidationError as err:
        msg = err.errors()[0]["msg"]
        raise ConfigError(f"--param: {name} = {value}: {msg}") from None


def cast(kind: Any, value: float) -> Any:
    return int(round(value)) if kind is int else float(value)


def point_kwargs(model_cls: type, names: list[str], row: np.ndarray) -> dict[str, Any]:
    fields = params_model(model_cls).model_fields
    return {n: cast(fields[n].annotation, v) for n, v in zip(names, row.tolist(), strict=True)}


# -- evaluating points -----------------------------------------------------------------------


@dataclass(frozen=True)
class PointTask:
    """A block of points: each runs ``len(seeds)`` replications; the task returns, per point,
    the mean of each metric over them."""

    game: str
    fixed: dict[str, Any]
    points: list[tuple[int, dict[str, Any]]]
    seeds: list[int]
    max_steps: int
    metrics: tuple[str, ...]
    engine: str  # "vector" or "mesa"


def choose_point_engine(model_cls: type, kwargs: list[dict[str, Any]], wanted: str) -> str:
    if wanted == "mesa":
        return "mesa"
    module = vector_engine(model_cls)
    reason = "the game has no vectorised engine" if module is None else None
    for kw in kwargs if module is not None else ():
        reason = module.unsupported(kw)
        if reason:
            break
    if reason and wanted == "vector":
        raise ConfigError(f"execution.engine: 'vector' does not apply here: {reason}")
    return "mesa" if reason else "vector"


def evaluate(task: PointTask) -> list[tuple[int, dict[str, float]]]:
    """Run a block of points (module level: the pool and Ray call it)."""
    model_cls = game_model(task.game)
    runs = []
    for index, values in task.points:
        for rep, seed in enumerate(task.seeds):
            runs.append((index, rep, {**task.fixed, **values, "rng": seed}))
    if task.engine == "vector":
        module = vector_engine(model_cls)
        assert module is not None
        numbered = [(i, rep, kw) for i, (_, rep, kw) in enumerate(runs)]
        last: dict[int, dict[str, float]] = {}
        for columns in module.run_vector(numbered, task.max_steps):
            frame = pd.DataFrame(columns)
            tail = frame.groupby("RunId", sort=True).tail(1).set_index("RunId")
            for run_id, row in tail.iterrows():
                last[int(run_id)] = {m: row[m] for m in task.metrics}
        per_run = [last[i] for i in range(len(runs))]
    else:
        per_run = []
        for _, _, kwargs in runs:
            params = {k: v for k, v in kwargs.items() if k != "rng"}
            model = build_model(model_cls, params, kwargs["rng"])
            while model.running and model.steps < task.max_steps:
                model.step()
            per_run.append({m: final_value(model, m) for m in task.metrics})
    out = []
    for k, (index, _) in enumerate(task.points):
        block = per_run[k * len(task.seeds) : (k + 1) * len(task.seeds)]
        out.append((index, {m: _mean([r[m] for r in block]) for m in task.metrics}))
    return out


def final_value(model: Any, metric: str) -> float:
    """A run metric at the end of a run: the last value its DataCollector recorded (as in
    runs.parquet), else the model's attribute."""
    dc = getattr(model, "datacollector", None)
    values = getattr(dc, "model_vars", {}).get(metric) if dc is not None else None
    value = values[-1] if values else getattr(model, metric)
    return float(value)


def _mean(values: list[Any]) -> float:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


def read_evaluations(path: Path) -> dict[int, dict[str, float]]:
    """The points already evaluated (a line cut short by a kill is ignored)."""
    done: dict[int, dict[str, float]] = {}
    if not path.exists():
        return done
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        done[int(row["index"])] = row["metrics"]
    return done


def evaluate_points(
    scenario: Scenario,
    points: list[dict[str, Any]],
    metrics: tuple[str, ...],
    log: Path,
    *,
    processes: int = 1,
    progress: bool = False,
    desc: str = "points",
    offset: int = 0,
) -> dict[int, dict[str, float]]:
    """Evaluate ``points`` (numbered ``offset + i``) not yet in ``log``, appending each finished
    block to ``log``; return every evaluated point's metrics."""
    model_cls = game_model(scenario.game)
    fixed = {**scenario.params}
    if scenario.population is not None:
        fixed["players"] = scenario.population
    done = read_evaluations(log)
    todo = [(offset + i, p) for i, p in enumerate(points) if offset + i not in done]
    if not todo:
        return done
    engine = choose_point_engine(
        model_cls, [{**fixed, **p} for _, p in todo[:1] + todo[-1:]], execution.current().engine
    )
    if engine == "vector":  # every point must be supported, not only the first and last
        engine = choose_point_engine(model_cls, [{**fixed, **p} for _, p in todo], "auto")
    seeds = derive_seeds(scenario.seed, scenario.replications)
    size = POINTS_PER_TASK if engine == "vector" else max(1, POINTS_PER_TASK // 8)
    tasks = [
        PointTask(
            scenario.game, fixed, todo[s : s + size], seeds, scenario.max_steps, metrics, engine
        )
        for s in range(0, len(todo), size)
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size:  # a line cut short by a kill: end it first
        with log.open("rb") as fh:
            fh.seek(-1, 2)
            cut = fh.read(1) != b"\n"
        if cut:
            with log.open("a") as fh:
                fh.write("\n")

    def save(_: int, result: list[tuple[int, dict[str, float]]]) -> None:
        with log.open("a") as fh:
            for index, values in result:
                fh.write(json.dumps({"index": index, "metrics": values}) + "\n")
                done[index] = values

    execution.map_tasks(
        evaluate,
        tasks,
        processes=processes,
        progress=progress,
        desc=desc,
        on_result=save,
        keep=False,
        unit="point",
        sizes=[len(t.points) for t in tasks],
    )
    return done


# -- the analysis ----------------------------------------------------------------------------


def design(method: str, ranges: dict[str, tuple[float, float]], samples: int, seed: int) -> Any:
    problem = {
        "num_vars": len(ranges),
        "names": list(ranges),
        "bounds": [list(b) for b in ranges.values()],
    }
    if method == "sobol":
        from SALib.sample import sobol

        x = sobol.sample(problem, samples, calc_second_order=False, scramble=True, seed=seed)
    else:
        from SALib.sample import morris

        x = morris.sample(problem, samples, num_levels=4, seed=seed)
    return problem, x


def analyse(
    method: str, problem: dict[str, Any], x: np.ndarray, y: np.ndarray, seed: int
) -> pd.DataFrame:
    if not np.isfinite(y).all():
        raise ValueError(f"{int((~np.isfinite(y)).sum())} points have no finite metric value")
    if method == "sobol":
        from SALib.analyze import sobol

        res = sobol.analyze(problem, y, calc_second_order=False, conf_level=CONF_LEVEL, seed=seed)
        return pd.DataFrame(
            {
                "S1": res["S1"],
                "S1_conf": res["S1_conf"],
                "ST": res["ST"],
                "ST_conf": res["ST_conf"],
            },
            index=problem["names"],
        )
    from SALib.analyze import morris

    res = morris.analyze(problem, x, y, conf_level=CONF_LEVEL, num_levels=4, seed=seed)
    frame = pd.DataFrame(
        {
            "mu": res["mu"],
            "mu_star": res["mu_star"],
            "mu_star_conf": res["mu_star_conf"],
            "sigma": res["sigma"],
        },
        index=problem["names"],
    )
    frame["sigma_conf"] = _sigma_conf(problem, x, y, seed)
    return frame


def _sigma_conf(problem: dict[str, Any], x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    """Bootstrap half-width of sigma (the s.d. of the elementary effects) over trajectories."""
    d = problem["num_vars"]
    span = np.array([b[1] - b[0] for b in problem["bounds"]])
    xs = x.reshape(-1, d + 1, d)
    ys = y.reshape(-1, d + 1)
    effects = np.full((len(xs), d), np.nan)
    for t in range(len(xs)):
        for step in range(d):
            delta = (xs[t, step + 1] - xs[t, step]) / span
            j = int(np.argmax(np.abs(delta)))
            if delta[j] != 0:
                effects[t, j] = (ys[t, step + 1] - ys[t, step]) / delta[j]
    rng = np.random.default_rng(seed)
    boots = np.array(
        [np.nanstd(effects[rng.integers(0, len(xs), len(xs))], axis=0, ddof=1) for _ in range(1000)]
    )
    from scipy.stats import norm

    return norm.ppf(0.5 + CONF_LEVEL / 2) * np.nanstd(boots, axis=0, ddof=1)


def figure(table: pd.DataFrame, method: str, title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(table), 3.4))
    pos = np.arange(len(table))
    if method == "sobol":
        ax.bar(
            pos - 0.2, table["S1"], 0.4, yerr=table["S1_conf"], capsize=3, label="first order S1"
        )
        ax.bar(pos + 0.2, table["ST"], 0.4, yerr=table["ST_conf"], capsize=3, label="total ST")
        ax.set_ylabel("Sobol index")
    else:
        ax.bar(pos - 0.2, table["mu_star"], 0.4, yerr=table["mu_star_conf"], capsize=3, label="mu*")
        ax.bar(pos + 0.2, table["sigma"], 0.4, yerr=table["sigma_conf"], capsize=3, label="sigma")
        ax.set_ylabel("elementary effect")
    ax.set_xticks(pos, table.index, rotation=20)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


@dataclass
class SensitivityResult:
    out_dir: Path
    table: pd.DataFrame
    figure: Path
    evaluated: int


def resumed(scenario: Scenario, spec: dict[str, Any]) -> Scenario:
    """The scenario as the first attempt ran it (its seed, replications, steps, params)."""
    keys = ("seed", "replications", "max_steps", "params")
    return scenario.model_copy(update={k: spec[k] for k in keys if k in spec})


def run_sensitivity(
    scenario: Scenario,
    *,
    method: str,
    ranges: dict[str, tuple[float, float]] | None,
    samples: int,
    metric: str,
    out_dir: Path,
    processes: int = 1,
    resume: bool = False,
    progress: bool = False,
) -> SensitivityResult:
    """Sample, evaluate (streamed, resumable), analyse and draw; see the module docstring."""
    model_cls = game_model(scenario.game)
    spec_path = out_dir / "design.json"
    if resume:
        if not spec_path.exists():
            raise ConfigError(f"--resume: {out_dir} holds no design.json")
        spec = json.loads(spec_path.read_text())
        method, samples, metric = spec["method"], spec["samples"], spec["metric"]
        scenario = resumed(scenario, spec)
        problem, x = spec["problem"], np.load(out_dir / "points.npy")
    else:
        if method not in ("sobol", "morris"):
            raise ConfigError(f"--method: {method!r}; allowed: sobol, morris")
        assert ranges is not None
        problem, x = design(method, ranges, samples, scenario.seed)
        out_dir.mkdir(parents=True, exist_ok=True)
        np.save(out_dir / "points.npy", x)
        spec = {
            "scenario": scenario.name,
            "game": scenario.game,
            "method": method,
            "samples": samples,
            "metric": metric,
            "problem": problem,
            "seed": scenario.seed,
            "replications": scenario.replications,
            "max_steps": scenario.max_steps,
            "params": scenario.params,
        }
        spec_path.write_text(json.dumps(spec, indent=2, default=str) + "\n")
        (out_dir / "evaluations.jsonl").unlink(missing_ok=True)
    known = getattr(model_cls, "RUN_METRICS", None)
    if known and metric not in known:
        raise ConfigError(
            f"--metric: {metric!r} is not a run metric of {scenario.game}"
            f"{did_you_mean(metric, list(known))}"
        )
    names = problem["names"]
    points = [point_kwargs(model_cls, names, row) for row in x]
    done = evaluate_points(
        scenario,
        points,
        (metric,),
        out_dir / "evaluations.jsonl",
        processes=processes,
        progress=progress,
        desc=f"{method} points",
    )
    y = np.array([done[i][metric] for i in range(len(points))], dtype=float)
    table = analyse(method, problem, x, y, scenario.seed)
    table.index.name = "parameter"
    table.to_csv(out_dir / "indices.csv")
    (out_dir / "indices.json").write_text(
        json.dumps(
            {
                "method": method,
                "metric": metric,
                "points": len(points),
                "conf_level": CONF_LEVEL,
                "indices": table.to_dict(orient="index"),
            },
            indent=2,
        )
        + "\n"
    )
    title = f"{scenario.name}: {method} indices of {metric}\n({len(points)} points x {scenario.replications} runs)"
    fig = figure(table, method, title, out_dir / "sensitivity.png")
    return SensitivityResult(out_dir, table, fig, len(points))


# -- the command -----------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "sensitivity",
        help="global sensitivity (Sobol or Morris) of a run metric to open parameters",
    )
    p.add_argument("scenario", help="a bundled scenario name or a TOML file")
    p.add_argument("--method", choices=("sobol", "morris"), default="sobol")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=LOW:HIGH",
        help="an open parameter and its range (repeat)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=64,
        help="Sobol: N (N (D+2) points, a power of 2); Morris: trajectories",
    )
    p.add_argument("--metric", required=False, help="the run metric to explain")
    add_run_options(p)
    p.set_defaults(func=cmd_sensitivity)


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options ``sensitivity`` and ``calibrate`` share: --set, where the points run, where
    the study is written (or resumed) and the progress bar."""
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field (replications=8, max_steps=50, ...)",
    )
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--backend", choices=("local", "ray"), default=None)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=None)
    where.add_argument("--resume", type=Path, default=None, metavar="DIR")
    p.add_argument("--no-progress", action="store_true")


def load_for_command(args: argparse.Namespace, kind: str) -> tuple[Scenario, Path]:
    """The scenario (with ``--set``) and the output directory of a sensitivity/calibrate run."""
    import time

    from mesa_dilemmas.scenarios.config import load_scenario

    scenario, _ = load_scenario(args.scenario, args.set or [])
    out = (
        args.resume
        or args.out
        or Path("runs")
        / f"{kind}-{scenario.name.replace('/', '-')}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    return scenario, Path(out)


def execution_for(scenario: Scenario, args: argparse.Namespace) -> Any:
    from mesa_dilemmas.scenarios.config import execution_settings

    settings = execution_settings(scenario)
    if args.backend:
        settings = settings.model_copy(update={"backend": args.backend})
    return execution.use(settings, args.processes)


def cmd_sensitivity(args: argparse.Namespace) -> int:
    scenario, out = load_for_command(args, "sensitivity")
    model_cls = game_model(scenario.game)
    resume = args.resume is not None
    ranges = None if resume else parse_ranges(args.param, model_cls)
    if not resume and not args.metric:
        raise ConfigError("--metric: name the run metric to explain")
    with execution_for(scenario, args):
        result = run_sensitivity(
            scenario,
            method=args.method,
            ranges=ranges,
            samples=args.samples,
            metric=args.metric or "",
            out_dir=out,
            processes=args.processes,
            resume=resume,
            progress=not args.no_progress,
        )
    print(result.table.round(4).to_string())
    print(f"\n{result.evaluated} points; indices, points and figure in {result.out_dir}")
    return 0
