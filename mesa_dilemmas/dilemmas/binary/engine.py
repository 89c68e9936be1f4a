"""The fast in-process engine: B matches of n strategies played in lock-step
(:func:`play_in_process`), and what a batch returns (:class:`BatchResult`).

Strategies whose class has a vectorised form (:class:`~mesa_dilemmas.dilemmas.binary.strategies.base.VectorForm`:
the reference strategies) are played in that form -- all their seats of the batch at once, a
few numpy operations per round -- and the others with one Python call per strategy-round.
Both give identical results (same answers, same random draws: ``tests/test_binary_vector.py``);
:data:`VECTOR_FORMS` = False (or ``vectorised=False``) plays every seat per call.
Lineups are lists of entries per match or a :class:`Lineups` (indices into a palette of
entries), which is what the experiments build: no per-seat Python objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from mesa_dilemmas.agents.decisions import InvalidAnswer
from mesa_dilemmas.dilemmas.binary.rules import BinaryGame
from mesa_dilemmas.dilemmas.binary.strategies.base import (
    ACTION_CODE,
    SeatStreams,
    VectorForm,
    vector_form_of,
)
from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore, PlayerHistory
from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

#: play strategies that have a vectorised form in it (False: one call per strategy-round for
#: every seat -- the path the vectorised forms are tested against)
VECTOR_FORMS = True


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


class Lineups(Sequence[list[StrategyEntry | None]]):
    """B lineups as indices into a palette: ``palette[index[b, i]]`` sits in seat i of match b
    (``-1``: a scripted seat).  A sequence of lineups (lists of entries) for code that wants one."""

    __slots__ = ("index", "palette")

    def __init__(self, palette: Sequence[StrategyEntry], index: np.ndarray) -> None:
        index = np.asarray(index)
        if index.ndim != 2:
            raise ValueError("Lineups: index must be a (matches, seats) array")
        self.palette = list(palette)
        self.index = index.astype(np.intp, copy=False)

    def __len__(self) -> int:
        return len(self.index)

    @overload
    def __getitem__(self, b: int) -> list[StrategyEntry | None]: ...
    @overload
    def __getitem__(self, b: slice) -> Lineups: ...
    def __getitem__(self, b: int | slice) -> list[StrategyEntry | None] | Lineups:
        if isinstance(b, slice):
            return Lineups(self.palette, self.index[b])
        palette = self.palette
        return [None if k < 0 else palette[k] for k in self.index[b].tolist()]

    def __iter__(self) -> Iterator[list[StrategyEntry | None]]:
        for b in range(len(self.index)):
            yield self[b]

    def used_entries(self) -> list[StrategyEntry]:
        """The palette entries that sit somewhere."""
        used = np.unique(self.index)
        return [self.palette[k] for k in used[used >= 0].tolist()]

    @classmethod
    def of(cls, lineups: Sequence[Sequence[StrategyEntry | None]], n: int) -> Lineups:
        """Lists of entries (``None``: scripted) as a palette and an index; checks their length."""
        if isinstance(lineups, Lineups):
            if lineups.index.shape[1:] != (n,) and len(lineups.index):
                b = 0
                raise ValueError(
                    f"play_batch: match {b} has {lineups.index.shape[1]} players, the game has {n}"
                )
            return lineups
        ids: dict[int, int] = {}
        palette: list[StrategyEntry] = []
        flat: list[int] = []
        for b, lineup in enumerate(lineups):
            if len(lineup) != n:
                raise ValueError(
                    f"play_batch: match {b} has {len(lineup)} players, the game has {n}"
                )
            for entry in lineup:
                if entry is None:
                    flat.append(-1)
                    continue
                k = ids.get(id(entry))
                if k is None:
                    k = ids[id(entry)] = len(palette)
                    palette.append(entry)
                flat.append(k)
        return cls(palette, np.array(flat, dtype=np.intp).reshape(len(lineups), n))


def play_in_process(
    game: BinaryGame,
    lineups: Sequence[Sequence[StrategyEntry | None]],
    entropies: Sequence[int],
    scripted: np.ndarray | None,
    rounds: int | None,
    keep_history: bool,
    *,
    vectorised: bool | None = None,
) -> BatchResult:
    n, horizon = game.n_players, game.n_rounds
    played = horizon if rounds is None else int(rounds)
    lineup_index = Lineups.of(lineups, n)
    batch = len(lineup_index)
    if len(entropies) != batch:
        raise ValueError("play_batch: one entropy per match is required")
    if batch == 0:
        return BatchResult(np.zeros((0, n)), np.zeros((0, horizon), dtype=np.int32), played)
    desc = game.description()
    palette, index = lineup_index.palette, lineup_index.index.reshape(-1)
    match_entropy = [int(e) for e in entropies]
    if scripted is None and (index < 0).any():
        raise ValueError("play_batch: scripted seats (None) need a `scripted` action array")

    # the vectorised forms: one per form class, over the seats of every entry that has it
    forms: list[tuple[VectorForm, np.ndarray]] = []
    vector_seat = np.zeros(batch * n, dtype=bool)
    if VECTOR_FORMS if vectorised is None else vectorised:
        groups: dict[type[VectorForm], list[tuple[int, dict[str, float]]]] = {}
        for k in np.unique(index[index >= 0]).tolist():
            entry = palette[k]
            form_cls = None if entry.cls is None else vector_form_of(entry.cls)
            if form_cls is not None:
                proto = entry.create(desc, None)  # parameters only: a form draws no numbers here
                groups.setdefault(form_cls, []).append((k, proto.vector_params()))
        if groups:
            order = np.argsort(index, kind="stable")
            ranked = index[order]
            for form_cls, members in groups.items():
                parts, counts = [], []
                for k, _ in members:
                    lo, hi = np.searchsorted(ranked, (k, k + 1))
                    parts.append(order[lo:hi])
                    counts.append(hi - lo)
                seats = np.concatenate(parts)
                names = members[0][1].keys()
                params = {
                    name: np.repeat([float(p[name]) for _, p in members], counts) for name in names
                }
                matches, seat_no = np.divmod(seats, n)
                streams = (
                    SeatStreams(match_entropy, matches, seat_no, played)
                    if form_cls.RANDOM
                    else None
                )
                forms.append((form_cls(desc, params, streams), seats))
                vector_seat[seats] = True

    free_idx = np.flatnonzero((index >= 0) & ~vector_seat)  # seats played one call at a time
    free: list[int] = free_idx.tolist()
    scripted_idx = np.flatnonzero(index < 0)
    strategies = []
    for j in free:
        b, i = divmod(j, n)
        strategies.append(palette[index[j]].create(desc, (match_entropy[b], (i,))))

    state = game.initial_state(batch)
    store: HistoryStore | None = None
    pay_rec = coop_rec = stock_rec = None
    if keep_history or free:
        store = HistoryStore(batch, n, horizon, with_stock=game.HAS_STOCK)
        if state is not None:
            store.set_initial_stock(state)
    else:  # the same record as the store's, without the per-seat views
        pay_rec = np.zeros((batch, n, horizon), dtype=np.float64)
        coop_rec = np.zeros((batch, horizon), dtype=np.int32)
        if game.HAS_STOCK:
            stock_rec = np.zeros((batch, horizon + 1), dtype=np.float64)
            if state is not None:
                stock_rec[:, 0] = state
    views: list[PlayerHistory] = [] if store is None else store.views(free)
    pairs = list(zip([s.act for s in strategies], views, strict=True))
    code = ACTION_CODE.__getitem__
    flat = np.zeros(batch * n, dtype=bool)
    last_opp: np.ndarray | None = None

    for t in range(played):
        if len(scripted_idx):
            assert scripted is not None
            flat[scripted_idx] = scripted[:, :, t].reshape(-1)[scripted_idx] > 0
        if pairs:
            out: list[Any] = []
            append = out.append
            try:
                for act, view in pairs:
                    append(act(view))
            except Exception as exc:
                _annotate(exc, strategies[len(out)], free[len(out)], n, t, "raised")
                raise
            try:
                flat[free_idx] = np.fromiter(map(code, out), dtype=bool, count=len(out))
            except (KeyError, TypeError):
                bad = next(
                    j for j, a in enumerate(out) if not isinstance(a, str) or a not in ACTION_CODE
                )
                exc = InvalidAnswer(f"expected 'C' or 'D', got {out[bad]!r}")
                _annotate(exc, strategies[bad], free[bad], n, t, "answered")
                raise exc from None
        for form, seats in forms:
            reads = last_opp is not None and form.READS_HISTORY
            flat[seats] = form.act(t, last_opp[seats] if reads else None)
        cooperated = flat.reshape(batch, n)
        pay, state = game.payoffs(cooperated, state)
        if store is not None:
            store.record(cooperated, pay, state)
        if forms or store is None:
            counts = cooperated.sum(axis=1, dtype=np.int32)
            if store is None:
                assert pay_rec is not None and coop_rec is not None
                pay_rec[:, :, t] = pay
                coop_rec[:, t] = counts
                if stock_rec is not None and state is not None:
                    stock_rec[:, t + 1] = state
            if forms:
                last_opp = (counts[:, None] - cooperated).reshape(-1)

    used = np.zeros(batch * n, dtype=bool)
    used[free_idx] = [s.used_rng for s in strategies]
    for form, seats in forms:
        used[seats] = form.used_rng
    if store is not None:
        return BatchResult(
            totals=store.totals(),
            coop_by_round=np.array(store.coop),
            rounds=played,
            stock=None if store.stock is None else np.array(store.stock),
            store=store if keep_history else None,
            used_rng=used.reshape(batch, n),
        )
    assert pay_rec is not None and coop_rec is not None
    return BatchResult(
        totals=pay_rec[:, :, :played].sum(axis=2),
        coop_by_round=coop_rec,
        rounds=played,
        stock=stock_rec,
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
