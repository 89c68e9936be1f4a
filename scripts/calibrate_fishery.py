"""Command line of the fishery calibration (:mod:`mesa_dilemmas.dilemmas.fishery.calibration`).

Usage:
  python scripts/calibrate_fishery.py search [--candidates 24] [--reps 30] [--seed 7] [--processes 2]
  python scripts/calibrate_fishery.py robustness [--reps 30] [--processes 2] [key=value ...]
  python scripts/calibrate_fishery.py check [--reps 30] [key=value ...]

``search`` scores the defaults and ``--candidates`` random points of the search box and prints
them best first; ``robustness`` moves each open parameter by -25% and +25% around the given point
(default: the model's defaults) and prints, per finding, how much of that neighbourhood keeps the
paper's direction; ``check`` prints one point's effects.  The objective and the four effects are
described in the module.  Results: docs/fishery.md ("One calibration, and how robust each
finding is").
"""

from __future__ import annotations

import argparse
import tomllib
from typing import Any

from mesa_dilemmas.dilemmas.fishery.calibration import (
    FINDINGS,
    effects,
    objective,
    robustness,
    search,
)


def show(label: str, params: dict[str, Any], z: dict[str, float]) -> None:
    point = " ".join(f"{k}={v:.3g}" for k, v in params.items())
    zs = " ".join(f"{k}={z[k]:+6.2f}" for k in FINDINGS)
    print(f"{label:>24} objective={objective(z):5.2f}  {zs}  | {point}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("search", "robustness", "check"))
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument(
        "params", nargs="*", help="FisheryModel parameters, key=value (TOML values)"
    )
    args = parser.parse_intermixed_args()
    params = {k: tomllib.loads(f"v = {v}")["v"] for k, v in (p.split("=", 1) for p in args.params)}
    if args.command == "search":
        scored = search(args.candidates, args.reps, args.seed, args.processes)
        for label, p, z in scored:
            show(label, p, z)
        print("best first:")
        for label, p, z in sorted(scored, key=lambda s: -objective(s[2]))[:5]:
            show(label, p, z)
    elif args.command == "robustness":
        r = robustness(args.reps, params, args.processes)
        show("centre", r.centre, r.centre_effects)
        for label, p, z in r.neighbours:
            show(label, p, z)
        n = len(r.neighbours)
        print(f"neighbourhood: {n} points (each open parameter x0.75 and x1.25)")
        for f in FINDINGS:
            print(
                f"  {f:>6}: direction holds in {r.held(f)}/{n}, "
                f"significant (z > 1.64) in {r.significant(f)}/{n}"
            )
    else:
        show("point", params, effects(args.reps, params))


if __name__ == "__main__":
    main()
