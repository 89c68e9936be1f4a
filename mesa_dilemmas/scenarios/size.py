"""How big a run is, said before it starts.

A scenario of the default experiment is ``cells x replications`` model runs. From
``LARGE_RUNS`` runs on, the runner prints the number of runs and an estimate of
time and disk before anything starts; the estimate comes from one model run each of
the scenario's first and last grid cells, timed and measured here (rule-based games only:
an LLM game's time is the provider's).  Above ``CONFIRM_RUNS`` runs, or an
estimated ``CONFIRM_SECONDS`` of work or ``CONFIRM_BYTES`` of output, the run
starts only when confirmed (``--yes``).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mesa_dilemmas.scenarios.config import ConfigError, Scenario

LARGE_RUNS = 1_000
CONFIRM_RUNS = 100_000
CONFIRM_SECONDS = 3600.0
CONFIRM_BYTES = 2 * 1024**3


@dataclass
class RunSize:
    runs: int
    seconds: float | None = None  # estimated wall time on the run's processes
    bytes: float | None = None  # estimated size of the tables written (uncompressed)

    def describe(self, processes: int) -> str:
        parts = [f"{self.runs:,} runs"]
        if self.seconds is not None:
            parts.append(f"about {_duration(self.seconds)} on {processes} process(es)")
        if self.bytes is not None:
            parts.append(f"about {_size(self.bytes)} of tables")
        return ", ".join(parts)

    def needs_confirmation(self) -> bool:
        return (
            self.runs > CONFIRM_RUNS
            or (self.seconds or 0) > CONFIRM_SECONDS
            or (self.bytes or 0) > CONFIRM_BYTES
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def count_runs(scenario: Scenario, experiment: Any) -> int | None:
    """Model runs of a default-experiment scenario (None for other experiments)."""
    if type(experiment).__name__ != "BatchExperiment":
        return None
    cells = math.prod(len(v) for v in scenario.grid.values()) if scenario.grid else 1
    return cells * scenario.replications


def sample_run(scenario: Scenario, cell: int = 0) -> tuple[float, float]:
    """Seconds and bytes (model + agent reporter rows) of one run of the first (``cell=0``)
    or last (``cell=-1``) grid cell."""
    from mesa_dilemmas.dilemmas import game_model

    point = {k: v[cell] for k, v in scenario.grid.items()}
    model = game_model(scenario.game)(**{**scenario.params, **point}, rng=scenario.seed)
    started = time.perf_counter()
    for _ in range(scenario.max_steps):
        if not model.running:
            break
        model.step()
    seconds = time.perf_counter() - started
    size = 0.0
    collector = getattr(model, "datacollector", None)
    if collector is not None:
        size += float(collector.get_model_vars_dataframe().memory_usage(deep=True).sum())
        with_agents = bool(getattr(collector, "agent_reporters", None))
        if with_agents:
            size += float(collector.get_agent_vars_dataframe().memory_usage(deep=True).sum())
    return seconds, size


def estimate(scenario: Scenario, experiment: Any, llm: bool) -> RunSize | None:
    runs = count_runs(scenario, experiment)
    if runs is None:
        return None
    size = RunSize(runs)
    if runs >= LARGE_RUNS and not llm:
        try:  # the mean of the first and the last cell of the grid
            (t0, b0), (t1, b1) = sample_run(scenario, 0), sample_run(scenario, -1)
        except Exception:  # an estimate is advice: a failing sample leaves it out
            return size
        seconds, per_run = (t0 + t1) / 2, (b0 + b1) / 2
        size.seconds = seconds * runs / max(1, scenario.processes)
        size.bytes = per_run * runs
    return size


def check_run_size(
    scenario: Scenario, options: BaseModel, experiment: Any, *, yes: bool, llm: bool = False
) -> RunSize | None:
    """Print the size of a large run; refuse one that needs confirmation unless ``yes``."""
    size = estimate(scenario, experiment, llm)
    if size is None or size.runs < LARGE_RUNS:
        return size
    text = size.describe(scenario.processes)
    if size.needs_confirmation() and not yes:
        raise ConfigError(f"run size: {text}; pass --yes to start a run this large")
    print(f"run size: {text}", file=sys.stderr)
    return size
