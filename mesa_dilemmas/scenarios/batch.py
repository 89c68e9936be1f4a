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
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
import pandas as pd
from mesa.batchrunner import batch_run
from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.files import to_parquet_atomic
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

        chunk = options.replications_per_chunk or len(seeds)
        chunks = [seeds[i : i + chunk] for i in range(0, len(seeds), chunk)]
        partial_dir = ctx.out_dir / "partial"
        frames = []
        outer = tqdm(total=len(chunks), desc="chunks", disable=not ctx.progress or len(chunks) == 1)
        for index, chunk_seeds in enumerate(chunks):
            saved = partial_dir / f"chunk_{index:05d}.parquet"
            if ctx.resume and saved.exists():
                try:
                    frames.append(pd.read_parquet(saved))
                    outer.update()
                    continue
                except Exception as exc:  # a chunk cut short by a kill: run it again
                    print(f"note: {saved.name} is unreadable ({type(exc).__name__}); running it again",
                          file=sys.stderr)  # fmt: skip
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
        steps = pd.concat(frames, ignore_index=True).rename(columns={"rng": "seed"})
        steps["Step"] = steps["Step"].astype(int)
        steps = steps.sort_values(["RunId", "Step"], kind="stable").reset_index(drop=True)
        for col in steps.columns:
            if steps[col].dtype == object:
                steps[col] = steps[col].map(to_plain)
        agents = None
        if "AgentID" in steps.columns:  # agent reporters: batch_run repeats model rows per agent
            steps, agents = _split_agent_rows(steps, parameters)

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


def _split_agent_rows(steps: pd.DataFrame, parameters: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One model row per (run, step) and a separate per-agent table.

    Agent columns are those that vary between the rows of one (run, step)."""
    first = steps[steps["RunId"] == steps["RunId"].iloc[0]]
    varying = first.groupby("Step").nunique(dropna=False).max()
    agent_cols = [c for c in steps.columns if c == "AgentID" or (c in varying and varying[c] > 1)]
    keys = ["RunId", "iteration", "seed", "Step"]
    agents = steps[keys + [c for c in agent_cols if c not in keys]].reset_index(drop=True)
    model_rows = steps.drop(columns=agent_cols).drop_duplicates(["RunId", "Step"]).reset_index(drop=True)
    return model_rows, agents


def _reporter_columns(steps: pd.DataFrame, parameters: dict[str, Any]) -> list[str]:
    return [c for c in steps.columns if c not in parameters and c not in ("RunId", "iteration", "Step", "seed")]


def _to_parquet(frame: pd.DataFrame, path: Path) -> None:
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype == object:
            frame[col] = frame[col].map(to_plain)
    to_parquet_atomic(frame, path)
