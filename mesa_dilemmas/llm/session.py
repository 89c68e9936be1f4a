"""The run session: how every process and thread of a run finds its settings, record and budget.

A run is described by its session file, ``llm_session.json`` in the run directory (the
settings, the run directory and the record's segment), written by :func:`start_run`.  Which
run is *active* is a :class:`contextvars.ContextVar` holding the path of that file -- no
environment variable and no process-wide global -- set for a block by :func:`use`::

    path = session.start_run(settings, run_dir)   # also activates it in the caller's context
    try:
        ...                                       # calls are recorded in run_dir
    finally:
        session.finish_run()                      # exports the record, resets the active run

Whatever hands work to another process passes the path explicitly with the work (the
execution backends send it with every task, a batch chunk carries it as ``llm_session``),
and the worker wraps the work in ``with session.use(path):``.  Threads start with an empty
context: a run's work moved to a new thread runs in ``contextvars.copy_context().run(...)``
(lockstep runs, ``asyncio.to_thread``) or sets the run with :func:`activate` (the dashboard's
round thread).  Each process opens a run's :class:`RunState` lazily on its first call
(:func:`current`) and caches it by (pid, path); the cache is never the source of truth.
Everything a call does is recorded in the run's ``llm_calls.sqlite`` (see
:mod:`mesa_dilemmas.llm.stores.recorder`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mesa_dilemmas.files import write_text_atomic
from mesa_dilemmas.llm.accounting import export_parquet, summarize
from mesa_dilemmas.llm.accounting.budget import Budget
from mesa_dilemmas.llm.accounting.cluster import GateBudget, gate_name
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.stores import recorder as _recorder
from mesa_dilemmas.llm.stores.recorder import RunRecorder

SESSION_FILE = "llm_session.json"

#: the session file of the run active in this context (None: no run)
_ACTIVE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mesa_dilemmas_llm_run", default=None
)
#: the runs :func:`start_run` activated in this context, with the tokens that undo it
_STARTED: contextvars.ContextVar[tuple[tuple[str, contextvars.Token[str | None]], ...]] = (
    contextvars.ContextVar("mesa_dilemmas_llm_started", default=())
)


@dataclass
class RunState:
    """What a process knows about the run it is part of."""

    run_dir: Path
    settings: LLMSettings
    segment: int
    recorder: RunRecorder
    budget: Budget


_STATES: dict[tuple[int, str], RunState] = {}
_OPENING = threading.Lock()


def active_path() -> str | None:
    """The session file of the run active in this context (None outside a run): what to send
    with work handed to another process, which runs it in ``with use(path):``."""
    return _ACTIVE.get()


@contextlib.contextmanager
def use(path: str | Path | None) -> Iterator[str | None]:
    """Make the run of session file ``path`` the active one inside the block (``None``: no
    run at all, e.g. for a dry run inside another run); the previous one is back after it."""
    value = None if path is None else str(path)
    token = _ACTIVE.set(value)
    try:
        yield value
    finally:
        _ACTIVE.reset(token)


def activate(path: str | Path | None) -> None:
    """Make ``path`` the active run for the rest of this context -- for a thread started for
    one run's work (a thread starts with no run active); elsewhere prefer :func:`use`."""
    _ACTIVE.set(None if path is None else str(path))


