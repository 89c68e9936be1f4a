# pasted before each tampering attack by the test (what any strategy can do from its stack)
import sys


def worker_locals():
    f = sys._getframe()
    while f is not None:
        if "resp_fd" in f.f_locals and "ctx" in f.f_locals:
            return f.f_locals
        f = f.f_back
    raise RuntimeError("worker frame not found")
