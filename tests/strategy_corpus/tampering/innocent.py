"""Well-behaved strategies that lean on what the tampering attacks patch (numpy's mean,
math, statistics, warnings) -- the set whose results must not change."""

import math
import statistics
import warnings

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "innocent_numeric"


class MeanFollower(Strategy):
    """Cooperates while the others' mean cooperation (numpy) is at least a half."""

    def act(self, history):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # round 1: the mean of nothing is nan
            level = np.mean(history.opponent_cooperators) / max(1, history.n_players - 1)
        return "C" if np.isnan(level) or level >= 0.5 else "D"


class MedianKeeper(Strategy):
    """Cooperates while the median number of cooperators (statistics) is at least one."""

    def act(self, history):
        seen = list(history.opponent_cooperators)
        return "C" if not seen or statistics.median(seen) >= 1 else "D"


class SquareRooter(Strategy):
    """Cooperates when the square root of its payoff so far is a whole number of steps."""

    def act(self, history):
        total = float(np.sum(history.my_payoffs))
        return "C" if math.floor(math.sqrt(max(total, 0.0))) % 2 == 0 else "D"
