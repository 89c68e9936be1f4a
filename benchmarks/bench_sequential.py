"""Benchmark: sequential stopping (``run --until``) on rule players -- type-I error and runs saved.

Usage: python benchmarks/bench_sequential.py [--pool 2000] [--mars 300] [--studies 4000]
       [--looks 5 10] [--powers 0.8 0.9 0.95] [--no-run]

* pools (free: rule players, no LLM): the fishery's survival times at r = 0.3 with a weak fine
  (beta = 2) and a stronger one (beta = 8), ``--pool`` runs each on the vectorised engine (a
  known effect); Port of Mars with the meeting (``--mars`` games: survival, a 0/1 outcome,
  and the final port health, a mean);
* type-I error: ``--studies`` null studies per design (both arms resampled from one pool),
  each run look by look to the cap with the design's Lan-DeMets boundaries (O'Brien-Fleming-
  and Pocock-type, 5 and 10 looks), with its 95% Clopper-Pearson interval; beside it naive
  testing at 1.96 after every batch, on the same studies;
* runs saved: for each power in ``--powers``, the fixed design's replications per arm (by
  simulation), the group-sequential design of that power (its maximum from the normal theory's
  inflation factor), ``--studies`` studies of the known effect: the power they showed, the mean
  replications they used, the replications a fixed design needs for that same power, and the
  saving;
* one real ``mesa-dilemmas run --until`` of the fishery contrast (unless ``--no-run``): where it
  stopped and what it ran against the fixed design.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from mesa_dilemmas.scenarios.power import n_by_simulation, run_rule_standin
from mesa_dilemmas.scenarios.runner import default_out_dir, run_scenario
from mesa_dilemmas.scenarios.sequential import Spec, plan, run_until, simulate_studies

FISHERY = ("fishery/beta_growth_sweep", ["grid.growth_rate=[0.3]", "grid.penalty=[2.0,8.0]"])
MARS = ("port_of_mars/communication", ["grid.meeting=[true]"])


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def pools(n_fishery: int, n_mars: int) -> dict[str, tuple[str, np.ndarray, np.ndarray | None]]:
    """name -> (outcome kind, reference pool, effect pool or None)."""
    start = time.perf_counter()
    runs = run_rule_standin(*FISHERY, replications=n_fishery)
    weak = runs.loc[np.isclose(runs.penalty, 2.0), "survival_time"].to_numpy(float)
    strong = runs.loc[np.isclose(runs.penalty, 8.0), "survival_time"].to_numpy(float)
    print(
        f"fishery pools: {len(runs)} runs in {time.perf_counter() - start:.1f} s ({load()}); "
        f"survival at r=0.3: beta=2 {weak.mean():.1f} +- {weak.std(ddof=1):.1f}, "
        f"beta=8 {strong.mean():.1f} +- {strong.std(ddof=1):.1f} rounds "
        f"(at the 100-round cap: {np.mean(weak >= 100):.1%}, {np.mean(strong >= 100):.1%})",
        flush=True,
    )
    out = {"fishery survival_time (Mann-Whitney)": ("survival", weak, strong)}
    if n_mars:
        start = time.perf_counter()
        mars = run_rule_standin(*MARS, replications=n_mars)
        survived = mars["survived"].to_numpy(float)
        health = mars["port_health"].to_numpy(float)
        print(
            f"Port of Mars pool: {len(mars)} games in {time.perf_counter() - start:.1f} s; "
            f"survived {survived.mean():.1%}, final port health {health.mean():.1f} "
            f"+- {health.std(ddof=1):.1f}",
            flush=True,
        )
        out["port_of_mars survived (two-proportion z)"] = ("proportion", survived, None)
        out["port_of_mars port_health (Welch t)"] = ("mean", health, None)
    return out


def type_one(data: dict, studies: int, looks: list[int]) -> None:
    print(f"\ntype-I error over {studies:,} null studies per design (two-sided alpha = 0.05)")
    head = f"{'outcome':42s} {'design':22s} {'rejected':>9s} {'rate':>7s} {'95% CI':>17s}"
    print(head)
    for name, (kind, pool, _) in data.items():
        for k in looks:
            batch = 10 if k == 5 else 5
            for spending in ("obf", "pocock", "naive 1.96"):
                spec = Spec(
                    batch * k, batch, 0.05, "obf" if spending.startswith("naive") else spending
                )
                bounds = [1.96] * k if spending.startswith("naive") else None
                found = simulate_studies(
                    pool, pool, spec, kind, studies, seed=100 + k, bounds=bounds
                )
                low, high = proportion_confint(found.rejected, studies, 0.05, method="beta")
                label = f"{spending}, {k} looks of {batch}"
                print(
                    f"{name:42s} {label:22s} {found.rejected:9d} {found.rate:7.3f} "
                    f"{f'[{low:.3f}, {high:.3f}]':>17s}",
                    flush=True,
                )


def savings(data: dict, studies: int, looks: list[int], powers: list[float]) -> dict:
    kind, weak, strong = data["fishery survival_time (Mann-Whitney)"]
    print(
        f"\nruns saved on the known effect (fishery survival, beta = 8 vs 2 at r = 0.3), "
        f"{studies:,} studies per design"
    )
    print(
        f"{'power':>5s} {'fixed n':>7s} {'design':18s} {'max n':>5s} {'power seen':>10s} "
        f"{'mean n':>7s} {'fixed n, same power':>19s} {'saving':>7s}"
    )
    chosen = {}
    for target in powers:
        fixed = n_by_simulation(strong, weak, target, 0.05, seed=1, sims=4000)
        for spending in ("obf", "pocock"):
            for k in looks:
                design = plan(fixed, target, 0.05, spending, k)
                batch = math.ceil(design.max / k)
                spec = Spec(batch * k, batch, 0.05, spending)
                found = simulate_studies(strong, weak, spec, kind, studies, seed=7)
                equal = n_by_simulation(
                    strong, weak, min(found.rate, 0.995), 0.05, seed=2, sims=4000
                )
                saving = 1 - found.mean_n / equal
                print(
                    f"{target:5.2f} {fixed:7d} {f'{spending}, {k} looks':18s} {spec.max:5d} "
                    f"{found.rate:10.3f} {found.mean_n:7.1f} {equal:19d} {saving:7.1%}",
                    flush=True,
                )
                chosen[(target, spending, k)] = (spec, fixed)
    return chosen


def real_run(spec: Spec, fixed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sequential-") as tmp:
        start = time.perf_counter()
        outcome = run_until(
            FISHERY[0],
            spec.text(),
            out_dir=Path(tmp) / "run",
            overrides=FISHERY[1],
            run=run_scenario,
            default_out=default_out_dir,
            progress=False,
        )
        wall = time.perf_counter() - start
    last = outcome.looks[-1].contrasts[0]
    print(
        f"\none real run --until {spec.text()} on {FISHERY[0]} ({' '.join(FISHERY[1])}): "
        f"stopped at look {outcome.stopped_at} of {len(spec.looks())}, "
        f"{outcome.n_per_cell} replications per cell ({outcome.runs} runs) against {fixed} per cell "
        f"({2 * fixed} runs) for the fixed design; z = {last['z']:+.2f} against {last['boundary']:.3f}; "
        f"{wall:.1f} s ({load()})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pool", type=int, default=2000, help="fishery runs per arm")
    ap.add_argument("--mars", type=int, default=300, help="Port of Mars games (0: none)")
    ap.add_argument("--studies", type=int, default=4000, help="simulated studies per design")
    ap.add_argument("--looks", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--powers", type=float, nargs="+", default=[0.8, 0.9, 0.95])
    ap.add_argument("--no-run", action="store_true", help="skip the real run --until")
    args = ap.parse_args()
    started = time.perf_counter()
    print(f"bench_sequential: {load()}", flush=True)
    data = pools(args.pool, args.mars)
    type_one(data, args.studies, args.looks)
    chosen = savings(data, args.studies, args.looks, args.powers)
    if not args.no_run:
        target = 0.9 if 0.9 in args.powers else args.powers[0]
        spec, fixed = chosen[(target, "pocock", args.looks[0])]
        real_run(spec, fixed)
    print(f"\ntotal {time.perf_counter() - started:.0f} s ({load()})")


if __name__ == "__main__":
    main()
