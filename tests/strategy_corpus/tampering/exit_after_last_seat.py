"""Answers C with a string whose hash ends the worker: after the last seat of the round has
played, while the worker checks the answers (its progress page names the last seat)."""

import os

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "exit_after_last_seat"


class _Bomb(str):
    def __hash__(self):
        os._exit(0)


class ExitAfterLastSeat(Strategy):
    def act(self, history):
        return _Bomb("C") if history.round_number == 2 else "C"
