"""How a batch sweep is cut into tasks: blocks of consecutive runs of balanced size.

The runs of a sweep are numbered as Mesa's ``batch_run`` numbers them over the whole grid:
``RunId = replication * cells + cell``, the cells in the order of ``itertools.product`` over
the parameters.  A chunk is a range of run numbers: a few cells of one replication, or whole
replications of every cell -- whatever makes the chunks the same size.  Every run takes its
replication's seed (common random numbers across cells), so how the sweep is cut never
changes a result; and since chunks are ranges in run order, the run's tables are assembled by
appending one chunk after the other (:mod:`mesa_dilemmas.scenarios.stream_tables`).

Each finished chunk is saved as ``partial/chunk_NNNNN.parquet`` (its raw ``batch_run`` rows);
``--resume`` keeps a saved chunk only when it is readable and holds exactly its chunk's runs.

A game may bring a vectorised engine: a module ``vector`` beside its model module with
``unsupported(kwargs) -> reason | None`` and ``run_vector([(run_id, iteration, kwargs)],
max_steps)`` returning ``batch_run``'s rows as columns (one dict per group of runs it advances
together).  A chunk with ``engine = "vector"`` runs all its runs through it at once.

A chunk of a run with LLM agents carries the run's session file (``llm_session``): the worker
runs the chunk inside ``with session.use(llm_session):`` (:mod:`mesa_dilemmas.llm.session`),
and runs played in lockstep each run in a copy of that context.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
from mesa.batchrunner import batch_run

from mesa_dilemmas.agents.lockstep import run_in_lockstep
from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import model_factory
from mesa_dilemmas.files import to_parquet_atomic
from mesa_dilemmas.redaction import redact_frame

#: at most this many runs in one chunk when the scenario does not say (a chunk's rows are what
#: the driver holds at a time, and the unit a resumed run does not repeat)
MAX_RUNS_PER_CHUNK = 50
#: the same for a game's vectorised engine (its runs advance together: bigger chunks are faster)
MAX_VECTOR_RUNS_PER_CHUNK = 1000
#: automatic chunks per worker (several, so a worker that finishes early finds more work)
CHUNKS_PER_WORKER = 4


def chunk_ranges(
    n_runs: int,
    n_cells: int,
    *,
    replications_per_chunk: int,
    workers: int,
    max_runs: int = MAX_RUNS_PER_CHUNK,
    per_worker: int = CHUNKS_PER_WORKER,
) -> list[range]:
    """The run numbers of each chunk, in order, together covering ``range(n_runs)``.

    ``replications_per_chunk`` (when > 0): that many replications of every cell per chunk.
    Otherwise chunks of equal size (±1 run): at least ``per_worker`` per worker, and at most
    ``max_runs`` runs each (runs played in lockstep want one big chunk per worker)."""
    if replications_per_chunk > 0:
        size = replications_per_chunk * n_cells
        return [range(s, min(s + size, n_runs)) for s in range(0, n_runs, size)]
    count = max(per_worker * workers, -(-n_runs // max_runs))
    count = max(1, min(count, n_runs))
    bounds = [n_runs * i // count for i in range(count + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


def cell_kwargs(parameters: dict[str, list[Any]], cell: int) -> dict[str, Any]:
    """The model arguments of grid cell ``cell``: the ``cell``-th of ``itertools.product`` over
    ``parameters``' value lists (the last parameter varying fastest), without building it."""
    out: dict[str, Any] = {}
    for key in reversed(parameters):
        values = parameters[key]
        cell, i = divmod(cell, len(values))
        out[key] = values[i]
    return {key: out[key] for key in parameters}


@dataclass(frozen=True)
class BatchChunk:
    """Consecutive runs of a sweep: one task of an execution backend."""

    index: int
    game: str
    #: every parameter's values (a one-element list for a fixed parameter), in model order
    parameters: dict[str, list[Any]]
    n_cells: int
    start: int  # the first run number
    stop: int  # one past the last
    #: the seeds of replications ``start // n_cells`` .. ``(stop - 1) // n_cells``
    seeds: list[int]
    max_steps: int
    #: "mesa" (``batch_run``, run by run) or "vector" (the game's vectorised engine)
    engine: str = "mesa"
    #: play the chunk's runs side by side, their LLM calls on one event loop, so that each
    #: phase's calls of every run go out together (``[llm] batch``: one batch job a phase)
    lockstep: bool = False
    #: the session file of the run's LLM session (None: no LLM run); the worker runs the
    #: chunk inside it, since a worker process inherits no active run
    llm_session: str | None = None

    @property
    def runs(self) -> range:
        return range(self.start, self.stop)

    def describe(self) -> str:
        first, last = self.start // self.n_cells, (self.stop - 1) // self.n_cells
        reps = f"replication {first}" if first == last else f"replications {first}..{last}"
        return f"chunk {self.index} (runs {self.start}..{self.stop - 1}, {reps})"


def make_chunk(
    index: int,
    runs: range,
    *,
    game: str,
    parameters: dict[str, list[Any]],
    n_cells: int,
    seeds: list[int],
    max_steps: int,
    engine: str = "mesa",
    lockstep: bool = False,
    llm_session: str | None = None,
) -> BatchChunk:
    first, last = runs.start // n_cells, (runs.stop - 1) // n_cells
    return BatchChunk(
        index,
        game,
        parameters,
        n_cells,
        runs.start,
        runs.stop,
        seeds[first : last + 1],
        max_steps,
        engine,
        lockstep,
        llm_session,
    )


