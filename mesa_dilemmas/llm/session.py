"""The run session: how every process of a run finds its settings, record and budget.

The runner calls :func:`start_run` in the parent before the run and
:func:`finish_run` after it.  Mesa's ``batch_run`` builds models in worker
processes, which inherit the environment but nothing else, so ``start_run``
writes ``llm_session.json`` into the run directory and points the environment
variable ``MESA_DILEMMAS_LLM_RUN`` at it; any process reads it lazily on its
first call.  Everything a call does is then recorded in the run's
``llm_calls.sqlite`` (see :mod:`mesa_dilemmas.llm.recorder`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mesa_dilemmas.files import write_text_atomic
from mesa_dilemmas.llm import recorder as _recorder
from mesa_dilemmas.llm.accounting import export_parquet, summarize
from mesa_dilemmas.llm.budget import Budget
from mesa_dilemmas.llm.cluster import GateBudget, gate_name
from mesa_dilemmas.llm.recorder import RunRecorder
from mesa_dilemmas.llm.settings import LLMSettings

ENV = "MESA_DILEMMAS_LLM_RUN"
SESSION_FILE = "llm_session.json"


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


def start_run(settings: LLMSettings, run_dir: Path, resume: bool = False) -> None:
    """Open the run's record (a new segment of it when resuming) and publish the session.

    Without ``resume`` an earlier record in ``run_dir`` is discarded: the run starts over."""
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
    os.environ[ENV] = str(path)


def current() -> RunState | None:
    """This process's view of the active run, or None outside a run."""
    path = os.environ.get(ENV)
    if not path:
        return None
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


def finish_run() -> dict[str, Any]:
    """Export the record to Parquet and return the accounting summary (``{}`` outside a run).

    A run that made no LLM call leaves no LLM files behind."""
    state = current()
    path = os.environ.pop(ENV, None)
    if state is None:
        return {}
    _STATES.pop((os.getpid(), path or ""), None)
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
