"""Hangs after pointing its progress page at seat 0 (someone else's, once)."""

# ruff: noqa: F821 - worker_locals comes from _frames.py, pasted first by the test
import time

from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "forged_blame"


class ForgedBlame(Strategy):
    def act(self, history):
        if history.round_number == 1:
            worker_locals()["ctx"].progress[0] = 0
            while True:
                time.sleep(0.05)
        return "C"