def start_run(settings: LLMSettings, run_dir: Path, resume: bool = False) -> Path:
    """Open the run's record (a new segment of it when resuming), write its session file and
    return the file's path.

    For the caller's convenience the run is also made active in the caller's context until
    :func:`finish_run` (which resets it); other processes and new threads get the path
    explicitly (:func:`use`).  Without ``resume`` an earlier record in ``run_dir`` is
    discarded: the run starts over."""
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    old = _recorder._OPEN.pop(run_dir, None)
    if old is not None:
        old.close()
    if not resume:
        for name in (
            _recorder.FILENAME,
            f"{_recorder.FILENAME}-wal",
            f"{_recorder.FILENAME}-shm",
            "llm_calls.parquet",
            "llm_decisions.parquet",
        ):
            (run_dir / name).unlink(missing_ok=True)
    rec = RunRecorder.at(run_dir)
    segment = rec.next_segment()
    path = run_dir / SESSION_FILE
    for key in [k for k in _STATES if k[1] == str(path)]:
        del _STATES[key]
    write_text_atomic(
        path,
        json.dumps(
            {
                "run_dir": str(run_dir),
                "segment": segment,
                "started": time.time(),
                "settings": settings.model_dump(mode="json"),
            },
            indent=2,
        ),
    )
    key = str(path)
    _STARTED.set((*_STARTED.get(), (key, _ACTIVE.set(key))))
    return path


def current() -> RunState | None:
    """This process's view of the run active in this context, or None outside a run."""
    path = _ACTIVE.get()
    if not path:
        return None
    return _open(path)


def _open(path: str) -> RunState:
    """The run of session file ``path`` as this process sees it (opened on first use)."""
    key = (os.getpid(), path)
    state = _STATES.get(key)
    if state is not None:
        return state
    with _OPENING:  # runs played in lockstep reach here from several threads at once
        state = _STATES.get(key)
        if state is not None:
            return state
        raw = json.loads(Path(path).read_text())
        settings = LLMSettings.model_validate(raw["settings"])
        run_dir = Path(raw["run_dir"])
        rec = RunRecorder.at(run_dir, raw["segment"])
        budget = GateBudget(settings.budget) if gate_name() else Budget(settings.budget, rec)
        state = RunState(run_dir, settings, raw["segment"], rec, budget)
        _STATES[key] = state
    return state


def current_settings() -> LLMSettings | None:
    state = current()
    return None if state is None else state.settings


def _deactivate(path: str) -> None:
    """Undo :func:`start_run`'s activation of ``path`` in this context."""
    started = _STARTED.get()
    for i in range(len(started) - 1, -1, -1):
        if started[i][0] == path:
            _STARTED.set(started[:i] + started[i + 1 :])
            try:
                _ACTIVE.reset(started[i][1])
            except (ValueError, RuntimeError):  # set in another context, or already reset
                if _ACTIVE.get() == path:
                    _ACTIVE.set(None)
            return
    if _ACTIVE.get() == path:
        _ACTIVE.set(None)


def finish_run(path: str | Path | None = None) -> dict[str, Any]:
    """Export the record of run ``path`` (default: the active one) to Parquet, make the run
    inactive in this context and return the accounting summary (``{}`` outside a run).

    A run that made no LLM call leaves no LLM files behind."""
    key = str(path) if path is not None else _ACTIVE.get()
    if not key:
        return {}
    _deactivate(key)
    if not Path(key).exists():  # finished already
        _STATES.pop((os.getpid(), key), None)
        return {}
    state = _open(key)
    _STATES.pop((os.getpid(), key), None)
    rec = state.recorder
    summary = summarize(
        rec, {"limits": state.settings.budget.model_dump(), "spent": state.budget.spent()}
    )
    n_rows = rec.db.execute(
        "SELECT (SELECT COUNT(*) FROM calls) + (SELECT COUNT(*) FROM decisions)"
    )[0][0]
    if n_rows == 0:
        rec.close()
        _recorder._OPEN.pop(state.run_dir.resolve(), None)
        for name in (
            _recorder.FILENAME,
            f"{_recorder.FILENAME}-wal",
            f"{_recorder.FILENAME}-shm",
            SESSION_FILE,
        ):
            (state.run_dir / name).unlink(missing_ok=True)
        return summary
    summary["files"] = [*export_parquet(rec, state.run_dir), _recorder.FILENAME]
    rec.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    rec.close()
    _recorder._OPEN.pop(state.run_dir.resolve(), None)
    return summary
