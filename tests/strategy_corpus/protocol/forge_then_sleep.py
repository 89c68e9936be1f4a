# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first
import numpy as np

NAME = "forge_then_sleep"


class ForgeThenSleep(Attack, Strategy):
    """Sends a well-formed final answer for the whole batch at once, then sleeps for ever: the
    worker stops reading, so the run's next request (over 64 KiB) cannot be written."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        f = sys._getframe()
        while "seat_entry" not in f.f_locals:
            f = f.f_back
        batch, n = f.f_locals["seat_entry"].shape
        played = f.f_locals["played"]
        protocol.send(
            w["resp_fd"],
            {"seq": getattr(w["ctx"], "seq", 0), "reasons": [], "memo": [0, 0]},
            {
                "actions": np.zeros((batch, n, played), np.int8),
                "used_rng": np.zeros((batch, n), bool),
                "flag_seat": np.zeros(0, np.int64),
                "flag_round": np.zeros(0, np.int64),
                "flag_count": np.zeros(0, np.int64),
                "flag_reason": np.zeros(0, np.int64),
            },
        )
        while True:
            time.sleep(0.05)
