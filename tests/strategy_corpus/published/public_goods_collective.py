"""Strategies in the published format of paper 002's authors (written for these tests)."""

import random

import numpy as np
from emergent_llm.common import Action, C, D, GameState, PlayerHistory
from emergent_llm.games import PublicGoodsDescription
from emergent_llm.players import BaseStrategy


class Strategy_COLLECTIVE_1(BaseStrategy):
    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if history is None:
            return Action.C
        others = history.opponent_actions[-1]
        return Action.C if others.mean() >= 0.5 else Action.D


class Strategy_COLLECTIVE_2(BaseStrategy):
    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description
        self.threshold = 0.3 + 0.4 * random.random()

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if state.round_number == self.game_description.n_rounds - 1:
            return D
        if history is None:
            return C
        rate = float(np.mean(history.opponent_actions))
        noise = np.random.random() * 0.1
        return C if rate + noise >= self.threshold else D


class Strategy_COLLECTIVE_3(BaseStrategy):
    def __init__(self, game_description: PublicGoodsDescription):
        self.game_description = game_description

    def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
        if history is None:
            return C
        mine = history.my_payoffs.sum()
        theirs = history.opponent_payoffs.sum(axis=0).max()
        return C if mine >= theirs - 1 else D
