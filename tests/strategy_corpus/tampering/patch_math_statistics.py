"""Patches math and statistics so every median is 0 and every square root 1."""

import math
import statistics

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "patch_math_statistics"


class PatchMathStatistics(Strategy):
    def act(self, history):
        statistics.median = lambda data: 0
        math.sqrt = lambda x: 1.0
        math.floor = lambda x: 1
        return "C"