def vector_engine(model_cls: type) -> ModuleType | None:
    """The game's vectorised engine (the module ``vector`` beside its model), if it has one."""
    package = model_cls.__module__.rpartition(".")[0]
    if not package:
        return None
    try:
        module = importlib.import_module(f"{package}.vector")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.vector":
            raise
        return None
    if not (hasattr(module, "run_vector") and hasattr(module, "unsupported")):
        return None
    return module


def choose_engine(
    model_cls: type, parameters: dict[str, list[Any]], n_cells: int, wanted: str = "auto"
) -> tuple[str, str]:
    """("vector" | "mesa", why) for a sweep: the vectorised engine when the game has one and
    every grid cell is one it supports (and ``wanted`` is not "mesa"); ``wanted = "vector"``
    where it does not apply is an error (one line)."""
    if wanted == "mesa":
        return "mesa", "engine = 'mesa' was asked for"
    module = vector_engine(model_cls)
    reason = None if module else "the game has no vectorised engine"
    if module is not None:
        for cell in range(n_cells):
            reason = module.unsupported(cell_kwargs(parameters, cell))
            if reason:
                break
    if reason is None:
        return "vector", "every grid cell is one the game's vectorised engine supports"
    if wanted == "vector":
        raise ValueError(f"execution.engine: 'vector' does not apply here: {reason}")
    return "mesa", reason


def run_batch_chunk(chunk: BatchChunk) -> pd.DataFrame:
    """A chunk's runs, one by one through Mesa's ``batch_run`` in this process; the rows are
    numbered (``RunId``, ``iteration``) as in a ``batch_run`` over the whole sweep; inside the
    chunk's LLM run (``chunk.llm_session``) when it has one."""
    if chunk.llm_session is not None:
        from mesa_dilemmas.llm import session

        with session.use(chunk.llm_session):
            return _run_chunk(chunk)
    return _run_chunk(chunk)


def _run_chunk(chunk: BatchChunk) -> pd.DataFrame:
    model_cls = game_model(chunk.game)
    first = chunk.start // chunk.n_cells
    if chunk.engine == "vector":
        return _run_vector_chunk(model_cls, chunk)

    def one_run(run_id: int) -> list[dict[str, Any]]:
        replication, cell = divmod(run_id, chunk.n_cells)
        kwargs = cell_kwargs(chunk.parameters, cell)
        data = batch_run(
            model_factory(model_cls),
            parameters={key: [value] for key, value in kwargs.items()},
            number_processes=1,
            data_collection_period=1,
            max_steps=chunk.max_steps,
            display_progress=False,
            rng=[chunk.seeds[replication - first]],
        )
        for row in data:
            row["RunId"] = run_id
            row["iteration"] = replication
        return data

    if chunk.lockstep:
        runs = run_in_lockstep([functools.partial(one_run, r) for r in chunk.runs])
    else:
        runs = [one_run(r) for r in chunk.runs]
    return pd.DataFrame([row for data in runs for row in data])


def _run_vector_chunk(model_cls: type, chunk: BatchChunk) -> pd.DataFrame:
    """The chunk's runs through the game's vectorised engine, in ``batch_run``'s row order
    (run by run, steps in order) and column order (ids, the model's arguments, reporters)."""
    module = vector_engine(model_cls)
    assert module is not None
    first = chunk.start // chunk.n_cells
    runs = []
    for run_id in chunk.runs:
        replication, cell = divmod(run_id, chunk.n_cells)
        kwargs = {**cell_kwargs(chunk.parameters, cell), "rng": chunk.seeds[replication - first]}
        runs.append((run_id, replication, kwargs))
    frames = [pd.DataFrame(columns) for columns in module.run_vector(runs, chunk.max_steps)]
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    if len(frames) > 1:
        frame = frame.sort_values(["RunId", "Step"], kind="stable", ignore_index=True)
    return frame


def to_plain(value: Any) -> Any:
    """Lists and dicts become JSON text so every column is a parquet scalar."""
    return json.dumps(value, sort_keys=True) if isinstance(value, list | dict | tuple) else value


def plain_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the values of its object columns made parquet scalars (:func:`to_plain`)."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            frame[col] = frame[col].map(to_plain)
    return frame


def chunk_path(partial_dir: Path, index: int) -> Path:
    return partial_dir / f"chunk_{index:05d}.parquet"


def save_chunk(frame: pd.DataFrame, path: Path) -> None:
    to_parquet_atomic(redact_frame(plain_columns(frame)), path)


def is_saved(path: Path, runs: range) -> bool:
    """Whether a previous attempt saved this chunk: the file is readable and holds exactly the
    chunk's runs (not a file cut short by a kill, nor one of a different chunk layout)."""
    if not path.exists():
        return False
    try:
        ids = pd.read_parquet(path, columns=["RunId"])["RunId"]
    except Exception as exc:  # noqa: BLE001 - any unreadable file is re-run, not trusted
        print(
            f"note: {path.name} is unreadable ({type(exc).__name__}); running it again",
            file=sys.stderr,
        )
        return False
    if set(ids.unique().tolist()) != set(runs):
        print(
            f"note: {path.name} holds other runs than this chunk's {runs.start}..{runs.stop - 1}"
            " (saved with another chunk size); running it again",
            file=sys.stderr,
        )
        return False
    return True
