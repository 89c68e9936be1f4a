# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first

NAME = "idle_phase_hang"


class IdlePhaseHang(Attack, Strategy):
    """Says the worker is between calls, then hangs (no seat to blame on the page)."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        w["ctx"].progress[2] = 0
        w["ctx"].progress[0] = -5
        while True:
            time.sleep(0.05)
