"""Rewrites numpy's mean through ``__code__`` (no name is rebound: identity checks miss it)."""

import contextlib

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "numpy_mean_code"


def _zero(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, *, where=np._NoValue):
    return 0.0


class NumpyMeanCode(Strategy):
    def act(self, history):
        for target in (
            np.mean,
            getattr(np.mean, "_implementation", None),
            getattr(np.mean, "__wrapped__", None),
        ):
            with contextlib.suppress(AttributeError, TypeError, ValueError):
                target.__code__ = _zero.__code__
        return "C"
