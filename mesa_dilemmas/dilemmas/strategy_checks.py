"""Operational checks of strategies before they are admitted to a set (paper 002, Sec. 4.1).

Generated code may crash, answer something other than C/D, touch global random
state, or be far too slow.  :func:`check_strategy` plays a strategy in small
matches of every game it claims against mixed reference opponents and reports
each problem as one line; an empty list means it passed.  The LLM pipeline
regenerates implementations that fail, as the paper does.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import numpy as np

from mesa_dilemmas.agents.strategies.loader import StrategyEntry, StrategySet

OPPONENTS = ("all_c", "all_d", "rnd(0.5)", "tft(0.5)", "grim(0.25)")
BINARY_GAMES = ("public_goods", "collective_risk", "common_pool")


def check_strategy(
    entry: StrategyEntry,
    games: Sequence[str] | None = None,
    sizes: Sequence[int] = (4, 17),
    matches: int = 4,
    seed: int = 0,
    max_seconds_per_call: float = 0.01,
) -> list[str]:
    """Problems found when playing ``entry`` (empty if none).

    Checks: no exception, answers are C/D, no change to Python's or numpy's
    global random state, mean time per call below ``max_seconds_per_call``.
    """
    from mesa_dilemmas.dilemmas.binary_game import make_game, play_batch

    problems: list[str] = []
    rng = np.random.default_rng(seed)
    opponents = [StrategyEntry.reference(s) for s in OPPONENTS]
    for game_name in games or entry.games or BINARY_GAMES:
        for n in sizes:
            params = {"k": min(2.0, (1 + n) / 2)} if game_name == "public_goods" else {}
            game = make_game(game_name, n, 20, **params)
            lineups = []
            for _ in range(matches):
                lineup = [opponents[j] for j in rng.integers(0, len(opponents), n)]
                for seat in rng.choice(n, size=max(1, n // 4), replace=False):
                    lineup[seat] = entry
                lineups.append(lineup)
            py, npy = random.getstate(), np.random.get_state()[1].copy()
            start = time.perf_counter()
            try:
                play_batch(game, lineups, rng.integers(0, 2**63, size=matches))
            except Exception as exc:  # noqa: BLE001 - every failure is a finding
                notes = " ".join(getattr(exc, "__notes__", []))
                problems.append(f"{game_name}, n={n}: {type(exc).__name__}: {exc} {notes}".strip())
                continue
            elapsed = time.perf_counter() - start
            if random.getstate() != py or not np.array_equal(np.random.get_state()[1], npy):
                problems.append(
                    f"{game_name}, n={n}: changed the global random state; use self.rng"
                )
            calls = sum(lineup.count(entry) for lineup in lineups) * 20
            if elapsed / calls > max_seconds_per_call:
                problems.append(
                    f"{game_name}, n={n}: {elapsed / calls * 1e3:.1f} ms per call is too slow"
                )
    return problems


def check_strategy_set(strategy_set: StrategySet, **kwargs: object) -> dict[str, list[str]]:
    """Problems per strategy name, for the strategies that have any."""
    out = {}
    for entry in strategy_set:
        problems = check_strategy(entry, **kwargs)  # type: ignore[arg-type]
        if problems:
            out[entry.name] = problems
    return out
