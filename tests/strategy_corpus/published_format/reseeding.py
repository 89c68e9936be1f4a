"""Published-format strategies that draw on, and reseed, the global generators (for tests)."""

import random

import numpy as np
from emergent_llm.common import Action, C, D, PlayerHistory
from emergent_llm.games import PublicGoodsDescription
from emergent_llm.players import BaseStrategy


class Strategy_COLLECTIVE_1(BaseStrategy):
    """Cooperate with probability 0.7 (Python's global random)."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, history: PlayerHistory) -> Action:
        return C if random.random() < 0.7 else D


class Strategy_COLLECTIVE_2(BaseStrategy):
    """Cooperate with probability 0.6 (numpy's global generator)."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, history: PlayerHistory) -> Action:
        return C if np.random.random() < 0.6 else D


class Strategy_EXPLOITATIVE_1(BaseStrategy):
    """Reseeds both global generators with constants every round, then flips a coin."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description
        random.seed()

    def __call__(self, history: PlayerHistory) -> Action:
        random.seed(1234)
        np.random.seed(1234)
        return C if random.random() < 0.5 else D
