"""The fast in-process engine: B matches of n strategies played in lock-step, one Python call per
strategy-round (:func:`play_in_process`), and what a batch returns (:class:`BatchResult`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mesa_dilemmas.agents.decisions import InvalidAnswer
from mesa_dilemmas.agents.strategies.base import ACTION_CODE
from mesa_dilemmas.agents.strategies.history import HistoryStore, PlayerHistory
from mesa_dilemmas.agents.strategies.loader import StrategyEntry
from mesa_dilemmas.dilemmas.binary.rules import BinaryGame


@dataclass
class BatchResult:
    """What a batch returns: enough for self-play, evolution and the analysis, nothing per call."""

    totals: np.ndarray  # (B, n) total payoff of each player
    coop_by_round: np.ndarray  # (B, R) cooperators per round
    rounds: int  # rounds played
    stock: np.ndarray | None = None  # (B, R + 1) stock at the start of each round
    store: HistoryStore | None = None  # full record when keep_history=True
    used_rng: np.ndarray | None = None  # (B, n) bool: did the strategy draw random numbers
    #: strategies that misbehaved (sandboxed batches only); each played the default action
    flags: list[Any] = field(default_factory=list)
    #: memoisation (sandboxed batches): answers taken from the memo, of the memoisable seat-rounds
    memo_hits: int = 0
    memo_eligible: int = 0

    @property
    def normalised(self) -> np.ndarray:
        """(B, n) payoff per round of every player."""
        return self.totals / self.rounds


def play_in_process(
    game: BinaryGame,
    lineups: Sequence[Sequence[StrategyEntry | None]],
    entropies: Sequence[int],
    scripted: np.ndarray | None,
    rounds: int | None,
    keep_history: bool,
) -> BatchResult:
    n, horizon = game.n_players, game.n_rounds
    played = horizon if rounds is None else int(rounds)
    batch = len(lineups)
    if len(entropies) != batch:
        raise ValueError("play_batch: one entropy per match is required")
    if batch == 0:
        return BatchResult(np.zeros((0, n)), np.zeros((0, horizon), dtype=np.int32), played)
    desc = game.description()
    store = HistoryStore(batch, n, horizon, with_stock=game.HAS_STOCK)
    state = game.initial_state(batch)
    if state is not None:
        store.set_initial_stock(state)

    strategies = []
    free: list[int] = []
    for b, lineup in enumerate(lineups):
        if len(lineup) != n:
            raise ValueError(f"play_batch: match {b} has {len(lineup)} players, the game has {n}")
        e = int(entropies[b])
        for i, entry in enumerate(lineup):
            if entry is None:
                continue
            strategies.append(entry.create(desc, (e, (i,))))
            free.append(b * n + i)
    views: list[PlayerHistory] = store.views(free)
    free_idx = np.asarray(free, dtype=np.intp)
    all_free = len(free) == batch * n
    if not all_free and scripted is None:
        raise ValueError("play_batch: scripted seats (None) need a `scripted` action array")
    pairs = list(zip([s.act for s in strategies], views, strict=True))
    code = ACTION_CODE.__getitem__
    flat = np.zeros(batch * n, dtype=bool)

    for t in range(played):
        out: list[Any] = []
        append = out.append
        try:
            for act, view in pairs:
                append(act(view))
        except Exception as exc:
            _annotate(exc, strategies[len(out)], free[len(out)], n, t, "raised")
            raise
        try:
            answers = np.fromiter(map(code, out), dtype=bool, count=len(out))
        except (KeyError, TypeError):
            bad = next(
                j for j, a in enumerate(out) if not isinstance(a, str) or a not in ACTION_CODE
            )
            exc = InvalidAnswer(f"expected 'C' or 'D', got {out[bad]!r}")
            _annotate(exc, strategies[bad], free[bad], n, t, "answered")
            raise exc from None
        if all_free:
            cooperated = answers.reshape(batch, n)
        else:
            assert scripted is not None
            flat[:] = scripted[:, :, t].reshape(-1) > 0
            flat[free_idx] = answers
            cooperated = flat.reshape(batch, n)
        pay, state = game.payoffs(cooperated, state)
        store.record(cooperated, pay, state)

    used = np.zeros(batch * n, dtype=bool)
    used[free_idx] = [s.used_rng for s in strategies]
    return BatchResult(
        totals=store.totals(),
        coop_by_round=np.array(store.coop),
        rounds=played,
        stock=None if store.stock is None else np.array(store.stock),
        store=store if keep_history else None,
        used_rng=used.reshape(batch, n),
    )


def _annotate(exc: BaseException, strategy: Any, flat_seat: int, n: int, t: int, verb: str) -> None:
    """Say which strategy, match, seat and round a failure came from."""
    b, i = divmod(flat_seat, n)
    exc.add_note(
        f"strategy {type(strategy).__name__} ({getattr(strategy, 'name', None)}) in match {b}, "
        f"seat {i} {verb} this in round {t + 1}"
    )


# -- the Mesa model ------------------------------------------------------
