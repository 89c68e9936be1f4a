# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first

NAME = "huge_message"


class HugeMessage(Attack, Strategy):
    """Claims a 1 GiB header and starts sending it (the run must not allocate it)."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        os.write(w["resp_fd"], protocol._LEN.pack(0) + protocol._LEN.pack(1 << 30))
        chunk = b" " * (1 << 16)
        for _ in range(1 << 14):
            os.write(w["resp_fd"], chunk)
