"""Hostile strategies for the sandbox tests (never imported by the test process itself).

The test copies this file with MARKER_DIR and PORT replaced; every class tries
one thing a strategy must not be able to do (or to do to the run).  The
expected reasons are in tests/test_sandbox.py.
"""

import builtins
import importlib
import os
import random
import signal
import socket
import sys
import threading
import time

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies import C, Strategy

MARKER_DIR = "@MARKER_DIR@"
PORT = int("@PORT@")
MARKER = os.path.join(MARKER_DIR, "marker")
VICTIM = os.path.join(MARKER_DIR, "victim.txt")


class WriteFile(Strategy):
    def act(self, h):
        with open(MARKER, "w") as f:
            f.write("pwned")
        return C


class OsOpenCreate(Strategy):
    def act(self, h):
        os.close(os.open(MARKER, os.O_CREAT | os.O_WRONLY))
        return C


class AppendExisting(Strategy):
    def act(self, h):
        with open(VICTIM, "a") as f:
            f.write("pwned")
        return C


class PathlibWrite(Strategy):
    def act(self, h):
        import pathlib

        pathlib.Path(MARKER).write_text("pwned")
        return C


class RemoveFile(Strategy):
    def act(self, h):
        os.remove(VICTIM)
        return C


class RenameFile(Strategy):
    def act(self, h):
        os.rename(VICTIM, MARKER)
        return C


class ChmodFile(Strategy):
    def act(self, h):
        os.chmod(VICTIM, 0o777)
        return C


class MakeDir(Strategy):
    def act(self, h):
        os.mkdir(MARKER)
        return C


class Shell(Strategy):
    def act(self, h):
        import subprocess

        subprocess.run(["touch", MARKER], check=True)
        return C


class OsSystem(Strategy):
    def act(self, h):
        if os.system(f"touch {MARKER}") != 0:
            raise OSError("os.system failed")
        return C


class OsPopen(Strategy):
    def act(self, h):
        os.popen(f"touch {MARKER}").read()
        return C


class Exec(Strategy):
    def act(self, h):
        os.execv("/bin/sh", ["sh", "-c", f"touch {MARKER}"])


class Fork(Strategy):
    def act(self, h):
        if os.fork() == 0:
            open(MARKER, "w").close()
            os._exit(0)
        return C


class ForkBomb(Strategy):
    def act(self, h):
        while True:
            os.fork()


class MultiprocessingChild(Strategy):
    def act(self, h):
        import multiprocessing

        multiprocessing.Process(target=time.sleep, args=(60,)).start()
        return C


class BackgroundThread(Strategy):
    def act(self, h):
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        return C


class RawThread(Strategy):
    def act(self, h):
        import _thread

        _thread.start_new_thread(time.sleep, (60,))
        return C


class TcpConnect(Strategy):
    def act(self, h):
        socket.create_connection(("127.0.0.1", PORT), timeout=1).sendall(b"pwned")
        return C


class UdpSend(Strategy):
    def act(self, h):
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"pwned", ("127.0.0.1", PORT))
        return C


class HttpFetch(Strategy):
    def act(self, h):
        import urllib.request

        urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=1)
        return C


class DunderImport(Strategy):
    def act(self, h):
        __import__("subprocess").Popen(["touch", MARKER])
        return C


class Importlib(Strategy):
    def act(self, h):
        importlib.import_module("subprocess").check_call(["touch", MARKER])
        return C


class BuiltinsOpen(Strategy):
    def act(self, h):
        b = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
        b["open"](MARKER, "w").write("pwned")
        return C


class Subclasses(Strategy):
    def act(self, h):
        for cls in ().__class__.__base__.__subclasses__():
            if cls.__name__ == "Popen":
                cls(["touch", MARKER])
                return C
        import subprocess  # make sure Popen is loaded, then walk again

        for cls in object.__subclasses__():
            if cls is subprocess.Popen:
                cls(["touch", MARKER])
        return C


class FrameWalk(Strategy):
    """Walks up to the engine's frame and changes what failing strategies play."""

    def act(self, h):
        frame = sys._getframe(1)
        frame.f_globals["DEFAULT_ACTION"] = "C"
        return C


class ExitHard(Strategy):
    def act(self, h):
        os._exit(3)


class SysExit(Strategy):
    def act(self, h):
        sys.exit(0)


class KeyboardInterrupter(Strategy):
    def act(self, h):
        raise KeyboardInterrupt


class KillParent(Strategy):
    def act(self, h):
        os.kill(os.getppid(), signal.SIGKILL)
        return C


class KillGroup(Strategy):
    def act(self, h):
        os.kill(0, signal.SIGKILL)
        return C


class KillSelf(Strategy):
    def act(self, h):
        os.kill(os.getpid(), signal.SIGKILL)


class Abort(Strategy):
    def act(self, h):
        os.abort()


class Segfault(Strategy):
    def act(self, h):
        import ctypes

        ctypes.string_at(0)


class IgnoreSignalsAndSpin(Strategy):
    def act(self, h):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            pass


class InfiniteLoop(Strategy):
    def act(self, h):
        if h.round_number == 2:
            while True:
                pass
        return C


class SleepForever(Strategy):
    def act(self, h):
        time.sleep(10**6)


class CatchEverythingLoop(Strategy):
    def act(self, h):
        while True:
            try:
                while True:
                    pass
            except BaseException:  # noqa: BLE001
                continue


class Recursion(Strategy):
    def act(self, h):
        return self.act(h)


class HugeAllocation(Strategy):
    def act(self, h):
        bytearray(10**12)
        return C


class GrowForever(Strategy):
    def act(self, h):
        hoard = []
        while True:
            hoard.append(bytearray(10**8))


class NumpyHuge(Strategy):
    def act(self, h):
        np.ones((10**6, 10**6))
        return C


class PatchNumpy(Strategy):
    def act(self, h):
        np.sum = lambda *a, **k: 0
        return C


class PatchEngine(Strategy):
    def act(self, h):
        from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore

        HistoryStore.record = lambda self, *a: None
        return C


class PatchBuiltins(Strategy):
    def act(self, h):
        builtins.len = lambda x: 0
        return C


class PatchRandom(Strategy):
    def act(self, h):
        random.random = lambda: 0.0
        return C


class RaiseLimits(Strategy):
    def act(self, h):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        return C


class HugeOutput(Strategy):
    def act(self, h):
        print("x" * 1_000_000)
        sys.stderr.write("y" * 1_000_000)
        return C


class BadAnswer(Strategy):
    def act(self, h):
        return "cooperate"


class NoAnswer(Strategy):
    def act(self, h):
        return None


class BrokenConstructor(Strategy):
    def __init__(self, game):
        raise RuntimeError("no")

    def act(self, h):
        return C


class HangingConstructor(Strategy):
    def __init__(self, game):
        super().__init__(game)
        while True:
            pass

    def act(self, h):
        return C
