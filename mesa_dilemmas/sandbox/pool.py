"""The run's side of the sandbox: start, feed, watch, kill and replace worker processes.

A :class:`Sandbox` owns one worker at a time (a run that uses several
processes has one sandbox per process, so the number of workers follows the
number of processes).  :meth:`Sandbox.call` sends one request and waits for the
answer while watching the worker's progress page and its CPU clock: if one call
uses more than ``call_cpu`` CPU seconds without the progress page changing, the
request more than its CPU budget, or either takes ``wall_factor`` times as long
in wall-clock time (a worker that sleeps or blocks), or the worker dies or sends
something malformed, it is killed (its whole process group) and
:class:`WorkerLost` says why and what the worker was doing at that moment, so
the caller can blame the right strategy and go on.  The next call starts a
fresh worker.

Every text a worker sends back (answers, errors, descriptions, its output) is
passed through :func:`mesa_dilemmas.redaction.redact_value` (the rules the LLM layer
uses too) before the run sees it, so an API key can never reach a table, a summary or the terminal from
there.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from mesa_dilemmas import redaction
from mesa_dilemmas.sandbox import protocol
from mesa_dilemmas.sandbox.confine import SandboxLimits
from mesa_dilemmas.sandbox.worker import PROGRESS_SLOTS

#: polling interval of the watchdog (seconds)
POLL = 0.02
#: how long a fresh worker may take to import and confine itself (wall clock)
START_TIMEOUT = 120.0
#: the launcher, run by path (it imports the standard library only)
LAUNCHER = str(Path(__file__).with_name("launch.py"))
#: True while measuring the allowlist (measure.py): seccomp then denies nothing
MEASURE = False
_reported_missing = False


def _redact(value: Any) -> Any:
    """Every string in ``value`` with API keys (and their prefixes, base64) replaced, and made
    safe to write (lone surrogates replaced)."""
    return redaction.redact_value(redaction.safe_value(value))


def _report_missing(missing: list[str]) -> None:
    """Say once per process, on stderr, which layers this machine could not provide."""
    global _reported_missing
    if missing and not _reported_missing:
        _reported_missing = True
        print(
            f"mesa-dilemmas sandbox: strategy workers run without {'; '.join(missing)} "
            "(see docs/sandbox.md)",
            file=sys.stderr,
        )


def _cpu_clock(pid: int) -> int | None:
    """The clock id of process ``pid``'s CPU time (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    clock = ((~pid) << 3) | 2  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    try:
        time.clock_gettime(clock)
    except OSError:
        return None
    return clock


