# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first
import numpy as np

NAME = "wrong_seq"


class WrongSeq(Attack, Strategy):
    """Answers with an old sequence number, then hangs."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        ctx = w["ctx"]
        msg = protocol.encode(
            {"seq": ctx.seq - 1, "step": True, "round": 1}, {"answers": np.zeros(1, bool)}
        )
        os.write(w["resp_fd"], msg)
        time.sleep(60)
