"""The default experiment: Mesa's ``batch_run`` over ``[grid]`` x replications.

Replication i of every grid cell uses the same seed (common random numbers): the
conditions of a comparison start from identical populations, so a difference
between cells is the effect of the parameter, not of the draw.  Seeds are
derived from the scenario seed with ``numpy.random.SeedSequence``.

With ``replications_per_chunk`` set, the replications run in chunks and each
finished chunk is saved under ``partial/``; ``--resume`` skips saved chunks.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
import pandas as pd
from mesa.batchrunner import batch_run
from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.files import to_parquet_atomic
from mesa_dilemmas.scenarios import execution
from mesa_dilemmas.scenarios.config import Scenario
from mesa_dilemmas.scenarios.experiment import Results, RunContext


class BatchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: run the replications in chunks of this many, saving each chunk (0: one batch)
    replications_per_chunk: Annotated[int, Field(ge=0)] = 0


def derive_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 32-bit seeds from one scenario seed (stable across numpy versions)."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(n, dtype=np.uint32)]


def to_plain(value: Any) -> Any:
    """Lists and dicts become JSON text so every column is a parquet scalar."""
    return json.dumps(value, sort_keys=True) if isinstance(value, list | dict | tuple) else value


class BatchExperiment:
    Options: ClassVar[type[BaseModel]] = BatchOptions
    USES_MODEL_PARAMS: ClassVar[bool] = True

    def run(self, scenario: Scenario, options: BaseModel, ctx: RunContext) -> Results:
        assert isinstance(options, BatchOptions)
        model_cls = game_model(scenario.game)
        seeds = derive_seeds(scenario.seed, scenario.replications)
        parameters: dict[str, Any] = {k: [v] for k, v in scenario.params.items()}
        parameters.update(scenario.grid)
        n_cells = int(np.prod([len(v) for v in scenario.grid.values()])) if scenario.grid else 1

        if execution.current().backend != "local":
            frames = self._run_tasks(scenario, options, ctx, parameters, seeds, n_cells)
            return self._results(model_cls, scenario, frames, parameters, seeds)
        chunk = options.replications_per_chunk or len(seeds)
        chunks = [seeds[i : i + chunk] for i in range(0, len(seeds), chunk)]
        partial_dir = ctx.out_dir / "partial"
        frames = []
        outer = tqdm(total=len(chunks), desc="chunks", disable=not ctx.progress or len(chunks) == 1)
        for index, chunk_seeds in enumerate(chunks):
            saved = partial_dir / f"chunk_{index:05d}.parquet"
            done = _saved_chunk(saved) if ctx.resume else None
            if done is not None:
                frames.append(done)
                outer.update()
                continue
            rows = batch_run(
                model_cls,
                parameters=parameters,
                number_processes=ctx.processes,
                data_collection_period=1,
                max_steps=scenario.max_steps,
                display_progress=ctx.progress and len(chunks) == 1,
                rng=chunk_seeds,
            )
            frame = pd.DataFrame(rows)
            offset = index * chunk
            frame["iteration"] += offset
            frame["RunId"] = frame["iteration"] * n_cells + frame["RunId"] % n_cells
            if len(chunks) > 1:
                partial_dir.mkdir(exist_ok=True)
                _to_parquet(frame, saved)
            frames.append(frame)
            outer.update()
        outer.close()
        return self._results(model_cls, scenario, frames, parameters, seeds)

    def _run_tasks(
        self,
        scenario: Scenario,
        options: BatchOptions,
        ctx: RunContext,
        parameters: dict[str, Any],
        seeds: list[int],
        n_cells: int,
    ) -> list[pd.DataFrame]:
        """The replications as chunk tasks on the execution backend (Ray); each finished chunk
        is saved under ``partial/`` as it arrives, and ``--resume`` runs only missing ones."""
        workers = execution.current().workers or ctx.processes
        chunk = options.replications_per_chunk or max(1, -(-len(seeds) // (4 * workers)))
        starts = list(range(0, len(seeds), chunk))
        partial_dir = ctx.out_dir / "partial"
        partial_dir.mkdir(exist_ok=True)
        frames: dict[int, pd.DataFrame] = {}
        todo = []
        for index, start in enumerate(starts):
            saved = partial_dir / f"chunk_{index:05d}.parquet"
            done = _saved_chunk(saved) if ctx.resume else None
            if done is not None:
                frames[index] = done
            else:
                todo.append(BatchChunk(index, scenario.game, parameters, seeds[start : start + chunk],
                                       start, n_cells, scenario.max_steps))  # fmt: skip

        def save(i: int, frame: pd.DataFrame) -> None:
            _to_parquet(frame, partial_dir / f"chunk_{todo[i].index:05d}.parquet")
            frames[todo[i].index] = frame

        execution.map_tasks(
            run_batch_chunk, todo, processes=ctx.processes, progress=ctx.progress,
            desc="replication chunks", on_result=save,
            label=lambda i: f"replication chunk {todo[i].index} (seeds {todo[i].offset}..)",
        )  # fmt: skip
        return [frames[i] for i in sorted(frames)]

    def _results(
        self,
        model_cls: type,
        scenario: Scenario,
        frames: list[pd.DataFrame],
        parameters: dict[str, Any],
        seeds: list[int],
    ) -> Results:
        steps = pd.concat(frames, ignore_index=True).rename(columns={"rng": "seed"})
        steps["Step"] = steps["Step"].astype(int)
        steps = steps.sort_values(["RunId", "Step"], kind="stable").reset_index(drop=True)
        for col in steps.columns:
            if steps[col].dtype == object:
                steps[col] = steps[col].map(to_plain)
        agents = None
        if "AgentID" in steps.columns:  # agent reporters: batch_run repeats model rows per agent
            steps, agents = _split_agent_rows(steps, agent_reporters(model_cls, scenario.params))

        runs = steps.groupby("RunId", sort=True).tail(1).reset_index(drop=True)
        runs = runs.rename(columns={"Step": "steps_run"})
        reporter_columns = _reporter_columns(steps, parameters)
        reporters = list(getattr(model_cls, "RUN_METRICS", ())) or reporter_columns
        keep_in_steps = ["RunId", "iteration", "seed", "Step", *scenario.grid, *reporter_columns]
        return Results(
            runs=runs,
            steps=steps[keep_in_steps],
            agents=agents,
            metrics=[m for m in reporters if m in runs.columns],
            group_by=list(scenario.grid),
            seeds=seeds,
        )


@dataclass(frozen=True)
class BatchChunk:
    """Some replications of every grid cell: one task of an execution backend."""

    index: int
    game: str
    parameters: dict[str, Any]
    seeds: list[int]
    offset: int  # the replication number of the first seed
    n_cells: int
    max_steps: int


def run_batch_chunk(chunk: BatchChunk) -> pd.DataFrame:
    """One chunk through Mesa's ``batch_run`` in this process, numbered as in a whole run."""
    rows = batch_run(
        game_model(chunk.game),
        parameters=chunk.parameters,
        number_processes=1,
        data_collection_period=1,
        max_steps=chunk.max_steps,
        display_progress=False,
        rng=chunk.seeds,
    )
    frame = pd.DataFrame(rows)
    frame["iteration"] += chunk.offset
    frame["RunId"] = frame["iteration"] * chunk.n_cells + frame["RunId"] % chunk.n_cells
    return frame


