"""One calibration of the fishery's open parameters against paper 003's three validation findings,
and the robustness of each finding around it.

Usage:
  python scripts/calibrate_fishery.py search [--candidates 24] [--reps 30] [--seed 7]
  python scripts/calibrate_fishery.py robustness [--reps 30] [key=value ...]
  python scripts/calibrate_fishery.py check [--reps 30] [key=value ...]

The paper fixes N, K, r, gamma, beta and the initial strategy ranges (Table 3); the parameters it
leaves open are ``OPEN`` below.  Each finding is measured as a signed, standardised effect (a
t-like statistic: mean difference / its standard error, positive = the paper's direction):

  shock     Fig. 2: punishment switched off at t = 15 (beta 10 and 14, paired runs with common
            random numbers).  min(z of [mean effort t16-25, off - kept],
                                  z of [stock at t = 35, kept - off]).
  beta      Fig. 3: at moderate growth (r = 0.3 and 0.5), survival with beta = 18 minus beta = 2
            (Welch).  min over the two r.
  harsh     Fig. 12, r = 0.2: all-altruistic survival minus the better of mixed / all-selfish.
  rich      Fig. 12, r = 0.6: the better of mixed / all-selfish minus all-altruistic.

Objective (maximised): sum over the four effects of z clipped to [-3, 3] -- a finding counts fully
once it is clearly in the paper's direction (z = 3) or clearly against it (z = -3), so no single
large effect can buy off (or sink) the others.  Range -12 .. 12.

``search`` scores the defaults and ``--candidates`` random draws from the search box (seeded),
with the same seeds for every candidate, and prints them best first.  ``robustness`` moves each
open parameter by -25% and +25% around the given point (default: the model's defaults) and
reports, per finding, the fraction of those 2 x len(OPEN) neighbours where its effect is > 0
(direction holds) and where z > 1.64 (one-sided p < 0.05).  ``check`` prints one point's effects.
The results are in docs/fishery.md ("Calibration and robustness").
"""

from __future__ import annotations

import argparse
import tomllib
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.fishery import FisheryModel

#: the open parameters: (model default, search low, search high)
OPEN: dict[str, tuple[float, float, float]] = {
    "catchability": (0.04, 0.02, 0.06),
    "consumption": (1.0, 0.5, 3.0),
    "initial_wealth": (100.0, 20.0, 150.0),
    "collapse_threshold": (15.0, 5.0, 60.0),
    "monitoring_min": (0.5, 0.0, 0.9),
    "selection_strength": (1.0, 0.25, 2.0),
    "revision_rate": (0.3, 0.1, 0.5),
}
FINDINGS = ("shock", "beta", "harsh", "rich")
HORIZON = 100


def play(seed: int, steps: int = HORIZON, **params: Any) -> FisheryModel:
    model = FisheryModel(rng=seed, **params)
    while model.running and model.round < steps:
        model.step()
    return model


def paired_z(d: np.ndarray) -> float:
    sd = d.std(ddof=1)
    return float(d.mean() / (sd / np.sqrt(len(d)))) if sd > 0 else float(np.sign(d.mean()) * 10)


def welch_z(a: np.ndarray, b: np.ndarray) -> float:
    se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return float((a.mean() - b.mean()) / se) if se > 0 else float(np.sign(a.mean() - b.mean()) * 10)


def shock_effect(reps: int, params: dict[str, Any]) -> float:
    effort, stock = [], []
    for beta in (10.0, 14.0):
        for s in range(reps):
            frames = {
                off: play(
                    3000 + s,
                    36,
                    penalty=beta,
                    punishment_off_at=off,
                    stop_at_collapse=False,
                    **params,
                ).datacollector.get_model_vars_dataframe()
                for off in (0, 15)
            }
            effort.append(
                frames[15]["mean_effort"].iloc[16:26].mean()
                - frames[0]["mean_effort"].iloc[16:26].mean()
            )
            stock.append(frames[0]["stock"].iloc[35] - frames[15]["stock"].iloc[35])
    return min(paired_z(np.nan_to_num(np.array(effort))), paired_z(np.array(stock)))


