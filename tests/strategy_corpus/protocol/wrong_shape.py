# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first
import numpy as np

NAME = "wrong_shape"


class WrongShape(Attack, Strategy):
    """Sends a final answer of the wrong shape in the middle of a round, then ends the worker."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        ctx = w["ctx"]
        msg = protocol.encode(
            {"seq": ctx.seq, "reasons": [], "memo": [0, 0]},
            {"actions": np.zeros((3, 3), np.int8), "used_rng": np.zeros(7, bool)},
        )
        os.write(w["resp_fd"], msg)
        os._exit(0)
