"""The experiment protocol: how a scenario turns into result tables.

``batch`` (Mesa's ``batch_run`` over a parameter grid x replications) serves most
scenarios.  Experiments that are not a grid of independent model runs -- self-play
over strategy sets, cultural evolution, LLM grids -- implement this protocol in
their own module and are named in the scenario file as ``experiment =
"module:Class"``: a module's name registered in the entry point group
``mesa_dilemmas.experiments`` (a game family's experiments plug in there), else a
module without a package is looked up in ``mesa_dilemmas.scenarios``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import pandas as pd
import pyarrow.parquet as pq
from pydantic import BaseModel

if TYPE_CHECKING:
    from mesa_dilemmas.scenarios.config import Scenario


@dataclass
class RunContext:
    """What the runner hands an experiment: where to write, how many processes, progress on/off."""

    out_dir: Path
    processes: int = 1
    progress: bool = True
    resume: bool = False


@dataclass
class Results:
    """An experiment's output. ``runs``: one row per run (parameters, seed, final metrics).
    ``steps``: per-step model reporters keyed by ``RunId`` and ``Step`` (may be empty).
    ``summary``: extra entries merged into ``summary.json``.
    ``metrics``: the columns of ``runs`` to aggregate (mean, sem) per group.
    ``group_by``: the parameter columns that define a group.
    ``agents``: optional per-agent rows keyed by ``RunId``, ``Step`` and ``AgentID``.
    ``streamed``: tables the experiment already wrote into the run directory, chunk by chunk,
    instead of holding them (``{"steps": path, "agents": path}``); ``steps``/``agents`` are then
    None and :meth:`step_columns` reads what is needed from the file."""

    runs: pd.DataFrame
    steps: pd.DataFrame | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=list)
    group_by: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    #: per-agent reporter rows (``agents.parquet``), when the game has agent reporters
    agents: pd.DataFrame | None = None
    streamed: dict[str, Path] = field(default_factory=dict)
    #: working directories (e.g. a sweep's saved chunks) deleted once the run's tables and
    #: manifest are written; until then they let ``--resume`` skip finished work
    scratch: list[Path] = field(default_factory=list)

    def step_columns(self, columns: list[str]) -> pd.DataFrame | None:
        """Some columns of the steps (those that exist), from memory or from the written file."""
        if self.steps is not None:
            return self.steps[[c for c in columns if c in self.steps.columns]]
        path = self.streamed.get("steps")
        if path is None:
            return None
        names = pq.read_schema(path).names
        return pd.read_parquet(path, columns=[c for c in columns if c in names])


class Experiment(Protocol):
    #: pydantic model of the scenario's ``[options]`` table (extra keys forbidden)
    Options: ClassVar[type[BaseModel]]

    def run(self, scenario: Scenario, options: BaseModel, ctx: RunContext) -> Results: ...
