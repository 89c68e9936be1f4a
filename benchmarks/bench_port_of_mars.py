"""Benchmark: Port of Mars games per second, for each kind of player, plus a profile split.

Usage: python benchmarks/bench_port_of_mars.py [--games N]
Prints games per second (and ms per game) for five rule-based SVO players with and
without the meeting, the cultural and trait presets, the reference bot and random
legal players, and the share of the time spent in each phase for the SVO group.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from typing import Any

from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

CONFIGS: dict[str, dict[str, Any]] = {
    "svo rule players + rule meeting": {"preset": "svo"},
    "svo rule players, no meeting": {"preset": "svo", "meeting": False},
    "cultural groups": {"preset": "cultural"},
    "trait sets": {"preset": "traits"},
    "reference bot": {"preset": "reference_bot", "meeting": False},
    "random legal players": {"policy_factory": "random", "meeting": False},
}


def games_per_second(games: int, **params: Any) -> tuple[float, float]:
    start = time.perf_counter()
    rounds = 0
    for seed in range(games):
        model = build_model(PortOfMarsModel, params, seed)
        while model.running:
            model.step()
        rounds += model.round
    wall = time.perf_counter() - start
    return games / wall, rounds / games


def phase_profile(games: int) -> dict[str, float]:
    spent: dict[str, float] = defaultdict(float)
    for seed in range(games):
        model = PortOfMarsModel(rng=seed)
        for phase in model.PHASES:
            original = getattr(model, f"phase_{phase}")

            def timed(original=original, phase=phase) -> None:
                t0 = time.perf_counter()
                original()
                spent[phase] += time.perf_counter() - t0

            setattr(model, f"phase_{phase}", timed)
        while model.running:
            model.step()
    total = sum(spent.values())
    return {k: v / total for k, v in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=200)
    args = parser.parse_args()
    print(f"{'players':34s} {'games/s':>8s} {'ms/game':>8s} {'rounds':>7s}")
    for name, params in CONFIGS.items():
        rate, rounds = games_per_second(args.games, **params)
        print(f"{name:34s} {rate:8.1f} {1000 / rate:8.1f} {rounds:7.2f}")
    print("\nshare of time per phase (svo rule players):")
    for phase, share in phase_profile(max(1, args.games // 4)).items():
        print(f"  {phase:12s} {100 * share:5.1f}%")


if __name__ == "__main__":
    main()
