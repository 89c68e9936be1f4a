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
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry, StrategySet

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.binary.rules import BinaryGame

OPPONENTS = ("all_c", "all_d", "rnd(0.5)", "tft(0.5)", "grim(0.25)")


def _example_games(
    entry: StrategyEntry, games: Sequence[str] | None, sizes: Sequence[int]
) -> Iterator[tuple[str, int, BinaryGame]]:
    """(game name, n, game) for each game a check plays ``entry`` in (``games``, else the ones it
    claims, else every C/D game) at each of ``sizes``: the rules' example parameters, 20 rounds."""
    from mesa_dilemmas.dilemmas.binary.rules import binary_games, make_game, rules_of

    for game_name in games or entry.games or binary_games():
        for n in sizes:
            params = rules_of(game_name).example_params(n)
            yield game_name, n, make_game(game_name, n, 20, **params)


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
    Untrusted code (``entry.trusted`` is False) is played in the sandbox: what
    would have raised there is a flag, reported here the same way; the global
    random state is the worker's, which it seeds per batch, so that check is
    moot for it (and the time includes the round trip to the worker).
    """
    from mesa_dilemmas.dilemmas.binary.game import play_batch

    problems: list[str] = []
    rng = np.random.default_rng(seed)
    opponents = [StrategyEntry.reference(s) for s in OPPONENTS]
    for game_name, n, game in _example_games(entry, games, sizes):
        lineups = []
        for _ in range(matches):
            lineup = [opponents[j] for j in rng.integers(0, len(opponents), n)]
            for seat in rng.choice(n, size=max(1, n // 4), replace=False):
                lineup[seat] = entry
            lineups.append(lineup)
        if not entry.trusted:  # untimed warm-up: the sandbox worker may need (re)starting
            play_batch(game, lineups[:1], [0])
        py, npy = random.getstate(), np.random.get_state()[1].copy()
        start = time.perf_counter()
        try:
            result = play_batch(game, lineups, rng.integers(0, 2**63, size=matches))
        except Exception as exc:  # noqa: BLE001 - every failure is a finding
            notes = " ".join(getattr(exc, "__notes__", []))
            problems.append(f"{game_name}, n={n}: {type(exc).__name__}: {exc} {notes}".strip())
            continue
        elapsed = time.perf_counter() - start
        for reason in dict.fromkeys(f.reason for f in result.flags if f.strategy == entry.name):
            problems.append(f"{game_name}, n={n}: {reason}")  # sandboxed: flagged, not raised
        if result.flags:
            continue
        if random.getstate() != py or not np.array_equal(np.random.get_state()[1], npy):
            problems.append(f"{game_name}, n={n}: changed the global random state; use self.rng")
        calls = sum(lineup.count(entry) for lineup in lineups) * 20
        if elapsed / calls > max_seconds_per_call:
            problems.append(  # no measured figure: the text is shown to an LLM, and a
                # replayed run must ask the same question
                f"{game_name}, n={n}: too slow (over {max_seconds_per_call * 1e3:g} ms per call)"
            )
    return problems


def is_deterministic(
    entry: StrategyEntry,
    games: Sequence[str] | None = None,
    sizes: Sequence[int] = (4, 17),
    matches: int = 8,
    seed: int = 0,
) -> bool:
    """Whether ``entry`` answers the same under two different seeds and never draws random numbers.

    The strategy plays one seat against scripted opponents whose (random, but
    fixed) actions are the same in both plays, so its histories are identical
    unless its own answers differ.  A strategy that passes is a function of the
    game and the history it sees: its answers may be memoised by history.
    """
    from mesa_dilemmas.dilemmas.binary.game import play_batch

    rng = np.random.default_rng(seed)
    for _name, n, game in _example_games(entry, games, sizes):
        lineups = [[entry if i == b % n else None for i in range(n)] for b in range(matches)]
        # opponents: each cooperates with its own probability, so histories vary widely
        rates = rng.random((matches, n, 1))
        scripted = (rng.random((matches, n, game.n_rounds)) < rates).astype(np.int8)
        plays = []
        for entropy in rng.integers(0, 2**63, size=2):
            result = play_batch(
                game, lineups, [int(entropy)] * matches, scripted=scripted, keep_history=True
            )
            if result.flags or result.store is None:
                return False
            assert result.used_rng is not None
            if result.used_rng.any():
                return False
            plays.append(result.store.actions.copy())
        if not np.array_equal(plays[0], plays[1]):
            return False
    return True


def is_anonymous(
    entry: StrategyEntry,
    games: Sequence[str] | None = None,
    sizes: Sequence[int] = (4, 17),
    matches: int = 8,
    seed: int = 1,
) -> bool:
    """Whether a deterministic ``entry`` depends on the others only through how many cooperated.

    Each match is played twice against scripted opponents with the same number
    of cooperators every round, ``entry`` in a different seat each time and the
    opponents' actions reshuffled among them independently every round.  A
    strategy that passes reads only its own row and per-round aggregates (how
    many cooperated, the stock), so its answers may be memoised by its own
    actions and the count of cooperators alone.
    """
    from mesa_dilemmas.dilemmas.binary.game import play_batch

    rng = np.random.default_rng(seed)
    for _name, n, game in _example_games(entry, games, sizes):
        rates = rng.random((matches, n - 1, 1))
        others = (rng.random((matches, n - 1, game.n_rounds)) < rates).astype(np.int8)
        plays = []
        for _ in range(2):
            seats = rng.integers(0, n, size=matches)
            scripted = np.zeros((matches, n, game.n_rounds), dtype=np.int8)
            lineups = []
            for b in range(matches):
                rest = [i for i in range(n) if i != seats[b]]
                for t in range(game.n_rounds):  # each round reshuffled: only counts stay
                    scripted[b, rest, t] = others[b, rng.permutation(n - 1), t]
                lineups.append([entry if i == seats[b] else None for i in range(n)])
            result = play_batch(game, lineups, [0] * matches, scripted=scripted, keep_history=True)
            if result.flags or result.store is None:
                return False
            plays.append(result.store.actions[np.arange(matches), seats].copy())
        if not np.array_equal(plays[0], plays[1]):
            return False
    return True


def check_strategy_set(strategy_set: StrategySet, **kwargs: object) -> dict[str, list[str]]:
    """Problems per strategy name, for the strategies that have any."""
    out = {}
    for entry in strategy_set:
        problems = check_strategy(entry, **kwargs)  # type: ignore[arg-type]
        if problems:
            out[entry.name] = problems
    return out


def screen_entries(
    entries: Sequence[StrategyEntry],
    game: str,
    game_params: dict[str, object] | None = None,
    sizes: Sequence[int] = (4, 17),
    rounds: int = 20,
    matches: int = 3,
    seed: int = 0,
) -> dict[int, str]:
    """Which of ``entries`` misbehave (index -> first reason): the screen behind ``exclude_flagged``.

    Every untrusted entry plays ``matches`` matches per group size against mixed
    reference opponents, all in one sandboxed batch per size, so a set of
    hundreds costs a few round trips.  Only what the sandbox flags counts (an
    error, a wrong answer, a hang, a crash, patching): no timing, so the screen
    gives the same answer on every machine.  Trusted entries are not screened.
    """
    from mesa_dilemmas.dilemmas.binary.game import play_batch
    from mesa_dilemmas.dilemmas.binary.rules import make_game, rules_of

    rng = np.random.default_rng(seed)
    opponents = [StrategyEntry.reference(s) for s in OPPONENTS]
    todo = [i for i, e in enumerate(entries) if not e.trusted]
    found: dict[int, str] = {}
    rules = rules_of(game)
    for n in sizes:
        params = rules.example_params(n, game_params)
        gm = make_game(game, n, rounds, **params)
        lineups, owner = [], []
        for i in todo:
            # a private copy per screened entry: flags carry names, and names may repeat
            mine = StrategyEntry(**{**entries[i].__dict__, "name": f"#{i}"})
            for _ in range(matches):
                lineup = [opponents[j] for j in rng.integers(0, len(opponents), n)]
                lineup[int(rng.integers(n))] = mine
                lineups.append(lineup)
                owner.append(i)
        if not lineups:
            break
        result = play_batch(gm, lineups, rng.integers(0, 2**63, size=len(lineups)))
        for flag in result.flags:
            i = owner[flag.match]
            found.setdefault(i, f"n={n}: {flag.reason}")
    return found
