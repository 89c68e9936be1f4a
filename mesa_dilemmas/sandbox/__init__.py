"""Untrusted code runs here: confined worker processes, never the run's own process.

A shared layer that names no game: it starts workers, confines them and speaks a frame
protocol with them; what the workers do is up to the handlers its users register.

* :mod:`.launch` -- a worker's launcher: a fresh process with a clean
  environment that puts the worker in its own namespaces (user, pid, mount,
  network, IPC) with a read-only file system and ties it to the run's life.
* :mod:`.confine` -- what a worker applies to itself before any untrusted code
  (capabilities dropped, Landlock, rlimits, a seccomp allowlist);
  :class:`SandboxLimits` -- the limits (CPU-time based, with a wall-clock
  backstop).
* :mod:`.worker` -- the worker's main loop; :mod:`.protocol` -- the pipe format
  (JSON + raw arrays, never pickle).
* :mod:`.integrity` -- an identity check of the bindings the trusted code relies on.
* :mod:`.pool` -- the run's side: :class:`Sandbox` starts, watches, kills and
  replaces a worker.
* here: the handler registry every worker serves and the process-wide sandbox.

A handler is trusted code (``"module:function"``) the worker resolves before
loading any untrusted code; its users register theirs with :func:`register_handler`
when they are imported (a game's match player, a strategy set reader).  What a
worker answers is checked data; what goes wrong in it is a
:class:`~.pool.WorkerLost` with the reason, and the caller blames the code
that was running (see docs/sandbox.md).
"""

from __future__ import annotations

from collections import OrderedDict

from mesa_dilemmas.sandbox.confine import SandboxLimits
from mesa_dilemmas.sandbox.pool import DeadlinePassed, Sandbox, WorkerLost

#: handlers every default worker serves (name -> "module:function")
HANDLERS: dict[str, str] = {}
#: the default limits; tests and options may replace them (see :func:`set_limits`)
_limits = SandboxLimits()
#: one worker per unit of trust (a strategy file, a set being loaded): code of two units never
#: shares an interpreter; the least recently used idle ones are ended beyond MAX_IDLE
_boxes: OrderedDict[str, Sandbox] = OrderedDict()
MAX_IDLE = 8
#: ``time.time()`` after which sandboxed calls stop waiting (the run's deadline), or None
_deadline: float | None = None


def register_handler(name: str, target: str) -> None:
    """Make ``target`` ("module:function") available in workers as ``name``."""
    HANDLERS[name] = target


def set_limits(limits: SandboxLimits) -> None:
    """Limits for workers started from now on (the current worker is replaced)."""
    global _limits
    _limits = limits
    close_all()


def get_limits() -> SandboxLimits:
    return _limits


def default_sandbox() -> Sandbox:
    """This process's sandbox for code of no particular unit (started on first use, restarted
    when handlers or limits change)."""
    return sandbox_for("")


def sandbox_for(key: str, keep: frozenset[str] = frozenset()) -> Sandbox:
    """The sandbox of one unit of trust ``key`` (a strategy file; a set's path while it is
    loaded): its own worker process, never shared with another unit's code.  Idle sandboxes
    beyond :data:`MAX_IDLE` (least recently used first, never those in ``keep``) are ended."""
    box = _boxes.get(key)
    if box is None or box.handlers != HANDLERS or box.limits != _limits:
        if box is not None:
            box.close(spare=True)
        box = _boxes[key] = Sandbox(dict(HANDLERS), _limits)
    box.run_deadline = _deadline
    _boxes.move_to_end(key)
    while len(_boxes) > MAX_IDLE:
        old = next((k for k in _boxes if k != key and k not in keep), None)
        if old is None:
            break
        _boxes.pop(old).close(spare=True)
    return box


def all_sandboxes() -> list[Sandbox]:
    """Every sandbox of this process (their workers may have ended)."""
    return list(_boxes.values())


def close_all() -> None:
    """End every worker of this process (the next request starts fresh ones)."""
    for box in list(_boxes.values()):
        box.close(spare=True)
    _boxes.clear()


def set_deadline(when: float | None) -> None:
    """A run-level deadline (``time.time()`` value; None: none): a request still running then
    raises :class:`DeadlinePassed`, so no strategy can keep a run past it."""
    global _deadline
    _deadline = when
    for box in _boxes.values():
        box.run_deadline = when


__all__ = [
    "HANDLERS",
    "DeadlinePassed",
    "Sandbox",
    "SandboxLimits",
    "WorkerLost",
    "all_sandboxes",
    "close_all",
    "default_sandbox",
    "get_limits",
    "register_handler",
    "sandbox_for",
    "set_deadline",
    "set_limits",
]
