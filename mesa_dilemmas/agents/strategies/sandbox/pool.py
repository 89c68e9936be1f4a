"""The run's side of the sandbox: start, feed, watch, kill and replace worker processes.

A :class:`Sandbox` owns one worker at a time (a run that uses several
processes has one sandbox per process, so the number of workers follows the
number of processes).  :meth:`Sandbox.call` sends one request and waits for the
answer while watching the worker's progress page: if the worker stops making
progress for ``call_timeout`` seconds, exceeds the request's time budget, dies,
or sends something malformed, it is killed (its whole process group) and
:class:`WorkerLost` says why and what the worker was doing at that moment, so
the caller can blame the right strategy and go on.  The next call starts a
fresh worker.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any

import numpy as np

from mesa_dilemmas.agents.strategies.sandbox import protocol
from mesa_dilemmas.agents.strategies.sandbox.confine import SandboxLimits
from mesa_dilemmas.agents.strategies.sandbox.worker import PROGRESS_SLOTS

#: polling interval of the watchdog (seconds)
POLL = 0.02
#: how long a fresh worker may take to import and confine itself
START_TIMEOUT = 120.0


class WorkerLost(RuntimeError):
    """The worker had to be killed or died; ``progress`` is its last progress page."""

    def __init__(self, reason: str, progress: tuple[int, ...], stderr: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.progress = progress
        self.stderr = stderr


class Sandbox:
    """One confined worker process serving ``handlers`` (name -> ``"module:function"``)."""

    def __init__(
        self,
        handlers: dict[str, str],
        limits: SandboxLimits | None = None,
        preload: tuple[str, ...] = (),
    ) -> None:
        self.handlers = dict(handlers)
        self.limits = limits or SandboxLimits()
        self.preload = preload
        self.proc: subprocess.Popen[bytes] | None = None
        self.applied: list[str] = []
        self.started = 0  # workers started so far
        self.pids: list[int] = []  # every worker's pid (each leads its own session)
        self.cpu = 0.0  # CPU seconds of the current worker, as it last reported
        self._stderr: deque[bytes] = deque(maxlen=64)
        self._spare: tuple[Any, ...] | None = None
        atexit.register(self.close, True)

    # -- life cycle ----------------------------------------------------------
    def _start(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            (self.proc, self._req_w, self._resp_r, self._page, self._progress) = spare
        else:
            self._spawn()
        self.started += 1
        self.cpu = 0.0
        header, _ = self._wait(time.monotonic() + START_TIMEOUT, stall=None)
        self.applied = list(header.get("applied", []))
        if self.started > 1:  # workers are being lost: keep the next one warm
            current = (self.proc, self._req_w, self._resp_r, self._page, self._progress)
            self._spawn()
            self._spare = (self.proc, self._req_w, self._resp_r, self._page, self._progress)
            (self.proc, self._req_w, self._resp_r, self._page, self._progress) = current

    def _spawn(self) -> None:
        """Start a worker process and send its set-up (it imports and confines itself meanwhile)."""
        req_r, self._req_w = os.pipe()
        self._resp_r, resp_w = os.pipe()
        if hasattr(os, "memfd_create"):
            prog_fd = os.memfd_create("mesa-dilemmas-progress")
        else:  # macOS
            fd, name = tempfile.mkstemp(prefix="mesa-dilemmas-progress-")
            os.unlink(name)
            prog_fd = fd
        os.ftruncate(prog_fd, PROGRESS_SLOTS * 8)
        import mmap

        self._page = mmap.mmap(prog_fd, PROGRESS_SLOTS * 8)
        self._progress = np.frombuffer(self._page, dtype=np.int64)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-s",
                "-m",
                "mesa_dilemmas.agents.strategies.sandbox.worker",
                str(req_r),
                str(resp_w),
                str(prog_fd),
            ],
            pass_fds=(req_r, resp_w, prog_fd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: killed as a whole
        )
        for fd in (req_r, resp_w, prog_fd):
            os.close(fd)
        self.pids.append(self.proc.pid)
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        protocol.send(
            self._req_w,
            {
                "limits": self.limits.as_dict(),
                "handlers": self.handlers,
                "preload": list(self.preload),
            },
        )

    def _drain(self, proc: subprocess.Popen[bytes]) -> None:
        """Keep the last 64 KiB-ish of the worker's stderr (bounded, whatever it writes)."""
        assert proc.stderr is not None
        try:
            while chunk := proc.stderr.read1(4096):  # type: ignore[attr-defined]
                self._stderr.append(chunk)
        except (OSError, ValueError):  # closed when the worker was killed
            pass

    def stderr_tail(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")[-4000:]

    def close(self, spare: bool = False) -> None:
        """Kill the worker (and anything in its process group) and reap it; ``spare``: the spare too."""
        proc, self.proc = self.proc, None
        if proc is not None:
            _kill(proc, (self._req_w, self._resp_r))
        if spare and self._spare is not None:
            _kill(self._spare[0], self._spare[1:3])
            self._spare = None

    # -- requests ------------------------------------------------------------
    def progress(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self._progress)

    def _wait(
        self, deadline: float, stall: float | None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        assert self.proc is not None
        last = self.progress()
        last_change = time.monotonic()
        while True:
            now = time.monotonic()
            ready = select.select([self._resp_r], [], [], min(POLL, max(0.0, deadline - now)))[0]
            if ready:
                try:
                    return protocol.recv(self._resp_r, deadline=time.monotonic() + 10.0)
                except (EOFError, protocol.ProtocolError, TimeoutError, ValueError) as exc:
                    self._lose(self._death_reason() or f"sent a malformed answer ({exc})")
            now = time.monotonic()
            current = self.progress()
            if current != last:
                last, last_change = current, now
            if self.proc.poll() is not None:
                self._lose(self._death_reason() or "the worker ended")
            if stall is not None and now - last_change > stall:
                self._lose(f"exceeded the time limit of {stall:g} s for one call")
            if now >= deadline:
                self._lose("exceeded the time limit of its matches")

    def _death_reason(self) -> str | None:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return None
        if code < 0:
            sig = signal.Signals(-code).name
            why = {
                "SIGXCPU": "exceeded its CPU-time limit",
                "SIGXFSZ": "tried to write a file",
                "SIGKILL": "was killed (SIGKILL)",
                "SIGSEGV": "crashed the interpreter (SIGSEGV)",
                "SIGABRT": "aborted the interpreter (SIGABRT)",
            }.get(sig, f"ended the worker with {sig}")
            return why
        return f"ended the worker process (exit code {code})"

    def _lose(self, reason: str) -> None:
        progress = self.progress()
        self.close()
        raise WorkerLost(reason, progress, self.stderr_tail())

    def call(
        self,
        handler: str,
        header: dict[str, Any],
        arrays: dict[str, np.ndarray] | None = None,
        budget: float | None = None,
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """One request; the answer, or :class:`WorkerLost` (the worker is then gone)."""
        if self.proc is None or self.cpu > 0.8 * self.limits.worker_cpu:
            self.close()
            self._start()
        self._progress[:] = 0
        try:
            protocol.send(self._req_w, {**header, "handler": handler}, arrays)
        except OSError:
            self._lose(self._death_reason() or "the worker stopped reading")
        deadline = time.monotonic() + (budget if budget is not None else self.limits.match_timeout)
        out, out_arrays = self._wait(deadline, stall=self.limits.call_timeout)
        try:
            self.cpu = float(out.get("cpu", 0.0))
        except (TypeError, ValueError):
            self.cpu = 0.0
        return out, out_arrays


def _kill(proc: subprocess.Popen[bytes], fds: tuple[int, ...]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    if proc.stderr is not None:
        proc.stderr.close()


_SHARED: dict[tuple[Any, ...], Sandbox] = {}


def shared_sandbox(
    handlers: dict[str, str], limits: SandboxLimits | None = None, preload: tuple[str, ...] = ()
) -> Sandbox:
    """This process's sandbox for these handlers and limits (one worker, started on first use)."""
    limits = limits or SandboxLimits()
    key = (tuple(sorted(handlers.items())), limits, preload)
    box = _SHARED.get(key)
    if box is None:
        box = _SHARED[key] = Sandbox(handlers, limits, preload)
    return box
