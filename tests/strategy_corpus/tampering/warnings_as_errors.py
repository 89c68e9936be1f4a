"""Turns every numpy floating-point problem and every warning into an exception."""

import warnings

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "warnings_as_errors"


class WarningsAsErrors(Strategy):
    def act(self, history):
        np.seterr(all="raise")
        warnings.simplefilter("error")
        warnings.catch_warnings = _Raising
        return "C"


class _Raising:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return False
