"""Check a fishery parameter set against the paper's three validation findings.

Usage: python scripts/calibrate_fishery.py [--runs 40] [--only grid,shock,altruism] [key=value ...]

The key=value pairs are FisheryModel parameters applied on top of the defaults
(the altruism check also applies the overrides of the bundled altruism scenario
unless you pass your own). It prints:

* grid     -- survival time at r in {0.3, 0.5, 0.7} x beta in {2, 10, 18}, with what
              ended each run (stock collapse, death of a punished villager, starvation);
* shock    -- compliance over t = 16..25 and stock at t = 35, punishment kept vs off at t = 15
              (paired Wilcoxon p-value, same seeds);
* altruism -- survival per altruism ratio in the harsh and rich lake.

This is how the defaults in FisheryModel and the scenario files were chosen (docs/fishery.md).
"""

from __future__ import annotations

import argparse
import tomllib
from typing import Any

import numpy as np
from scipy import stats

from mesa_dilemmas.dilemmas.fishery import FisheryModel
from mesa_dilemmas.scenarios.config import load_raw

HORIZON = 100


def play(seed: int, steps: int = HORIZON, **params: Any) -> FisheryModel:
    model = FisheryModel(rng=seed, **params)
    while model.running and model.round < steps:
        model.step()
    return model


def cause(model: FisheryModel) -> str:
    if not model.collapsed:
        return "survived"
    if model.stock <= model.collapse_threshold:
        return "stock"
    dead = np.flatnonzero(~model.alive)
    return "punished_death" if model.punished[dead].sum() else "starved"


def check_grid(runs: int, params: dict[str, Any]) -> None:
    for r in (0.3, 0.5, 0.7):
        for beta in (2.0, 10.0, 18.0):
            models = [play(100 + s, penalty=beta, growth_rate=r, **params) for s in range(runs)]
            t = np.array([m.survival_time for m in models])
            causes = {c: sum(cause(m) == c for m in models) for c in ("stock", "punished_death", "starved")}
            print(f"grid r={r} beta={beta:4.1f}: T={t.mean():5.1f}±{t.std(ddof=1) / np.sqrt(runs):.1f} {causes}")


def check_shock(runs: int, params: dict[str, Any]) -> None:
    for beta in (10.0, 14.0):
        compliance, stock = {}, {}
        for off in (0, 15):
            frames = [
                play(3000 + s, 36, penalty=beta, punishment_off_at=off, stop_at_collapse=False, **params)
                .datacollector.get_model_vars_dataframe()
                for s in range(runs)
            ]
            compliance[off] = np.array([f["compliance"].iloc[16:26].mean() for f in frames])
            stock[off] = np.array([f["stock"].iloc[35] for f in frames])
        p_c = stats.wilcoxon(compliance[0], compliance[15], alternative="greater").pvalue
        p_s = stats.wilcoxon(stock[0], stock[15], alternative="greater").pvalue
        print(f"shock beta={beta:4.1f}: compliance {compliance[0].mean():.3f} -> {compliance[15].mean():.3f} "
              f"(p={p_c:.2g}); stock at t=35 {stock[0].mean():.0f} -> {stock[15].mean():.0f} (p={p_s:.2g})")


def check_altruism(runs: int, params: dict[str, Any]) -> None:
    for r in (0.2, 0.6):
        cells = []
        for ratio in (0.0, 0.5, 1.0):
            t = np.array([play(500 + s, population="typed", altruism_ratio=ratio, growth_rate=r, **params)
                          .survival_time for s in range(runs)])
            cells.append(f"altruists {ratio:.0%}: T={t.mean():5.1f}±{t.std(ddof=1) / np.sqrt(runs):.1f}")
        print(f"altruism r={r}: " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--only", default="grid,shock,altruism")
    parser.add_argument("params", nargs="*", help="FisheryModel parameters, key=value (TOML values)")
    args = parser.parse_args()
    params = {k: tomllib.loads(f"v = {v}")["v"] for k, v in (p.split("=", 1) for p in args.params)}
    if "grid" in args.only:
        check_grid(args.runs, params)
    if "shock" in args.only:
        check_shock(args.runs, params)
    if "altruism" in args.only:
        scenario = load_raw("fishery/altruism")["params"]
        overrides = {k: v for k, v in scenario.items() if k not in ("population",)}
        check_altruism(args.runs, params or overrides)


if __name__ == "__main__":
    main()
