# shared by the protocol attacks: pasted at the top of each attack file by the test
import os  # noqa: F401 - for the attack that follows
import sys
import time  # noqa: F401

from mesa_dilemmas.dilemmas.binary.strategies import Strategy  # noqa: F401
from mesa_dilemmas.sandbox import protocol  # noqa: F401


def worker_frame():
    """The worker's main loop frame (it holds the pipes and the context)."""
    f = sys._getframe()
    while f is not None:
        if "resp_fd" in f.f_locals and "ctx" in f.f_locals:
            return f.f_locals
        f = f.f_back
    raise RuntimeError("worker frame not found")


class Attack:
    """A mixin (each attack's ``act`` calls ``self.play``) (not a strategy itself): plays C; in round 2 of its first match runs ``attack(worker locals)`` once."""

    done = False

    def play(self, history):
        if history.round_number == 1 and not type(self).done:
            type(self).done = True
            self.attack(worker_frame())
        return "C"
