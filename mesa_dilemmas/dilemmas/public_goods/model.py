"""Public Goods Game (paper 002, Sec. 3.1): contribute to a pot multiplied by k and shared by all.

Round payoff of player i: ``(1 - c_i) + k * n_c / n`` with ``c_i = 1`` when i
cooperates and ``n_c`` cooperators.  A dilemma needs ``1 < k < n``: every
contribution returns ``k / n < 1`` to its giver but ``k > 1`` to the group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from mesa_dilemmas.dilemmas.base import DilemmaParameters
from mesa_dilemmas.dilemmas.binary.game import BinaryDilemmaModel
from mesa_dilemmas.dilemmas.binary.params import Players, PopulationTable, Rounds, Strategies
from mesa_dilemmas.dilemmas.binary.rules import DEFAULT_ROUNDS, BinaryGame


class PublicGoodsGame(BinaryGame):
    """Rules of the n-player Public Goods Game."""

    NAME = "public_goods"
    TITLE = "Public Goods Game"
    ORDER = 1
    PUBLISHED_AS = "PublicGoodsDescription"

    @classmethod
    def example_params(
        cls, n_players: int, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """``k = min(2, (1 + n) / 2)`` unless the given k satisfies ``1 < k < n`` at this size."""
        out = dict(params or {})
        k = min(2.0, (1 + n_players) / 2)
        out.setdefault("k", k)
        if not 1 < float(out["k"]) < n_players:
            out["k"] = k
        return out

    def __init__(self, n_players: int, n_rounds: int = DEFAULT_ROUNDS, k: float = 2.0) -> None:
        super().__init__(n_players, n_rounds)
        if not 1 < k < n_players:
            raise ValueError(
                f"k: the multiplication factor must satisfy 1 < k < n_players (got k={k}, n_players={n_players})"
            )
        self.k = float(k)

    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def payoffs(self, cooperated: np.ndarray, state: np.ndarray | None) -> tuple[np.ndarray, None]:
        share = cooperated.sum(axis=1, keepdims=True) * (self.k / self.n_players)
        return (~cooperated) + share, None


class PublicGoodsParameters(DilemmaParameters):
    n_players: Players = 4
    rounds: Rounds = DEFAULT_ROUNDS
    k: Annotated[float, Field(gt=1, description="multiplication factor of the pot (1 < k < n)")] = (
        2.0
    )
    strategies: Strategies = ("tft(0.5)", "all_d", "grim(0.34)", "rnd(0.5)")
    players: PopulationTable = None


class PublicGoodsModel(BinaryDilemmaModel):
    """Mesa model of one Public Goods match (DilemmaAgents, a DataCollector, one round per step)."""

    GAME = "public_goods"
    Parameters = PublicGoodsParameters

    @classmethod
    def rules_of(cls, p: PublicGoodsParameters) -> PublicGoodsGame:
        return PublicGoodsGame(p.n_players, p.rounds, k=p.k)


#: the rules class, found by name through ``binary.game.make_game``
RULES = PublicGoodsGame