def agent_reporters(model_cls: type, params: dict[str, Any]) -> list[str]:
    """The names of a game's agent reporters: its ``AGENT_REPORTERS`` when it declares them,
    else read off the DataCollector of one model built with the run's fixed parameters."""
    declared = getattr(model_cls, "AGENT_REPORTERS", None)
    if declared is not None:
        return list(declared)
    model = model_cls(**params, rng=0)
    return list(model.datacollector.agent_reporters)


def _split_agent_rows(steps: pd.DataFrame, names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One model row per (run, step) and a separate per-agent table of the agent reporters."""
    agent_cols = ["AgentID", *(c for c in names if c in steps.columns)]
    keys = ["RunId", "iteration", "seed", "Step"]
    agents = steps[keys + agent_cols].reset_index(drop=True)
    model_rows = (
        steps.drop(columns=agent_cols).drop_duplicates(["RunId", "Step"]).reset_index(drop=True)
    )
    return model_rows, agents


def _reporter_columns(steps: pd.DataFrame, parameters: dict[str, Any]) -> list[str]:
    return [
        c
        for c in steps.columns
        if c not in parameters and c not in ("RunId", "iteration", "Step", "seed")
    ]


def _saved_chunk(saved: Path) -> pd.DataFrame | None:
    """A chunk a previous attempt saved, or None (missing, or cut short by a kill: run again)."""
    if not saved.exists():
        return None
    try:
        return pd.read_parquet(saved)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is re-run, not trusted
        print(
            f"note: {saved.name} is unreadable ({type(exc).__name__}); running it again",
            file=sys.stderr,
        )
        return None


def _to_parquet(frame: pd.DataFrame, path: Path) -> None:
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            frame[col] = frame[col].map(to_plain)
    to_parquet_atomic(frame, path)
