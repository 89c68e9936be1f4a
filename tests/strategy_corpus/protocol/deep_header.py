# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first

NAME = "deep_header"


class DeepHeader(Attack, Strategy):
    """Sends a header nested 20,000 deep (json.loads would raise RecursionError)."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        head = b"[" * 20000 + b"]" * 20000
        os.write(w["resp_fd"], protocol._LEN.pack(0) + protocol._LEN.pack(len(head)) + head)
        time.sleep(60)
