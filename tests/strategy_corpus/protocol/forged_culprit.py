# ruff: noqa: F821 - the test puts _attack.py (Attack, Strategy, os, sys, time, protocol) first

NAME = "forged_culprit"


class ForgedCulprit(Attack, Strategy):
    """Reports another seat as the culprit of a patch (a forged blame) and stops."""

    def act(self, history):
        return self.play(history)

    def attack(self, w):
        ctx = w["ctx"]
        msg = protocol.encode({"seq": ctx.seq, "culprit": 0, "round": 1, "what": "numpy.mean"})
        os.write(w["resp_fd"], msg)
        time.sleep(60)
