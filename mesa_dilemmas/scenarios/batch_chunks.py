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
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from mesa.batchrunner import batch_run

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.files import to_parquet_atomic

#: at most this many runs in one chunk when the scenario does not say (a chunk's rows are what
#: the driver holds at a time, and the unit a resumed run does not repeat)
MAX_RUNS_PER_CHUNK = 50
#: automatic chunks per worker (several, so a worker that finishes early finds more work)
CHUNKS_PER_WORKER = 4


def chunk_ranges(
    n_runs: int, n_cells: int, *, replications_per_chunk: int, workers: int
) -> list[range]:
    """The run numbers of each chunk, in order, together covering ``range(n_runs)``.

    ``replications_per_chunk`` (when > 0): that many replications of every cell per chunk.
    Otherwise chunks of equal size (±1 run): at least ``CHUNKS_PER_WORKER`` per worker, and
    at most ``MAX_RUNS_PER_CHUNK`` runs each."""
    if replications_per_chunk > 0:
        size = replications_per_chunk * n_cells
        return [range(s, min(s + size, n_runs)) for s in range(0, n_runs, size)]
    count = max(CHUNKS_PER_WORKER * workers, -(-n_runs // MAX_RUNS_PER_CHUNK))
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
) -> BatchChunk:
    first, last = runs.start // n_cells, (runs.stop - 1) // n_cells
    return BatchChunk(index, game, parameters, n_cells, runs.start, runs.stop,
                      seeds[first : last + 1], max_steps)  # fmt: skip


def run_batch_chunk(chunk: BatchChunk) -> pd.DataFrame:
    """A chunk's runs, one by one through Mesa's ``batch_run`` in this process; the rows are
    numbered (``RunId``, ``iteration``) as in a ``batch_run`` over the whole sweep."""
    model_cls = game_model(chunk.game)
    first = chunk.start // chunk.n_cells
    rows: list[dict[str, Any]] = []
    for run_id in chunk.runs:
        replication, cell = divmod(run_id, chunk.n_cells)
        kwargs = cell_kwargs(chunk.parameters, cell)
        data = batch_run(
            model_cls,
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
        rows.extend(data)
    return pd.DataFrame(rows)


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
    to_parquet_atomic(plain_columns(frame), path)


def is_saved(path: Path, runs: range) -> bool:
    """Whether a previous attempt saved this chunk: the file is readable and holds exactly the
    chunk's runs (not a file cut short by a kill, nor one of a different chunk layout)."""
    if not path.exists():
        return False
    try:
        ids = pd.read_parquet(path, columns=["RunId"])["RunId"]
    except Exception as exc:  # noqa: BLE001 - any unreadable file is re-run, not trusted
        print(f"note: {path.name} is unreadable ({type(exc).__name__}); running it again",
              file=sys.stderr)  # fmt: skip
        return False
    if set(ids.unique().tolist()) != set(runs):
        print(f"note: {path.name} holds other runs than this chunk's {runs.start}..{runs.stop - 1}"
              " (saved with another chunk size); running it again", file=sys.stderr)  # fmt: skip
        return False
    return True
