"""The default experiment: Mesa's ``batch_run`` over ``[grid]`` x replications.

The models run through the game's vectorised engine where it has one and every grid cell
is one it supports (``[execution] engine = "auto"``, the default; ``"mesa"`` or ``"vector"``
force one); ``summary.json`` and ``manifest.json`` name the engine and why.

Replication i of every grid cell uses the same seed (common random numbers): the
conditions of a comparison start from identical populations, so a difference
between cells is the effect of the parameter, not of the draw.  Seeds are
derived from the scenario seed with ``numpy.random.SeedSequence``.

The runs go out in chunks of balanced size over grid cells and replications
(:mod:`~mesa_dilemmas.scenarios.batch_chunks`) to the execution backend (the local
process pool or Ray); each finished chunk is saved under ``partial/`` as it arrives
and ``--resume`` runs only the missing ones.  ``steps.parquet`` and ``agents.parquet``
are then streamed from the chunk files (:mod:`~mesa_dilemmas.scenarios.stream_tables`),
so a run's memory does not grow with its number of runs.  Once the tables and
``manifest.json`` are written, ``partial/`` is deleted (``options.keep_chunks = true`` keeps it).
"""

from __future__ import annotations

import functools
import math
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.scenarios import execution
from mesa_dilemmas.scenarios.batch_chunks import (
    CHUNKS_PER_WORKER,
    MAX_RUNS_PER_CHUNK,
    MAX_VECTOR_RUNS_PER_CHUNK,
    choose_engine,
    chunk_path,
    chunk_ranges,
    is_saved,
    make_chunk,
    run_batch_chunk,
    save_chunk,
    to_plain,
)
from mesa_dilemmas.scenarios.config import Scenario
from mesa_dilemmas.scenarios.experiment import Results, RunContext
from mesa_dilemmas.scenarios.stream_tables import Shape, assemble

__all__ = [
    "CALIBRATION_STREAM",
    "REPORT_STREAMS",
    "ROBUSTNESS_STREAM",
    "BatchExperiment",
    "BatchOptions",
    "derive_seeds",
    "reserved_stream",
    "stream_seed",
    "to_plain",
]


class BatchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: run this many replications of every grid cell per chunk (0: chunks of balanced size,
    #: several per worker, at most 50 runs each); each finished chunk is saved for --resume
    replications_per_chunk: Annotated[int, Field(ge=0)] = 0
    #: keep the finished chunks (``partial/``) after the run has written its tables; by default
    #: they are deleted once ``manifest.json`` is written, since the tables hold the same rows
    keep_chunks: bool = False


def derive_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 32-bit seeds from one scenario seed (stable across numpy versions)."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(n, dtype=np.uint32)]


# -- seed streams: which seeds the reproduction report, its checks and a calibration use ------

#: the reproduction report's k independent seed streams are streams 1..k (k at most 99)
REPORT_STREAMS = range(1, 100)
#: the robustness check of the report: the calibrated defaults and their +-25% neighbours,
#: re-evaluated on seeds the calibration never saw
ROBUSTNESS_STREAM = 100
#: ``mesa-dilemmas calibrate``'s default stream; calibration streams are >= this one
CALIBRATION_STREAM = 1000


def stream_seed(seed: int, stream: int) -> int:
    """The scenario seed of seed stream ``stream`` of a scenario whose own seed is ``seed``:
    a 32-bit seed drawn by ``SeedSequence((seed, stream))``, so streams are independent of
    each other and of the scenario's own seed (what ``mesa-dilemmas run`` and the docs use)."""
    if stream < 0:
        raise ValueError(f"stream: must be >= 0, got {stream}")
    state = np.random.SeedSequence([int(seed), int(stream)]).generate_state(1, dtype=np.uint32)
    return int(state[0])


def reserved_stream(stream: int) -> str | None:
    """What uses seed stream ``stream`` besides a calibration (None: nothing, it is free)."""
    if stream in REPORT_STREAMS:
        return f"the reproduction report (its streams are {REPORT_STREAMS.start}-{REPORT_STREAMS.stop - 1})"
    if stream == ROBUSTNESS_STREAM:
        return "the report's robustness check"
    if stream < CALIBRATION_STREAM:
        return f"the report's checks (streams below {CALIBRATION_STREAM} are reserved)"
    return None


class BatchExperiment:
    Options: ClassVar[type[BaseModel]] = BatchOptions
    USES_MODEL_PARAMS: ClassVar[bool] = True

    def run(self, scenario: Scenario, options: BaseModel, ctx: RunContext) -> Results:
        assert isinstance(options, BatchOptions)
        model_cls = game_model(scenario.game)
        seeds = derive_seeds(scenario.seed, scenario.replications)
        parameters: dict[str, Any] = {k: [v] for k, v in scenario.params.items()}
        parameters.update(scenario.grid)
        n_cells = int(np.prod([len(v) for v in parameters.values()]))
        settings = execution.current()
        engine, why = choose_engine(model_cls, parameters, n_cells, settings.engine)
        workers = (settings.backend != "local" and settings.workers) or ctx.processes
        max_runs = MAX_VECTOR_RUNS_PER_CHUNK if engine == "vector" else MAX_RUNS_PER_CHUNK
        # batch mode: a chunk's runs advance side by side, so each phase's calls of all its
        # runs go out as one batch job (not one job per run and phase): one chunk per worker
        lockstep = engine == "mesa" and bool((scenario.llm or {}).get("batch"))
        ranges = chunk_ranges(
            len(seeds) * n_cells,
            n_cells,
            workers=workers,
            max_runs=max_runs,
            replications_per_chunk=options.replications_per_chunk,
            per_worker=1 if lockstep else CHUNKS_PER_WORKER,
        )
        partial_dir = ctx.out_dir / "partial"
        partial_dir.mkdir(exist_ok=True)
        paths = [chunk_path(partial_dir, i) for i in range(len(ranges))]
        llm_session = execution.active_llm_run()  # each chunk carries the run's LLM session
        todo = [
            make_chunk(
                i,
                runs,
                game=scenario.game,
                parameters=parameters,
                n_cells=n_cells,
                seeds=seeds,
                max_steps=scenario.max_steps,
                engine=engine,
                lockstep=lockstep,
                llm_session=llm_session,
            )
            for i, runs in enumerate(ranges)
            if not (ctx.resume and is_saved(paths[i], runs))
        ]

        def save(i: int, frame: Any) -> None:
            save_chunk(frame, paths[todo[i].index])

        execution.map_tasks(
            run_batch_chunk,
            todo,
            processes=ctx.processes,
            progress=ctx.progress,
            desc=progress_label(scenario),
            on_result=save,
            keep=False,
            label=lambda i: todo[i].describe(),
            unit="run",
            sizes=[c.stop - c.start for c in todo],
        )

        shape = Shape(
            parameters=list(parameters),
            grid=list(scenario.grid),
            agent_reporters=functools.cache(lambda: agent_reporters(model_cls, scenario.params)),
        )
        tables = assemble(paths, shape, ctx.out_dir)
        reporters = list(getattr(model_cls, "RUN_METRICS", ())) or tables.reporter_columns
        return Results(
            runs=tables.runs,
            metrics=[m for m in reporters if m in tables.runs.columns],
            group_by=list(scenario.grid),
            seeds=seeds,
            streamed=tables.written,
            summary={
                "engine": {
                    "name": engine,
                    "reason": why,
                    **({"lockstep": True} if lockstep else {}),
                }
            },
            scratch=[] if options.keep_chunks else [partial_dir],
        )


def agent_reporters(model_cls: type, params: dict[str, Any]) -> list[str]:
    """The names of a game's agent reporters: its ``AGENT_REPORTERS`` when it declares them,
    else read off the DataCollector of one model built with the run's fixed parameters."""
    declared = getattr(model_cls, "AGENT_REPORTERS", None)
    if declared is not None:
        return list(declared)
    model = build_model(model_cls, params, 0)
    return list(model.datacollector.agent_reporters)


def progress_label(scenario: Any) -> str:
    """What the batch progress bar counts: model runs (grid cells x replications)."""
    cells = math.prod(len(values) for values in scenario.grid.values())
    detail = f"{cells} grid cells x " if cells > 1 else ""
    return f"model runs ({detail}{scenario.replications} replications)"
