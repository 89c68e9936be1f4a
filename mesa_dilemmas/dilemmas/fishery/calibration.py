"""One calibration of the fishery's open parameters against paper 003's three validation findings,
and the robustness of each finding around it (``scripts/calibrate_fishery.py`` is its command line;
``mesa-dilemmas reproduce`` reports the robustness next to each finding).

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

:func:`search` scores the defaults and random draws from the search box (seeded), with the same
seeds for every candidate.  :func:`robustness` moves each open parameter by -25% and +25% around
a point (default: the model's defaults) and reports, per finding, the share of those
2 x len(OPEN) neighbours where its effect is > 0 (direction holds) and where z > 1.64 (one-sided
p < 0.05).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

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


def point_effects(task: tuple[int, dict[str, Any]]) -> dict[str, float]:
    """``effects`` of one ``(reps, params)`` task (module level, so worker processes can run it)."""
    reps, params = task
    return effects(reps, params)


def _map(points: Sequence[dict[str, Any]], reps: int, processes: int, desc: str) -> list:
    from mesa_dilemmas.scenarios.execution import map_tasks

    return map_tasks(
        point_effects, [(reps, p) for p in points], processes=processes, progress=False, desc=desc
    )


def search(
    candidates: int, reps: int, seed: int, processes: int = 1
) -> list[tuple[str, dict[str, Any], dict[str, float]]]:
    """The defaults and ``candidates`` random points of the search box, each with its effects."""
    rng = np.random.default_rng(seed)
    points = [{k: v[0] for k, v in OPEN.items()}]
    points += [
        {k: float(rng.uniform(lo, hi)) for k, (_, lo, hi) in OPEN.items()}
        for _ in range(candidates)
    ]
    labels = ["defaults"] + [f"cand {i}" for i in range(1, len(points))]
    return list(zip(labels, points, _map(points, reps, processes, "calibration"), strict=True))


@dataclass(frozen=True)
class Robustness:
    """The effects at a point and at its +-25% neighbours, and what they say per finding."""

    reps: int
    centre: dict[str, Any]
    centre_effects: dict[str, float]
    neighbours: list[tuple[str, dict[str, Any], dict[str, float]]]

    def held(self, finding: str) -> int:
        return sum(z[finding] > 0 for _, _, z in self.neighbours)

    def significant(self, finding: str) -> int:
        return sum(z[finding] > 1.64 for _, _, z in self.neighbours)

    def failures(self, finding: str) -> list[str]:
        """Where the direction does not hold, e.g. ``"catchability x0.75 (z = -2.1)"``."""
        return [
            f"{label} (z = {z[finding]:+.1f})" for label, _, z in self.neighbours if z[finding] <= 0
        ]


def neighbourhood(centre: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each open parameter moved to x0.75 and x1.25 of the centre, the others fixed."""
    out = []
    for name in OPEN:
        for factor in (0.75, 1.25):
            p = {**centre, name: centre[name] * factor}
            if name == "monitoring_min":
                p[name] = min(p[name], 1.0)
            out.append((f"{name} x{factor}", p))
    return out


def robustness(reps: int, centre: dict[str, Any] | None = None, processes: int = 1) -> Robustness:
    base = {k: (centre or {}).get(k, v[0]) for k, v in OPEN.items()}
    around = neighbourhood(base)
    zs = _map([base] + [p for _, p in around], reps, processes, "robustness")
    return Robustness(
        reps, base, zs[0], [(label, p, z) for (label, p), z in zip(around, zs[1:], strict=True)]
    )
