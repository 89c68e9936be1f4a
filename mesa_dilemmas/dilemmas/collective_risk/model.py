"""Collective Risk Dilemma (paper 002, Sec. 3.2): disaster unless at least m players contribute.

Round payoff of player i: ``(1 - c_i) + k * [n_c >= m]`` -- a defector keeps 1,
and everyone receives the benefit k when the threshold is met.

Threshold rounding: the paper's ``m = n/2`` is read as "at least half the
group", i.e. ``m = ceil(n / 2)`` (``n_c >= n/2`` for an integer ``n_c`` is
exactly ``n_c >= ceil(n/2)``), so n = 5 needs 3 cooperators.  For very small
groups m is at least 2 (n = 2 and n = 3 both need 2), so no single player can
avert the disaster alone -- with m = 1 the game would be a volunteer's
dilemma, not a collective-risk one.  Pass ``m`` explicitly to override.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from mesa_dilemmas.dilemmas.base import DilemmaParameters
from mesa_dilemmas.dilemmas.binary.game import BinaryDilemmaModel
from mesa_dilemmas.dilemmas.binary.params import Players, PopulationTable, Rounds, Strategies
from mesa_dilemmas.dilemmas.binary.rules import DEFAULT_ROUNDS, BinaryGame


def default_threshold(n_players: int) -> int:
    """``max(2, ceil(n / 2))``: half the group, rounded up, never a single volunteer."""
    return max(2, math.ceil(n_players / 2))


class CollectiveRiskGame(BinaryGame):
    """Rules of the n-player Collective Risk Dilemma."""

    NAME = "collective_risk"
    TITLE = "Collective Risk Dilemma"
    ORDER = 2
    PUBLISHED_AS = "CollectiveRiskDescription"

    def __init__(
        self, n_players: int, n_rounds: int = DEFAULT_ROUNDS, k: float = 2.0, m: int | None = None
    ) -> None:
        super().__init__(n_players, n_rounds)
        m = default_threshold(n_players) if m is None else int(m)
        if not 1 <= m <= n_players:
            raise ValueError(
                f"m: the threshold must satisfy 1 <= m <= n_players (got m={m}, n_players={n_players})"
            )
        if not k > 0:
            raise ValueError(f"k: the collective benefit must be positive (got k={k})")
        self.k = float(k)
        self.m = m

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "m": self.m}

    def payoffs(self, cooperated: np.ndarray, state: np.ndarray | None) -> tuple[np.ndarray, None]:
        met = cooperated.sum(axis=1, keepdims=True) >= self.m
        return (~cooperated) + self.k * met, None


class CollectiveRiskParameters(DilemmaParameters):
    n_players: Players = 4
    rounds: Rounds = DEFAULT_ROUNDS
    k: Annotated[
        float, Field(gt=0, description="what every player gains when enough contribute")
    ] = 2.0
    m: Annotated[
        int | None,
        Field(ge=1, description="contributors needed for the benefit (default: half the group)"),
    ] = None
    strategies: Strategies = ("threshold", "all_d", "tft(0.5)", "rnd(0.5)")
    players: PopulationTable = None


class CollectiveRiskModel(BinaryDilemmaModel):
    """Mesa model of one Collective Risk match."""

    GAME = "collective_risk"
    Parameters = CollectiveRiskParameters

    @classmethod
    def rules_of(cls, p: CollectiveRiskParameters) -> CollectiveRiskGame:
        return CollectiveRiskGame(p.n_players, p.rounds, k=p.k, m=p.m)


#: the rules class, found by name through ``binary.game.make_game``
RULES = CollectiveRiskGame
