"""Benchmark: the fishery beta x growth sweep with 1 and 2 processes, side by side.

Usage: python benchmarks/bench_fishery.py [--replications N] [--processes 1 2]
Prints model steps per second for each process count and the speed-up over one
process, plus the per-round cost of one model (no batch machinery).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.scenarios.runner import run_scenario


def single_model_cost(rounds: int = 2000) -> float:
    model = FisheryModel(stop_at_collapse=False, growth_rate=0.8, rng=1)
    start = time.perf_counter()
    for _ in range(rounds):
        model.step()
    return (time.perf_counter() - start) / rounds


def sweep(processes: int, replications: int, out: Path) -> tuple[int, float]:
    start = time.perf_counter()
    run_scenario(
        "fishery/beta_growth_sweep",
        out_dir=out,
        processes=processes,
        overrides=[f"replications={replications}"],
        progress=False,
    )
    wall = time.perf_counter() - start
    steps = pd.read_parquet(out / "steps.parquet", columns=["Step"])
    return int((steps["Step"] > 0).sum()), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--replications", type=int, default=20, help="runs per cell (the scenario uses 100)"
    )
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    per_round = single_model_cost()
    print(
        f"one FisheryModel (10 villagers): {per_round * 1e3:.3f} ms per round "
        f"({1 / per_round:,.0f} rounds/s)"
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.processes:
            steps, wall = sweep(p, args.replications, Path(tmp) / f"p{p}")
            results[p] = (steps, wall)
    base_steps, base_wall = results[args.processes[0]]
    print(f"\nfishery/beta_growth_sweep, 63 cells x {args.replications} replications")
    print(
        f"{'processes':>9} {'runs':>6} {'steps':>9} {'wall s':>8} {'steps/s':>10} {'speed-up':>9}"
    )
    runs = 63 * args.replications
    for p, (steps, wall) in results.items():
        print(
            f"{p:>9} {runs:>6} {steps:>9} {wall:>8.1f} {steps / wall:>10,.0f} {base_wall / wall:>8.2f}x"
        )


if __name__ == "__main__":
    main()
