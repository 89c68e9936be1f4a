"""A batch run's tables assembled from its chunk files by streaming, one chunk at a time.

``steps.parquet`` and ``agents.parquet`` grow with the number of runs (a row per run and step,
and per agent); they are written by a ``pyarrow.parquet.ParquetWriter`` that appends each
chunk's rows, so the memory a run needs does not grow with its size.  Only ``runs`` (a row per
run) is kept in memory, for ``runs.parquet`` and ``summary.json``.

Chunks are ranges of run numbers in order (:mod:`mesa_dilemmas.scenarios.batch_chunks`), so
appending them gives the rows sorted by run and step, as one table of the whole sweep would be.
A column's type is the one every chunk's values fit (an integer column that has a missing
value in one chunk is a float column in all of them, as in one table): a first pass reads each
chunk's column types, a second writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mesa_dilemmas.files import atomic_path
from mesa_dilemmas.scenarios.batch_chunks import plain_columns

KEYS = ["RunId", "iteration", "seed", "Step"]


@dataclass(frozen=True)
class Shape:
    """How the raw ``batch_run`` rows of a chunk become rows of runs, steps and agents."""

    #: the model's parameters (fixed and swept): not reporters
    parameters: Sequence[str]
    #: the swept parameters, kept in ``steps``
    grid: Sequence[str]
    #: the game's agent reporters (their columns go to ``agents``), asked for when there are
    #: agent rows
    agent_reporters: Callable[[], Sequence[str]]

    def reporter_columns(self, steps: pd.DataFrame) -> list[str]:
        return [c for c in steps.columns if c not in self.parameters and c not in KEYS]

    def __call__(self, raw: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
        """(runs, steps, agents) of one chunk; ``agents`` None when the game has no agent rows."""
        steps = raw.rename(columns={"rng": "seed"})
        steps["Step"] = steps["Step"].astype(int)
        steps = steps.sort_values(["RunId", "Step"], kind="stable").reset_index(drop=True)
        steps = plain_columns(steps)
        agents = None
        if "AgentID" in steps.columns:  # batch_run repeats the model row once per agent
            agent_cols = ["AgentID", *(c for c in self.agent_reporters() if c in steps.columns)]
            agents = steps[KEYS + agent_cols].reset_index(drop=True)
            steps = (
                steps.drop(columns=agent_cols)
                .drop_duplicates(["RunId", "Step"])
                .reset_index(drop=True)
            )
        runs = steps.groupby("RunId", sort=True).tail(1).reset_index(drop=True)
        runs = runs.rename(columns={"Step": "steps_run"})
        keep = [*KEYS, *self.grid, *self.reporter_columns(steps)]
        return runs, steps[keep], agents


@dataclass
class Assembled:
    runs: pd.DataFrame
    #: the reporter columns of ``steps`` (the metrics when the game names none)
    reporter_columns: list[str]
    #: the tables written to disk: {"steps": path, "agents": path}
    written: dict[str, Path]


def assemble(chunks: Sequence[Path], shape: Shape, out_dir: Path) -> Assembled:
    """Write ``steps.parquet`` (and ``agents.parquet``) in ``out_dir`` from the chunk files, in
    order, holding one chunk at a time; return the runs (one row per run)."""
    runs_parts: list[pd.DataFrame] = []
    schemas: dict[str, list[pa.Schema]] = {"steps": [], "agents": []}
    reporters: list[str] = []
    for path in chunks:  # first pass: the runs, and every chunk's column types
        runs, steps, agents = shape(pd.read_parquet(path))
        runs_parts.append(runs)
        reporters = reporters or shape.reporter_columns(steps)
        schemas["steps"].append(pa.Schema.from_pandas(steps, preserve_index=False))
        if agents is not None:
            schemas["agents"].append(pa.Schema.from_pandas(agents, preserve_index=False))
        del runs, steps, agents
    targets = {
        name: pa.unify_schemas(found, promote_options="permissive")
        for name, found in schemas.items()
        if found
    }
    written = {name: out_dir / f"{name}.parquet" for name in targets}
    with contextlib.ExitStack() as stack:  # on leaving: close each writer, then rename it
        writers = {}
        for name, schema in targets.items():
            tmp = stack.enter_context(atomic_path(written[name]))
            writers[name] = stack.enter_context(pq.ParquetWriter(tmp, schema))
        for path in chunks:  # second pass: append each chunk's rows
            _, steps, agents = shape(pd.read_parquet(path))
            for name, frame in (("steps", steps), ("agents", agents)):
                if frame is not None:
                    writers[name].write_table(_conform(frame, targets[name]))
            del steps, agents
    return Assembled(pd.concat(runs_parts, ignore_index=True), reporters, written)


def _conform(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """One chunk's rows as a table of the common ``schema`` (a column the chunk lacks is null)."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    columns = [
        table.column(f.name).cast(f.type)
        if f.name in table.column_names
        else pa.nulls(len(table), f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)
