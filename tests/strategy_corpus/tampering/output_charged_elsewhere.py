"""Prints a flood of output while its progress page names seat 0 (someone else's, once)."""

# ruff: noqa: F821 - worker_locals comes from _frames.py, pasted first by the test
from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "output_charged_elsewhere"


class OutputChargedElsewhere(Strategy):
    def act(self, history):
        page = worker_locals()["ctx"].progress
        seat = page[0]
        page[0] = 0
        print("x" * 100_000)
        page[0] = seat
        return "C"
