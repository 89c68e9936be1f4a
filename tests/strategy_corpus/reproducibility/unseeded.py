"""Strategies that draw from unseeded sources, as generated code often does."""

import os
import random
import secrets

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "unseeded"


class UnseededNumpy(Strategy):
    def act(self, history):
        return "C" if np.random.default_rng().random() < 0.5 else "D"


class UnseededRandom(Strategy):
    def act(self, history):
        return "C" if random.Random().random() < 0.5 else "D"


class GlobalReseed(Strategy):
    def act(self, history):
        random.seed()
        return "C" if random.random() < 0.5 else "D"


class SystemEntropy(Strategy):
    def act(self, history):
        bits = os.urandom(1)[0] ^ secrets.randbits(1) ^ random.SystemRandom().getrandbits(1)
        return "C" if bits & 1 else "D"