class WorkerLost(RuntimeError):
    """The worker had to be killed or died; ``progress`` is its last progress page."""

    def __init__(
        self, reason: str, progress: tuple[int, ...], stderr: str = "", protocol: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.progress = progress
        self.stderr = stderr
        #: the worker broke the protocol (a malformed, extra or out-of-turn message): the run
        #: blames the unit it sent the request to, never what the worker's page says
        self.protocol = protocol


class DeadlinePassed(RuntimeError):
    """The run's wall-clock deadline (``Sandbox.run_deadline``) passed during a request."""


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
        self.applied: list[str] = []  # the layers the current worker applied
        self.missing: list[str] = []  # the layers it could not
        self.started = 0  # workers started so far
        self.pids: list[int] = []  # every launcher's pid (each leads its own session)
        self.worker_pid: int | None = None  # the current worker (the launcher's grandchild)
        self._worker_fd: int | None = None  # a pidfd of it
        self._clock: int | None = None  # its CPU clock
        self._cpu_seen = 0.0
        self.cpu = 0.0  # CPU seconds of the current worker
        self._stderr: deque[bytes] = deque(maxlen=64)
        self.err_bytes = 0  # bytes the worker wrote to its stderr since the request began
        self._spare: tuple[Any, ...] | None = None
        self.seq = 0  # the number of the last request sent to the current worker
        self._out: memoryview | None = None  # what is still to be written of it
        self._budget: float | None = None  # its CPU budget, the CPU clock at its start
        self._cpu0 = 0.0
        self._waited = 0.0  # wall-clock seconds the run has waited on it so far
        #: ``time.time()`` after which no request waits any longer (the run's deadline)
        self.run_deadline: float | None = None
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
        self.seq = 0
        self.worker_pid, self._clock, self._cpu_seen, self._worker_fd = None, None, 0.0, None
        deadline = time.monotonic() + START_TIMEOUT
        header, _ = self._wait(None, None, deadline)
        launcher = header.get("launcher")
        if not isinstance(launcher, dict) or not isinstance(launcher.get("pid"), int):
            self._lose("the launcher sent no worker pid")
        self.worker_pid = int(launcher["pid"])
        self._clock = _cpu_clock(self.worker_pid)
        with contextlib.suppress(AttributeError, OSError):
            self._worker_fd = os.pidfd_open(self.worker_pid)
        header, _ = self._wait(None, None, deadline)
        self.applied = [str(x) for x in header.get("applied", [])]
        self.missing = [str(x) for x in header.get("missing", [])]
        if self._clock is None:
            self.missing.append("CPU clock of the worker (time limits count wall-clock time)")
        _report_missing(self.missing)
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
        # a clean environment: nothing of the run's (API keys!) reaches a worker
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        # PR_SET_PDEATHSIG fires when the *thread* that started the launcher ends: only from the
        # main thread; otherwise the launcher's pidfd of the run does the job alone
        deathsig = int(threading.current_thread() is threading.main_thread())
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-s",
                "-P",
                "-B",
                LAUNCHER,
                str(req_r),
                str(resp_w),
                str(prog_fd),
                str(os.getpid()),
                str(deathsig),
            ],  # fmt: skip
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
                "measure": MEASURE,
            },
        )
        os.set_blocking(self._req_w, False)  # from now on written under the watchdog

    def _drain(self, proc: subprocess.Popen[bytes]) -> None:
        """Keep the last 64 KiB-ish of the worker's stderr (bounded, whatever it writes)."""
        assert proc.stderr is not None
        try:
            while chunk := proc.stderr.read1(4096):  # type: ignore[attr-defined]
                self._stderr.append(chunk)
                self.err_bytes += len(chunk)
        except (OSError, ValueError):  # closed when the worker was killed
            pass

    def stderr_tail(self) -> str:
        return _redact(b"".join(self._stderr).decode(errors="replace")[-4000:])

    @property
    def last_stderr(self) -> str:
        """What the worker wrote to its stderr since the current request was sent (redacted)."""
        return self.stderr_tail()

    def close(self, spare: bool = False) -> None:
        """Kill the worker (and anything in its process group) and reap it; ``spare``: the spare too."""
        proc, self.proc = self.proc, None
        worker_fd, self._worker_fd = self._worker_fd, None
        if proc is not None:
            _kill(proc, (self._req_w, self._resp_r), worker_fd)
        if spare and self._spare is not None:
            _kill(self._spare[0], self._spare[1:3])
            self._spare = None

    # -- requests ------------------------------------------------------------
    def progress(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self._progress)

    def worker_cpu(self) -> float:
        """CPU seconds the current worker has used (its CPU clock; wall clock where there is none)."""
        if self._clock is None:
            return time.monotonic()
        with contextlib.suppress(OSError):  # it has just ended: the last reading
            self._cpu_seen = time.clock_gettime(self._clock)
        return self._cpu_seen

    def _wait(
        self,
        budget: float | None,
        stall: float | None,
        deadline: float | None = None,
        send: memoryview | None = None,
        max_bytes: int = protocol.MAX_MESSAGE,
        charge: Any = None,
        max_header: int = protocol.MAX_HEADER,
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Send ``send`` (if given) and read the next message, never blocking on the worker.

        ``budget``: CPU seconds for the request, ``stall``: for one call (the progress page
        unchanged); each with a wall-clock backstop ``wall_factor`` times as long (one call's
        at most ``call_wall``); ``deadline``: a ``time.monotonic()`` value (the start-up);
        ``max_bytes``: the largest answer accepted (``max_header``: its JSON header);
        ``charge(progress, wall, cpu)``: told
        where the worker spent each polling interval (it may raise :class:`WorkerLost` via
        :meth:`lose`)."""
        assert self.proc is not None
        limits = self.limits
        factor = max(1.0, float(limits.wall_factor))
        call_wall = float(getattr(limits, "call_wall", 0.0) or 0.0)
        stall_wall = None if stall is None else factor * stall
        if stall_wall is not None and call_wall > 0:
            stall_wall = min(stall_wall, call_wall)
        start = last_change = last_poll = time.monotonic()
        watch_cpu = bool(budget or stall or charge)
        cpu_change = cpu_poll = self.worker_cpu() if watch_cpu else 0.0
        cpu_start = self._cpu0 if budget is not None else 0.0
        waited = self._waited if budget is not None else 0.0
        last = self.progress()
        view = send if send else None
        run_deadline = self.run_deadline
        while True:
            writers = [self._req_w] if view else []
            readable, writable = protocol.ready([self._resp_r], writers, POLL)
            if writable and view:
                try:
                    view = view[os.write(self._req_w, view[: 1 << 16]) :]
                except BlockingIOError:
                    pass
                except OSError:
                    self._lose(self._death_reason() or "stopped reading its request")
            if readable:
                if view:
                    self._broke("answered before reading its request")
                if budget is not None:
                    self._waited = waited + time.monotonic() - start
                try:
                    return protocol.recv(
                        self._resp_r,
                        max_bytes=max_bytes,
                        deadline=time.monotonic() + 10.0,
                        max_header=max_header,
                    )
                except (EOFError, protocol.ProtocolError, TimeoutError, ValueError) as exc:
                    self._broke(f"sent a malformed answer ({exc})")
            now = time.monotonic()
            cpu = self.worker_cpu() if watch_cpu else 0.0
            current = self.progress()
            if charge is not None:
                charge(last, now - last_poll, cpu - cpu_poll)
            last_poll, cpu_poll = now, cpu
            if current != last:
                last, last_change, cpu_change = current, now, cpu
            if self.proc.poll() is not None:
                if protocol.ready([self._resp_r], [], 0)[0]:
                    continue  # what it wrote before it ended is read (and judged) first
                self._lose(self._death_reason() or "the worker ended")
            waiting = " (it stopped reading its request)" if view else ""
            if stall is not None:
                if cpu - cpu_change > stall:
                    self._lose(f"exceeded the CPU-time limit of {stall:g} s for one call")
                if stall_wall is not None and now - last_change > stall_wall:
                    self._lose(
                        f"exceeded the wall-clock time limit of {stall_wall:g} s for one "
                        f"call (it slept or blocked){waiting}"
                    )
            if budget is not None:
                if cpu - cpu_start > budget:
                    self._lose("exceeded the CPU-time limit of its matches")
                if waited + now - start > factor * budget:
                    self._lose(f"exceeded the wall-clock time limit of its matches{waiting}")
            if deadline is not None and now >= deadline:
                self._lose("did not start in time")
            if run_deadline is not None and time.time() >= run_deadline:
                self.close()
                raise DeadlinePassed("the run's deadline passed while strategy code was running")

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

    def _broke(self, reason: str) -> None:
        """The worker broke the protocol (unless it has died: then that is the reason)."""
        died = self._death_reason()
        if died is not None:
            self._lose(died)
        progress = self.progress()
        self.close()
        raise WorkerLost(reason, progress, self.stderr_tail(), protocol=True)

    def _lose(self, reason: str) -> None:
        progress = self.progress()
        self.close()
        raise WorkerLost(reason, progress, self.stderr_tail())

    def pending(self) -> bool:
        """Whether the worker has written something nobody has read (or closed its pipe)."""
        return bool(protocol.ready([self._resp_r], [], 0)[0])

    def _wrote_more(self) -> bool:
        """Whether the worker has written more after its answer (not: only ended, which the
        next request finds; the answer it sent before ending is judged as sent)."""
        if not self.pending():
            return False
        try:
            return os.read(self._resp_r, 1) != b""  # b"": its end is closed, nothing more
        except BlockingIOError:
            return False

    def begin(
        self,
        handler: str,
        header: dict[str, Any],
        arrays: dict[str, np.ndarray] | None = None,
        budget: float | None = None,
    ) -> None:
        """Start a request (written without blocking; the rest is written while :meth:`receive`
        waits).  ``budget``: CPU seconds the whole request may use (default
        ``limits.match_cpu``), with a wall-clock backstop ``wall_factor`` times as long counted
        while the run waits on this worker."""
        if self.proc is None or self.cpu > 0.8 * self.limits.worker_cpu:
            self.close()
            self._start()
        elif self.pending():
            self._broke("sent a message nobody asked for")
        self._progress[:] = 0
        self.seq += 1
        self._stderr.clear()
        self.err_bytes = 0
        self._budget = budget if budget is not None else self.limits.match_cpu
        self._cpu0 = self.worker_cpu()
        self._waited = 0.0
        self._queue(protocol.encode({**header, "handler": handler, "seq": self.seq}, arrays))

    def reply(self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> None:
        """Answer a worker's intermediate message (a round of a batch played in lockstep)."""
        self._queue(protocol.encode({**header, "seq": self.seq}, arrays))

    def _queue(self, data: bytes) -> None:
        self._out = memoryview(data)
        with contextlib.suppress(BlockingIOError):  # what fits now; the rest while waiting
            while self._out:
                self._out = self._out[os.write(self._req_w, self._out[: 1 << 16]) :]
        if not self._out:
            self._out = None

    def receive(
        self, max_bytes: int | None = None, charge: Any = None, max_header: int | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The worker's next message for the request in flight (its answer, or an intermediate
        one that says ``"step"``), checked: the request's sequence number, nothing more written
        after it.  Every text in it is redacted and made safe to write."""
        out, out_arrays = self._wait(
            self._budget,
            self.limits.call_cpu,
            send=self._out,
            max_bytes=max_bytes or protocol.MAX_MESSAGE,
            charge=charge,
            max_header=max_header or protocol.MAX_HEADER,
        )
        self._out = None
        if type(out.get("seq")) is not int or out["seq"] != self.seq:
            self._broke("answered out of turn (wrong sequence number)")
        if self._wrote_more():
            self._broke("sent more than one answer")
        if self._clock is not None:
            self.cpu = self.worker_cpu()
        else:  # what the worker says (the only measure there is)
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                self.cpu = float(out.get("cpu", 0.0))
        return _redact(out), out_arrays

    def call(
        self,
        handler: str,
        header: dict[str, Any],
        arrays: dict[str, np.ndarray] | None = None,
        budget: float | None = None,
        max_bytes: int | None = None,
        charge: Any = None,
        max_header: int | None = None,
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """One request; the answer, or :class:`WorkerLost` (the worker is then gone).

        ``budget``: see :meth:`begin`; ``max_bytes``, ``max_header``, ``charge``: see :meth:`receive` and
        :meth:`_wait`.  What the worker wrote to its stderr meanwhile is :attr:`last_stderr`
        (the run's attribution: this call's, whatever the worker says)."""
        self.begin(handler, header, arrays, budget)
        return self.receive(max_bytes, charge, max_header)

    def lose(
        self, reason: str, progress: tuple[int, ...] | None = None, protocol: bool = True
    ) -> None:
        """End the worker and raise :class:`WorkerLost` (for a caller whose check of an answer
        failed: a protocol breach unless ``protocol`` is False)."""
        self.close()
        raise WorkerLost(
            reason, progress if progress is not None else (-1,) * PROGRESS_SLOTS, protocol=protocol
        )


def _kill(
    proc: subprocess.Popen[bytes], fds: tuple[int, ...], worker_fd: int | None = None
) -> None:
    """End a worker and everything of its launcher's, and reap the launcher.

    The worker is killed first (through its pidfd: never another process that got its pid;
    a spare's launcher, which has not said its worker's pid yet, is asked with SIGTERM): its
    init reaps it and the launcher reaps the init, so no zombie is left behind; if the
    launcher does not end promptly, its whole process group is killed."""
    with contextlib.suppress(OSError):
        if worker_fd is not None:
            signal.pidfd_send_signal(worker_fd, signal.SIGKILL)
            os.close(worker_fd)
        elif proc.poll() is None:  # a spare: its launcher ends it the same way on SIGTERM
            proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5.0)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    if proc.stderr is not None:
        proc.stderr.close()
