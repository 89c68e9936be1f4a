# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first
import numpy as np

NAME = "extra_answer"


class ExtraAnswer(Attack, Strategy):
    """Writes one more round answer than asked, well formed (which would shift every later one)."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        ctx = w["ctx"]
        f = sys._getframe()
        while "free_seats" not in f.f_locals:
            f = f.f_back
        seats = len(f.f_locals["free_seats"])
        one = protocol.encode(
            {"seq": ctx.seq, "step": True, "round": 1}, {"answers": np.zeros(seats, bool)}
        )
        os.write(w["resp_fd"], one)