def beta_effect(reps: int, params: dict[str, Any]) -> float:
    z = []
    for r in (0.3, 0.5):
        t = {
            b: np.array(
                [
                    play(100 + s, penalty=b, growth_rate=r, **params).survival_time
                    for s in range(reps)
                ]
            )
            for b in (2.0, 18.0)
        }
        z.append(welch_z(t[18.0], t[2.0]))
    return min(z)


def altruism_effects(reps: int, params: dict[str, Any]) -> tuple[float, float]:
    out = []
    for r in (0.2, 0.6):
        t = {
            a: np.array(
                [
                    play(
                        500 + s, population="typed", altruism_ratio=a, growth_rate=r, **params
                    ).survival_time
                    for s in range(reps)
                ]
            )
            for a in (0.0, 0.5, 1.0)
        }
        if r == 0.2:
            out.append(min(welch_z(t[1.0], t[0.0]), welch_z(t[1.0], t[0.5])))
        else:
            out.append(max(welch_z(t[0.0], t[1.0]), welch_z(t[0.5], t[1.0])))
    return out[0], out[1]


def effects(reps: int, params: dict[str, Any]) -> dict[str, float]:
    harsh, rich = altruism_effects(reps, params)
    return {
        "shock": shock_effect(2 * reps, params),
        "beta": beta_effect(reps, params),
        "harsh": harsh,
        "rich": rich,
    }


def objective(z: dict[str, float]) -> float:
    return float(sum(min(max(v, -3.0), 3.0) for v in z.values()))


def show(label: str, params: dict[str, Any], z: dict[str, float]) -> None:
    point = " ".join(f"{k}={v:.3g}" for k, v in params.items())
    zs = " ".join(f"{k}={z[k]:+6.2f}" for k in FINDINGS)
    print(f"{label:>10} objective={objective(z):5.2f}  {zs}  | {point}", flush=True)


def search(candidates: int, reps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    points = [{k: v[0] for k, v in OPEN.items()}]
    points += [
        {k: float(rng.uniform(lo, hi)) for k, (_, lo, hi) in OPEN.items()}
        for _ in range(candidates)
    ]
    scored = []
    for i, p in enumerate(points):
        z = effects(reps, p)
        show("defaults" if i == 0 else f"cand {i}", p, z)
        scored.append((objective(z), i, p, z))
    print("best first:")
    for _, i, p, z in sorted(scored, key=lambda s: -s[0])[:5]:
        show("defaults" if i == 0 else f"cand {i}", p, z)


def robustness(reps: int, centre: dict[str, Any]) -> None:
    base = {k: centre.get(k, v[0]) for k, v in OPEN.items()}
    show("centre", base, effects(reps, base))
    rows = []
    for name in OPEN:
        for factor in (0.75, 1.25):
            p = {**base, name: base[name] * factor}
            if name == "monitoring_min":
                p[name] = min(p[name], 1.0)
            z = effects(reps, p)
            show(f"{name[:6]}x{factor}", p, z)
            rows.append(z)
    print(f"neighbourhood: {len(rows)} points (each open parameter x0.75 and x1.25)")
    for f in FINDINGS:
        held = np.mean([z[f] > 0 for z in rows])
        sig = np.mean([z[f] > 1.64 for z in rows])
        print(f"  {f:>6}: direction holds in {held:.0%}, significant (z > 1.64) in {sig:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("search", "robustness", "check"))
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "params", nargs="*", help="FisheryModel parameters, key=value (TOML values)"
    )
    args = parser.parse_intermixed_args()
    params = {k: tomllib.loads(f"v = {v}")["v"] for k, v in (p.split("=", 1) for p in args.params)}
    if args.command == "search":
        search(args.candidates, args.reps, args.seed)
    elif args.command == "robustness":
        robustness(args.reps, params)
    else:
        show("point", params, effects(args.reps, params))


if __name__ == "__main__":
    main()
