"""The public history a strategy sees, built so that 256 players cost almost nothing per round.

One :class:`HistoryStore` holds the whole record of a *batch* of matches in
preallocated arrays, player-major so each player's own row is contiguous:

* ``actions[b, i, t]``   -- did player i of match b cooperate in round t;
* ``payoffs[b, i, t]``   -- what it earned;
* ``opp_coop[b, i, t]``  -- how many of its opponents cooperated (computed for
  all players at once, one vectorised subtraction per round);
* ``coop[b, t]``         -- cooperators in the round;
* ``stock[b, t]``        -- the resource at the start of round t (games with a stock only).

A :class:`PlayerHistory` is a fixed window on that store for one seat; it is
created once per match and every property is a slice of a shared array, so
"building the history" each round is a counter increment.  All arrays handed to
strategies are read-only.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def _readonly(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class HistoryStore:
    """The record of ``batch`` simultaneous matches of ``n_players`` over ``n_rounds`` rounds."""

    def __init__(self, batch: int, n_players: int, n_rounds: int, with_stock: bool = False) -> None:
        self.batch = batch
        self.n_players = n_players
        self.n_rounds = n_rounds
        self.round = 0
        self._actions = np.zeros((batch, n_players, n_rounds), dtype=bool)
        self._payoffs = np.zeros((batch, n_players, n_rounds), dtype=np.float64)
        self._opp = np.zeros((batch, n_players, n_rounds), dtype=np.int32)
        self._coop = np.zeros((batch, n_rounds), dtype=np.int32)
        self._stock = np.zeros((batch, n_rounds + 1), dtype=np.float64) if with_stock else None
        self.actions = _readonly(self._actions)
        self.payoffs = _readonly(self._payoffs)
        self.opp_coop = _readonly(self._opp)
        self.coop = _readonly(self._coop)
        self.stock = None if self._stock is None else _readonly(self._stock)
        #: last round's opponent-cooperator counts and own actions as Python lists, flat over
        #: (match, seat): a strategy's most common questions answered without numpy scalars
        self.last_opp: list[int] = []
        self.last_mine: list[bool] = []

    def set_initial_stock(self, stock: np.ndarray) -> None:
        assert self._stock is not None
        self._stock[:, 0] = stock

    def record(
        self, cooperated: np.ndarray, payoffs: np.ndarray, next_stock: np.ndarray | None
    ) -> None:
        """Append one round for every match: ``cooperated`` and ``payoffs`` are (batch, n)."""
        t = self.round
        if t >= self.n_rounds:
            raise RuntimeError("history is full: all rounds have been played")
        counts = cooperated.sum(axis=1, dtype=np.int32)
        self._actions[:, :, t] = cooperated
        self._payoffs[:, :, t] = payoffs
        self._coop[:, t] = counts
        self._opp[:, :, t] = counts[:, None] - cooperated
        if self._stock is not None and next_stock is not None:
            self._stock[:, t + 1] = next_stock
        self.last_opp = self._opp[:, :, t].ravel().tolist()
        self.last_mine = cooperated.ravel().tolist()
        self.round = t + 1

    def copy_match(self, src: HistoryStore, match: int, rounds: int) -> None:
        """Make match 0 of this (one-match) store hold ``src``'s match ``match`` up to ``rounds``
        rounds, then rewind to round 0; :meth:`seek` then steps through them (a replay)."""
        self._actions[0, :, :rounds] = src._actions[match, :, :rounds]
        self._payoffs[0, :, :rounds] = src._payoffs[match, :, :rounds]
        self._opp[0, :, :rounds] = src._opp[match, :, :rounds]
        self._coop[0, :rounds] = src._coop[match, :rounds]
        if self._stock is not None and src._stock is not None:
            self._stock[0, : rounds + 1] = src._stock[match, : rounds + 1]
        self.seek(0)

    def seek(self, t: int) -> None:
        """Show the history as it was after ``t`` rounds (of what :meth:`copy_match` put here)."""
        self.round = t
        if t:
            self.last_opp = self._opp[:, :, t - 1].ravel().tolist()
            self.last_mine = self._actions[:, :, t - 1].ravel().tolist()

    def player(self, match: int, seat: int) -> PlayerHistory:
        return PlayerHistory(self, match, seat)

    def totals(self) -> np.ndarray:
        """Total payoff of every player, (batch, n)."""
        return self._payoffs[:, :, : self.round].sum(axis=2)

    def all_players(self) -> list[PlayerHistory]:
        """One view per seat of every match, in (match, seat) order."""
        return self.views(range(self.batch * self.n_players))

    def views(self, flat_seats: Iterable[int]) -> list[PlayerHistory]:
        """Views for the given seats (flat index ``match * n_players + seat``), built in bulk."""
        b, n, r = self.batch, self.n_players, self.n_rounds
        rows_a = self.actions.reshape(b * n, r)
        rows_p = self.payoffs.reshape(b * n, r)
        rows_o = self.opp_coop.reshape(b * n, r)
        coop = list(self.coop)
        stock = [None] * b if self.stock is None else list(self.stock)
        seats = list(flat_seats)
        # views, never copies: later rounds are written into the same arrays
        if len(seats) * 2 > b * n:  # iterating a 2-D array makes row views fastest
            all_a, all_p, all_o = list(rows_a), list(rows_p), list(rows_o)
            a_list = [all_a[j] for j in seats]
            p_list = [all_p[j] for j in seats]
            o_list = [all_o[j] for j in seats]
        else:
            a_list = [rows_a[j] for j in seats]
            p_list = [rows_p[j] for j in seats]
            o_list = [rows_o[j] for j in seats]
        new = PlayerHistory.__new__
        out = []
        for k, j in enumerate(seats):
            m, i = divmod(j, n)
            v = new(PlayerHistory)
            v._store, v.match, v.me, v._j = self, m, i, j
            v._a, v._p, v._o, v._c, v._s = a_list[k], p_list[k], o_list[k], coop[m], stock[m]
            v._opp_cache = None
            out.append(v)
        return out


class PlayerHistory:
    """The history from one seat. ``round_number`` rounds have been played (0 in the first).

    Actions are booleans (True = cooperated).  Cheap per-seat views:
    ``my_actions``, ``my_payoffs``, ``opponent_cooperators``, ``cooperators``.
    The full matrices (``actions``, ``opponent_actions``, ``payoffs``) are there
    for strategies that track individual opponents.
    """

    __slots__ = ("_store", "match", "me", "_j", "_a", "_p", "_o", "_c", "_s", "_opp_cache")

    def __init__(self, store: HistoryStore, match: int, seat: int) -> None:
        self._store = store
        self.match = match
        self.me = seat
        self._j = match * store.n_players + seat
        self._a = store.actions[match, seat]
        self._p = store.payoffs[match, seat]
        self._o = store.opp_coop[match, seat]
        self._c = store.coop[match]
        self._s = None if store.stock is None else store.stock[match]
        self._opp_cache: tuple[int, np.ndarray] | None = None

    # -- where we are ------------------------------------------------------
    @property
    def round_number(self) -> int:
        """Rounds completed so far (0-based index of the round being decided)."""
        return self._store.round

    @property
    def n_players(self) -> int:
        return self._store.n_players

    @property
    def n_rounds(self) -> int:
        return self._store.n_rounds

    @property
    def rounds_left(self) -> int:
        """Rounds still to play, counting the one being decided."""
        return self._store.n_rounds - self._store.round

    @property
    def is_first_round(self) -> bool:
        return self._store.round == 0

    @property
    def is_last_round(self) -> bool:
        return self._store.round == self._store.n_rounds - 1

    # -- my own row --------------------------------------------------------
    @property
    def my_actions(self) -> np.ndarray:
        """(rounds played,) bool: my past actions."""
        return self._a[: self._store.round]

    @property
    def my_payoffs(self) -> np.ndarray:
        """(rounds played,) float: my past payoffs."""
        return self._p[: self._store.round]

    @property
    def my_total_payoff(self) -> float:
        return float(self._p[: self._store.round].sum())

    # -- aggregates --------------------------------------------------------
    @property
    def opponent_cooperators(self) -> np.ndarray:
        """(rounds played,) int: how many of my n-1 opponents cooperated each round."""
        return self._o[: self._store.round]

    @property
    def cooperators(self) -> np.ndarray:
        """(rounds played,) int: cooperators each round, me included."""
        return self._c[: self._store.round]

    @property
    def last_opponent_cooperators(self) -> int | None:
        """Opponents who cooperated last round (None in the first round)."""
        store = self._store
        return store.last_opp[self._j] if store.round else None

    @property
    def last_my_action(self) -> bool | None:
        """Whether I cooperated last round (None in the first round)."""
        store = self._store
        return store.last_mine[self._j] if store.round else None

    # -- resource (games with a stock) --------------------------------------
    @property
    def stock(self) -> float | None:
        """The resource stock now, before this round's extraction (None in a game without one)."""
        return None if self._s is None else float(self._s[self._store.round])

    @property
    def stocks(self) -> np.ndarray | None:
        """(rounds played + 1,) stock at the start of every round so far, the current one last."""
        return None if self._s is None else self._s[: self._store.round + 1]

    # -- full matrices -----------------------------------------------------
    @property
    def actions(self) -> np.ndarray:
        """(rounds played, n) bool: every player's actions, my column is ``me``."""
        return self._store.actions[self.match, :, : self._store.round].T

    @property
    def payoffs(self) -> np.ndarray:
        """(rounds played, n) float: every player's payoffs."""
        return self._store.payoffs[self.match, :, : self._store.round].T

    @property
    def opponent_actions(self) -> np.ndarray:
        """(rounds played, n-1) bool: opponents' actions, seats in order with mine removed."""
        t = self._store.round
        cached = self._opp_cache
        if cached is not None and cached[0] == t:
            return cached[1]
        rows = self._store.actions[self.match, :, :t]
        out = np.delete(rows, self.me, axis=0).T
        out.flags.writeable = False
        self._opp_cache = (t, out)
        return out

    def as_dict(self) -> dict[str, object]:
        """Plain data for prompts and logs ("C"/"D" strings, aggregate counts)."""
        out: dict[str, object] = {
            "round": self.round_number,
            "n_rounds": self.n_rounds,
            "n_players": self.n_players,
            "my_actions": ["C" if a else "D" for a in self.my_actions.tolist()],
            "my_payoffs": self.my_payoffs.tolist(),
            "opponent_cooperators": self.opponent_cooperators.tolist(),
        }
        if self._s is not None:
            out["stock"] = self.stock
            out["stocks"] = self.stocks.tolist()
        return out
