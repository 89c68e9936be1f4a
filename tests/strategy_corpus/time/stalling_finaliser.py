"""Plays like everyone else; its finaliser (``__del__``) stalls for a minute."""

import time

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "stalling_finaliser"


class StallingFinaliser(Strategy):
    def act(self, history):
        return "C"

    def __del__(self):
        time.sleep(60)
