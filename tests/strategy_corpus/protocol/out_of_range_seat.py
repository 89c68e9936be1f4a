# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first

NAME = "out_of_range_seat"


class OutOfRangeSeat(Attack, Strategy):
    """Points the progress page at a seat that does not exist, then hangs."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        w["ctx"].progress[0] = 10**9
        w["ctx"].progress[2] = 3
        while True:
            time.sleep(0.05)
