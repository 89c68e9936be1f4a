"""Strategy code from files runs here: confined worker processes, never the run's own process.

* :mod:`.launch` -- a worker's launcher: a fresh process with a clean
  environment that puts the worker in its own namespaces (user, pid, mount,
  network, IPC) with a read-only file system and ties it to the run's life.
* :mod:`.confine` -- what a worker applies to itself before any strategy code
  (capabilities dropped, Landlock, rlimits, a seccomp allowlist);
  :class:`SandboxLimits` -- the limits (CPU-time based, with a wall-clock
  backstop).
* :mod:`.worker` -- the worker's main loop; :mod:`.protocol` -- the pipe format
  (JSON + raw arrays, never pickle).
* :mod:`.measure` -- how the seccomp allowlist was measured (strace).
* :mod:`.pool` -- the run's side: :class:`Sandbox` starts, watches, kills and
  replaces a worker.
* here: the handler registry every worker serves and the process-wide sandbox.

A handler is trusted code (``"module:function"``) the worker resolves before
loading any strategy; the engine registers its match player
(``mesa_dilemmas.dilemmas.binary.game``), the loader its set reader.  What a
worker answers is checked data; what goes wrong in it is a
:class:`~.pool.WorkerLost` with the reason, and the caller blames the strategy
that was running (see docs/sandbox.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from mesa_dilemmas.agents.strategies.sandbox.confine import SandboxLimits
from mesa_dilemmas.agents.strategies.sandbox.pool import Sandbox, WorkerLost

#: handlers every default worker serves (name -> "module:function")
HANDLERS: dict[str, str] = {
    "describe": "mesa_dilemmas.agents.strategies.loader:describe_handler",
}
#: the default limits; tests and options may replace them (see :func:`set_limits`)
_limits = SandboxLimits()
_box: Sandbox | None = None


@dataclass(frozen=True)
class Flag:
    """A strategy misbehaved: where first, how often in the batch, and why."""

    strategy: str
    match: int
    seat: int
    round: int  # 0-based; -1: while being built
    reason: str
    count: int = 1


def register_handler(name: str, target: str) -> None:
    """Make ``target`` ("module:function") available in workers as ``name``."""
    HANDLERS[name] = target


def set_limits(limits: SandboxLimits) -> None:
    """Limits for workers started from now on (the current worker is replaced)."""
    global _limits
    _limits = limits
    if _box is not None:
        _box.close(spare=True)


def get_limits() -> SandboxLimits:
    return _limits


def default_sandbox() -> Sandbox:
    """This process's sandbox (one worker, started on first use, restarted when handlers change)."""
    global _box
    if _box is None or _box.handlers != HANDLERS or _box.limits != _limits:
        if _box is not None:
            _box.close(spare=True)
        _box = Sandbox(dict(HANDLERS), _limits)
    return _box


__all__ = [
    "HANDLERS",
    "Flag",
    "Sandbox",
    "SandboxLimits",
    "WorkerLost",
    "default_sandbox",
    "get_limits",
    "register_handler",
    "set_limits",
]
