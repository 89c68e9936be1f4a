"""A sandbox worker's main loop, run by :mod:`.launch` (in the worker process it forks).

Started fresh by :class:`~mesa_dilemmas.sandbox.pool.Sandbox`
(never forked from the run: the launcher is a new ``exec`` with a clean
environment) and already in its own namespaces, it

1. reads its set-up message: the trusted modules to import and the handlers
   (``"module:function"``) it will serve, and its limits;
2. imports them, points file descriptor 1 at /dev/null and ``sys.stdout`` /
   ``sys.stderr`` at bounded buffers, maps the shared progress page;
3. confines itself (:func:`~mesa_dilemmas.sandbox.confine.confine`)
   and says which limits it applied;
4. serves requests, one at a time, until its input closes.

Handlers are resolved once, before any strategy code is loaded, so a strategy
that rebinds module attributes cannot redirect later requests.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import resource
import sys
from importlib import import_module
from typing import Any

import numpy as np

from mesa_dilemmas.sandbox import protocol
from mesa_dilemmas.sandbox.confine import SandboxLimits, confine

#: slots of the progress page (int64 each): what the worker is doing right now
SLOT_SEAT, SLOT_ROUND, SLOT_PHASE = 0, 1, 2
PROGRESS_SLOTS = 8
#: phases: between requests, loading strategy code, building instances, playing
IDLE, LOADING, BUILDING, PLAYING = 0, 1, 2, 3
#: True in a worker process (set before its handlers are imported)
IN_WORKER = False


class BoundedText(io.TextIOBase):
    """A text stream keeping the first ``limit`` characters written and counting the rest."""

    def __init__(self, limit: int, progress: memoryview | None = None) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0
        self.progress = progress
        #: while a batch is played: seat -> [first round, characters written]
        self.by_seat: dict[int, list[int]] | None = None

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        s = str(s)
        if self.by_seat is not None and self.progress is not None:
            seat = self.progress[SLOT_SEAT]
            got = self.by_seat.setdefault(seat, [self.progress[SLOT_ROUND], 0])
            got[1] += len(s)
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(room, len(s))
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def take(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n[... {self.dropped} more characters dropped]"
        self.parts, self.kept, self.dropped = [], 0, 0
        return text


class Aborted(Exception):
    """The run called off the request in flight (another part of its batch failed)."""


class WorkerContext:
    """What a handler gets besides its request: the progress page, the output buffer, the limits,
    and :meth:`exchange` (an intermediate message to the run and its reply)."""

    def __init__(
        self,
        progress: memoryview,
        output: BoundedText,
        limits: SandboxLimits,
        exchange: Any = None,
    ) -> None:
        self.progress = progress
        self.output = output
        self.limits = limits
        self._exchange = exchange
        self.seq = 0

    def exchange(
        self, header: dict[str, Any], arrays: dict[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Send an intermediate message of the request in flight; the run's reply (raises
        :class:`Aborted` if the run calls the request off)."""
        return self._exchange(self, header, arrays)


def _map_page(fd: int) -> tuple[memoryview, int | None]:
    """The progress page, mapped without keeping a descriptor (``mmap.mmap`` keeps a dup, the
    descriptor returned where ctypes cannot map it)."""
    size = PROGRESS_SLOTS * 8
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        addr = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        return memoryview((ctypes.c_char * size).from_address(addr)).cast("B").cast("q"), None
    except (OSError, AttributeError):
        dup = os.dup(fd)
        return memoryview(mmap.mmap(dup, size)).cast("q"), dup


def main(
    argv: list[str], applied: list[str] | None = None, missing: list[str] | None = None
) -> int:
    """Serve requests; ``applied``/``missing``: the launcher's layers (namespaces, mounts)."""
    req_fd, resp_fd, prog_fd = (int(a) for a in argv[:3])
    # bound now, before any strategy code: rebinding protocol.send/recv later changes nothing here
    send = protocol.send

    def recv(fd: int) -> tuple[dict, dict]:  # the run's requests: as large as its batches
        return protocol.recv(fd, max_bytes=1 << 40)

    init, _ = recv(req_fd)
    limits = SandboxLimits(**init["limits"])
    global IN_WORKER
    IN_WORKER = True
    for name in init.get("preload", []):
        import_module(name)
    handlers = {}
    for key, target in init["handlers"].items():
        module, _, func = target.partition(":")
        handlers[key] = getattr(import_module(module), func)
    progress, page_fd = _map_page(prog_fd)
    os.close(prog_fd)  # mapped: no descriptor of it is left open
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    output = BoundedText(limits.output_chars, progress)
    sys.stdout = sys.stderr = output  # type: ignore[assignment]
    for fd in range(3, 1024):  # nothing but the protocol's pipes stays open
        if fd not in (req_fd, resp_fd, page_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
    keep = max(req_fd, resp_fd, page_fd or 0, 2) + 1
    got, lacking = confine(limits, keep, measure=bool(init.get("measure")))

    def exchange(ctx: WorkerContext, header: dict, arrays: dict) -> tuple[dict, dict]:
        send(resp_fd, {**header, "step": True, "seq": ctx.seq}, arrays)
        reply, reply_arrays = recv(req_fd)
        if reply.get("abort") or reply.get("seq") != ctx.seq:
            raise Aborted("the run called the request off")
        return reply, reply_arrays

    ctx = WorkerContext(progress, output, limits, exchange)
    ready = {"applied": [*(applied or []), *got], "missing": [*(missing or []), *lacking]}
    send(resp_fd, {"ready": True, **ready, "pid": os.getpid()})
    while True:
        try:
            header, arrays = recv(req_fd)
        except EOFError:
            return 0
        ctx.seq = header.get("seq")
        progress[SLOT_PHASE] = IDLE
        handler = handlers.get(header.get("handler"))
        try:
            if handler is None:
                raise ValueError(f"no handler {header.get('handler')!r}")
            out_header, out_arrays = handler(header, arrays, ctx)
        except BaseException as exc:  # noqa: BLE001 - reported to the run, never fatal here
            out_header = {
                "error": f"{type(exc).__name__}: {exc}"[:2000],
                "progress": [int(progress[i]) for i in range(3)],
            }
            out_arrays = {}
        usage = resource.getrusage(resource.RUSAGE_SELF)
        out_header["cpu"] = usage.ru_utime + usage.ru_stime
        out_header["output"] = output.take()
        out_header["seq"] = ctx.seq
        progress[SLOT_PHASE] = IDLE
        send(resp_fd, out_header, out_arrays)
