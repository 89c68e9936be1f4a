"""A published-format strategy that reseeds the global generators from its own identity (for tests)."""

import random

import numpy as np
from emergent_llm.common import Action, C, D, PlayerHistory
from emergent_llm.games import PublicGoodsDescription
from emergent_llm.players import BaseStrategy


class Strategy_EXPLOITATIVE_1(BaseStrategy):
    """Reseeds from its own identity (not reproducible itself), then flips a coin."""

    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, history: PlayerHistory) -> Action:
        random.seed(hash(id(self)))
        np.random.seed(id(self) % 2**32)
        return C if random.random() < 0.5 else D
