"""Benchmark: the fishery beta x growth sweep (fishery/beta_growth_sweep's 63 cells), Mesa model
vs the vectorised engine (``dilemmas/fishery/vector.py``) on one core, and process counts.

Usage: python benchmarks/bench_fishery.py [--replications N] [--mesa-replications N]
       [--rounds 2] [--chunks 1 10] [--processes 1 2]

* engines: model steps per second of the sweep with one process, measured A B A B (Mesa,
  vector, Mesa, vector) in one run, each measurement a fresh process; the ratio printed per
  pair, with the machine's load average before each measurement (os.getloadavg).  Rates are
  given per wall second and per CPU second (this process and its children): on a shared
  machine other jobs stretch the wall time, the CPU time much less, so the ratio is taken
  on CPU time;
* memory: peak RSS of the vector sweep at two chunk sizes (replications of every cell per
  chunk), so that memory is seen to stay flat in runs per chunk-count, not in runs overall;
* processes (``--processes``): the Mesa sweep with 1 and 2 processes, side by side;
* the per-round cost of one model (no batch machinery).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.scenarios.runner import run_scenario

CELLS = 63


def single_model_cost(rounds: int = 2000) -> float:
    model = FisheryModel(stop_at_collapse=False, growth_rate=0.8, rng=1)
    start = time.perf_counter()
    for _ in range(rounds):
        model.step()
    return (time.perf_counter() - start) / rounds


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], int]) -> tuple[int, float, float]:
    """(fn's model steps, wall seconds, CPU seconds)."""
    cpu, start = cpu_seconds(), time.perf_counter()
    steps = fn()
    return steps, time.perf_counter() - start, cpu_seconds() - cpu


def sweep(
    processes: int, replications: int, out: Path, engine: str = "mesa", per_chunk: int = 0
) -> tuple[int, float]:
    overrides = [f"replications={replications}", f"execution.engine={engine}"]
    if per_chunk:
        overrides.append(f"options.replications_per_chunk={per_chunk}")
    start = time.perf_counter()
    run_scenario(
        "fishery/beta_growth_sweep",
        out_dir=out,
        processes=processes,
        overrides=overrides,
        progress=False,
    )
    wall = time.perf_counter() - start
    steps = pd.read_parquet(out / "steps.parquet", columns=["Step"])
    return int((steps["Step"] > 0).sum()), wall


def engine_only(engine: str, replications: int) -> tuple[int, float, float]:
    """The sweep's runs as one chunk through ``run_batch_chunk`` (no runner, no parquet);
    returns (steps, wall, CPU seconds)."""
    from mesa_dilemmas.scenarios.batch import derive_seeds
    from mesa_dilemmas.scenarios.batch_chunks import make_chunk, run_batch_chunk
    from mesa_dilemmas.scenarios.config import load_scenario

    scenario, _ = load_scenario("fishery/beta_growth_sweep", [])
    seeds = derive_seeds(scenario.seed, replications)
    parameters = {**{k: [v] for k, v in scenario.params.items()}, **scenario.grid}
    chunk = make_chunk(
        0,
        range(CELLS * replications),
        game="fishery",
        parameters=parameters,
        n_cells=CELLS,
        seeds=seeds,
        max_steps=scenario.max_steps,
        engine=engine,
    )
    return timed(lambda: int((run_batch_chunk(chunk)["Step"] > 0).sum()))


def one(engine: str, replications: int, per_chunk: int) -> None:
    """One measurement in this (fresh) process: prints JSON steps, wall, CPU seconds, peak RSS.
    ``per_chunk`` < 0: the engine alone (one chunk, no runner)."""
    if per_chunk < 0:
        steps, wall, cpu = engine_only(engine, replications)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            cpu = cpu_seconds()
            steps, wall = sweep(1, replications, Path(tmp) / "out", engine, per_chunk)
            cpu = cpu_seconds() - cpu
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    print(json.dumps({"steps": steps, "wall": wall, "cpu": cpu, "rss_mb": peak / 1024}))


def measure(engine: str, replications: int, per_chunk: int = 0) -> dict[str, float]:
    load = os.getloadavg()[0]
    cmd = [sys.executable, __file__, "--one", engine, str(replications), str(per_chunk)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result["load"] = load
    result["rate"] = result["steps"] / result["wall"]
    result["cpu_rate"] = result["steps"] / result["cpu"]
    return result


def ab_pairs(args: argparse.Namespace, per_chunk: int, label: str) -> None:
    """Mesa and vector measured in turn, ``args.rounds`` pairs; ratios on CPU and wall time."""
    print(
        f"{'pair':>4} {'engine':>7} {'runs':>6} {'steps':>8} {'wall s':>7} {'steps/s':>9} "
        f"{'CPU s':>6} {'steps/CPU s':>11} {'load':>5} {'RSS MB':>7}   ratio CPU (wall)"
    )
    cpu_ratios, wall_ratios = [], []
    for pair in range(args.rounds):
        mesa = measure("mesa", args.mesa_replications, per_chunk)
        vec = measure("vector", args.replications, per_chunk)
        cpu_ratios.append(vec["cpu_rate"] / mesa["cpu_rate"])
        wall_ratios.append(vec["rate"] / mesa["rate"])
        for name, r, reps in (
            ("mesa", mesa, args.mesa_replications),
            ("vector", vec, args.replications),
        ):
            print(
                f"{pair + 1:>4} {name:>7} {CELLS * reps:>6} {r['steps']:>8} {r['wall']:>7.2f} "
                f"{r['rate']:>9,.0f} {r['cpu']:>6.2f} {r['cpu_rate']:>11,.0f} {r['load']:>5.2f} "
                f"{r['rss_mb']:>7.0f}"
                + (f"   {cpu_ratios[-1]:.1f}x ({wall_ratios[-1]:.1f}x)" if name == "vector" else "")
            )
    print(
        f"vector / mesa{label}, CPU time: {', '.join(f'{r:.1f}x' for r in cpu_ratios)}; "
        f"wall time: {', '.join(f'{r:.1f}x' for r in wall_ratios)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--replications",
        type=int,
        default=20,
        help="runs per cell for the vector engine (the scenario uses 100)",
    )
    parser.add_argument(
        "--mesa-replications",
        type=int,
        default=2,
        help="runs per cell for the Mesa model (its rate does not depend on it)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="A B pairs")
    parser.add_argument(
        "--chunks",
        type=int,
        nargs=2,
        default=[1, 10],
        help="two chunk sizes (replications of every cell per chunk) for RSS",
    )
    parser.add_argument(
        "--processes",
        type=int,
        nargs="*",
        default=[],
        help="also time the Mesa sweep with these process counts",
    )
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one[0], int(args.one[1]), int(args.one[2]))
        return

    print(
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"({os.cpu_count()} cores)"
    )
    per_round = single_model_cost()
    print(
        f"one FisheryModel (10 villagers): {per_round * 1e3:.3f} ms per round "
        f"({1 / per_round:,.0f} rounds/s)\n"
    )

    print(f"fishery/beta_growth_sweep, {CELLS} cells, one process: model steps per second, A B A B")
    ab_pairs(args, per_chunk=0, label="")
    print("\nthe engines alone (the sweep's runs as one chunk, no runner or parquet), A B A B")
    ab_pairs(args, per_chunk=-1, label=" (engines alone)")

    print("\npeak memory of the vector sweep by chunk size (replications of every cell per chunk)")
    print(
        f"{'per chunk':>9} {'runs/chunk':>10} {'runs':>6} {'steps/s':>9} {'steps/CPU s':>11} "
        f"{'load':>5} {'RSS MB':>7}"
    )
    for per_chunk in args.chunks:
        r = measure("vector", args.replications, per_chunk)
        print(
            f"{per_chunk:>9} {per_chunk * CELLS:>10} {CELLS * args.replications:>6} "
            f"{r['rate']:>9,.0f} {r['cpu_rate']:>11,.0f} {r['load']:>5.2f} "
            f"{r['rss_mb']:>7.0f}"
        )

    if args.processes:
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            for p in args.processes:
                results[p] = sweep(p, args.mesa_replications, Path(tmp) / f"p{p}")
        base_wall = results[args.processes[0]][1]
        print(f"\nMesa sweep by processes, {args.mesa_replications} replications")
        print(f"{'processes':>9} {'steps':>9} {'wall s':>8} {'steps/s':>10} {'speed-up':>9}")
        for p, (steps, wall) in results.items():
            print(
                f"{p:>9} {steps:>9} {wall:>8.1f} {steps / wall:>10,.0f} {base_wall / wall:>8.2f}x"
            )


if __name__ == "__main__":
    main()
