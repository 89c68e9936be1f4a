"""Collective strategies in the style LLMs write them (numpy over the history every call)."""

import math

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import Strategy


class ForgivingMajority(Strategy):
    """Cooperate first; then cooperate if at least half the others did on average over 3 rounds."""

    def act(self, history):
        if history.is_first_round:
            return "C"
        window = history.opponent_cooperators[-3:]
        share = float(np.mean(window)) / (self.game.n_players - 1)
        if history.is_last_round and share < 0.75:
            return "D"
        return "C" if share >= 0.5 else "D"


class TrendFollower(Strategy):
    """Cooperate while cooperation is not falling; forgive after two rounds of punishment."""

    def __init__(self, game):
        super().__init__(game)
        self.punished = 0

    def act(self, history):
        t = history.round_number
        if t < 2:
            return "C"
        coop = history.cooperators.astype(float) / self.game.n_players
        slope = np.polyfit(np.arange(t), coop, 1)[0] if t >= 3 else coop[-1] - coop[-2]
        if slope < -0.05 and self.punished < 2:
            self.punished += 1
            return "D"
        self.punished = 0
        return "C"


class ThresholdKeeper(Strategy):
    """Cooperate while the group's cooperation rate stays above a level set by the game."""

    def act(self, history):
        if history.is_first_round:
            return "C"
        n = self.game.n_players
        level = 0.5 if self.game.k is None else max(0.2, 1.0 - self.game.k / n)
        rate = history.cooperators.sum() / (n * history.round_number)
        return "C" if rate >= level else "D"


class GenerousTitForTat(Strategy):
    """Mirror the majority of the last round, but cooperate after two defections in a row."""

    def act(self, history):
        if history.is_first_round:
            return "C"
        mine = history.my_actions
        if len(mine) >= 2 and not mine[-1] and not mine[-2]:
            return "C"
        last = history.last_opponent_cooperators
        return "C" if last * 2 >= self.game.n_players - 1 else "D"


class PayoffComparer(Strategy):
    """Cooperate unless my average payoff is well below the group's."""

    def act(self, history):
        if history.round_number < 2:
            return "C"
        pay = history.payoffs
        mine = pay[:, history.me].mean()
        group = pay.mean()
        return "C" if mine >= 0.8 * group else "D"


class EndgameCooperator(Strategy):
    """Cooperate throughout except the last round when fewer than half cooperated before."""

    def act(self, history):
        if not history.is_last_round:
            return "C"
        rate = history.opponent_cooperators.mean() / (self.game.n_players - 1)
        return "C" if rate >= 0.5 else "D"


class CautiousStarter(Strategy):
    """Cooperate with probability rising with the others' cooperation (random)."""

    def act(self, history):
        if history.is_first_round:
            return "C" if self.rng.random() < 0.8 else "D"
        rate = history.last_opponent_cooperators / (self.game.n_players - 1)
        return "C" if self.rng.random() < 0.2 + 0.8 * rate else "D"


class LogScaled(Strategy):
    """Cooperate if the others' cooperation exceeds a log-scaled bar."""

    def act(self, history):
        if history.is_first_round:
            return "C"
        n = self.game.n_players
        bar = math.log(n) / math.log(n + 4)
        return "C" if history.last_opponent_cooperators / (n - 1) >= bar * 0.6 else "D"
