"""Common Pool Resource (paper 002, Sec. 3.3): a regrowing stock shared by n extractors.

Each round, with stock S, a cooperator takes ``S / (2n)`` and a defector
``S / n``; what is left, ``S' = S * n_c / (2n)``, regrows logistically:
``S_next = min(S' + g * S' * (1 - S' / K), K)`` with capacity ``K = 4n`` and
``g = 2`` by default; the stock starts full.  With g = 2 all-C is sustainable
(half the stock left regrows exactly to K) and one all-D round leaves nothing.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from mesa_dilemmas.dilemmas.base import DilemmaParameters
from mesa_dilemmas.dilemmas.binary.game import BinaryDilemmaModel
from mesa_dilemmas.dilemmas.binary.params import Players, PopulationTable, Rounds, Strategies
from mesa_dilemmas.dilemmas.binary.rules import DEFAULT_ROUNDS, BinaryGame


class CommonPoolGame(BinaryGame):
    """Rules of the n-player Common Pool Resource game; the state is the stock."""

    NAME = "common_pool"
    TITLE = "Common Pool Resource"
    HAS_STOCK = True
    ORDER = 3
    PUBLISHED_AS = "CommonPoolDescription"

    def __init__(
        self,
        n_players: int,
        n_rounds: int = DEFAULT_ROUNDS,
        capacity: float | None = None,
        growth: float = 2.0,
    ) -> None:
        super().__init__(n_players, n_rounds)
        capacity = 4.0 * n_players if capacity is None else float(capacity)
        if not capacity > 0:
            raise ValueError(f"capacity: must be positive (got {capacity})")
        if not growth > 0:
            raise ValueError(f"growth: the regrowth rate must be positive (got {growth})")
        self.capacity = capacity
        self.growth = float(growth)

    def params(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "growth": self.growth}

    def initial_state(self, batch: int) -> np.ndarray:
        return np.full(batch, self.capacity)

    def payoffs(
        self, cooperated: np.ndarray, state: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        assert state is not None
        n = self.n_players
        share = (state / (2 * n))[:, None]
        pay = share * (1.0 + ~cooperated)
        remaining = state * (cooperated.sum(axis=1) / (2 * n))
        grown = remaining + self.growth * remaining * (1.0 - remaining / self.capacity)
        return pay, np.minimum(grown, self.capacity)

    def welfare_bounds(self) -> tuple[float, float]:
        """Exact for the default regrowth (g >= 2, where all-C keeps the stock full).

        Max: all cooperate except in the last round, when all defect,
        ``K (R + 1) / (2 n R)``.  Min: all defect in round 1 and the stock is
        gone, ``K / (n R)`` (for R = 1, all-C's ``K / (2n)``).  For g < 2 the
        same plays are used as (approximate) references.
        """
        n, r, cap = self.n_players, self.n_rounds, self.capacity
        if self.growth >= 2.0:
            high = cap * (r + 1) / (2 * n * r)
        else:
            high = self.play_counts([n] * (r - 1) + [0])
        low = cap / (2 * n) if r == 1 else cap / (n * r)
        return low, high


class CommonPoolParameters(DilemmaParameters):
    n_players: Players = 4
    rounds: Rounds = DEFAULT_ROUNDS
    capacity: Annotated[
        float | None, Field(gt=0, description="the stock's capacity (default: 4 per player)")
    ] = None
    growth: Annotated[float, Field(gt=0, le=4, description="regrowth rate g of the stock")] = 2.0
    strategies: Strategies = ("tft(0.5)", "all_d", "grim(0.34)", "rnd(0.5)")
    players: PopulationTable = None


class CommonPoolModel(BinaryDilemmaModel):
    """Mesa model of one Common Pool match; the DataCollector also records the stock."""

    GAME = "common_pool"
    RUN_METRICS = ("normalised_payoff", "cooperation_rate", "mean_payoff", "stock")
    Parameters = CommonPoolParameters

    @classmethod
    def rules_of(cls, p: CommonPoolParameters) -> CommonPoolGame:
        return CommonPoolGame(p.n_players, p.rounds, capacity=p.capacity, growth=p.growth)


#: the rules class, found by name through ``binary.game.make_game``
RULES = CommonPoolGame
