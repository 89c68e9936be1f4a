"""Counterfactual branches of a recorded run: fork it at a round, change one thing, play on.

``mesa-dilemmas branch RUN_DIR --at 20 --set penalty=28`` rebuilds every run of a recorded
batch run (same game, parameters and seed), replays its first ``at - 1`` rounds, applies the
intervention before round ``at`` and plays the rest.  The replayed prefix makes no paid call:
every language-model seat plays it as ``replay:<its spec>``, answered only from the parent's
record and the shared cache (the parent's recorded answers are put in the cache first), so a
call the parent never made is a :class:`~mesa_dilemmas.llm.ReplayMiss`, never a new call.  The
prefix is checked round by round against the parent's ``state_hashes.parquet``
(:mod:`~mesa_dilemmas.scenarios.state_hash`): the branch stops, naming the run and the round, if
the replayed history is not the recorded one.  After the fork the seats play live.

An intervention is one or more of:

* ``set = { penalty = 28.0 }`` -- model parameters (``model.p``) changed from round ``at`` on;
* ``seats = { 3 = { rule = "rule" }, 0 = { llm = "openai:gpt-4o" } }`` -- a seat's policy rebuilt
  from a ``[population]`` group (another model, another persona, a rule player);
* ``message = "..."`` -- a text put where the game's players read shared messages (the game's
  ``branching.inject_message``, e.g. a community norm).

A game may bring a module ``branching`` beside its model module with
``swap_seat(model, agent, policy, persona)`` (what else a seat's new kind of player changes)
and ``inject_message(model, text)``; without it a swap sets the agent's policy and persona, and
a message is refused.

Many branches x the parent's runs make an experiment: each branch run is paired with the
parent run it forked (the same history up to the fork, and the same random stream after it),
whose own continuation is the un-intervened one, so the effect of an intervention is the mean
paired difference of a run metric, with a t interval and a bootstrap interval
(``effects.csv``).  The branch directory holds ``branch.toml`` (what was asked),
``runs.parquet``, ``steps.parquet`` and ``state_hashes.parquet`` (a ``branch`` column names
each branch), ``effects.csv``, ``summary.json`` and ``manifest.json``, and for LLM runs the
run record of the branch's own calls.  A table of branches is a TOML file::

    [[branches]]
    label = "fine x2 at 20"
    at = 20
    set = { penalty = 28.0 }

    [[branches]]
    label = "seat 3 plays the rule"
    at = 20
    seats = { 3 = { rule = "rule" } }
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import re
import shutil
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import model_factory, params_model, shorthand_names
from mesa_dilemmas.files import to_parquet_atomic, write_text_atomic
from mesa_dilemmas.scenarios import state_hash
from mesa_dilemmas.scenarios.batch_chunks import cell_kwargs
from mesa_dilemmas.scenarios.config import ConfigError
from mesa_dilemmas.scenarios.outputs import package_versions
from mesa_dilemmas.scenarios.stream_tables import Shape

__all__ = [
    "BranchMismatch",
    "BranchSpec",
    "BranchTable",
    "Parent",
    "load_parent",
    "register",
    "run_branches",
]

#: the confidence level of the intervals of ``effects.csv``
LEVEL = 0.95
#: bootstrap resamples of the paired differences
BOOTSTRAP = 2000


class BranchMismatch(RuntimeError):
    """The replayed prefix is not the recorded history (a state hash differs)."""


class BranchSpec(BaseModel):
    """One branch: where it forks and what it changes."""

    model_config = ConfigDict(extra="forbid")

    label: str | None = None
    #: the first round played with the intervention (rounds 1..at-1 are replayed)
    at: Annotated[int, Field(ge=1)]
    #: model parameters changed from round ``at`` on
    set: dict[str, Any] = Field(default_factory=dict)
    #: seat -> a ``[population]`` group table: the seat's new player from round ``at`` on
    seats: dict[int, dict[str, Any]] = Field(default_factory=dict)
    #: a message put where the players read shared messages, before round ``at``
    message: str | None = None

    def describe(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self.set.items()]
        parts += [f"seat {s} -> {_group_words(g)}" for s, g in sorted(self.seats.items())]
        if self.message is not None:
            parts.append(f"message {self.message[:30]!r}")
        return f"at round {self.at}: " + (", ".join(parts) or "nothing changed")

    @property
    def name(self) -> str:
        return self.label or self.describe()


class BranchTable(BaseModel):
    """A TOML table of branches of one parent run."""

    model_config = ConfigDict(extra="forbid")

    parent: str | None = None
    name: str | None = None
    #: the parent's seeds to branch (default: all of them)
    seeds: Annotated[list[int], Field(min_length=1)] | None = None
    branches: Annotated[list[BranchSpec], Field(min_length=1)]


def _group_words(group: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in group.items())


def _one_line(err: ValidationError, where: str) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    return f"{where}{'.' + loc if loc else ''}: {first['msg']}"


# -- the parent run -----------------------------------------------------------------------


@dataclass
class Parent:
    """A finished batch run: what each of its runs was built with, and its recorded state."""

    dir: Path
    game: str
    model_cls: type
    params: dict[str, Any]
    grid: dict[str, list[Any]]
    seeds: list[int]
    max_steps: int
    llm: dict[str, Any]
    runs: pd.DataFrame
    steps: pd.DataFrame
    hashes: pd.DataFrame
    name: str = ""

    @property
    def n_cells(self) -> int:
        return int(np.prod([len(v) for v in self.grid.values()])) if self.grid else 1

    @property
    def parameters(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {k: [v] for k, v in self.params.items()}
        out.update(self.grid)
        return out

    def run_ids(self, seeds: list[int] | None = None) -> list[int]:
        """The parent's runs (all, or those of ``seeds``), in order."""
        ids = sorted(int(r) for r in self.runs["RunId"].unique())
        if seeds is None:
            return ids
        wanted = {self.seeds.index(s) for s in seeds}
        return [r for r in ids if r // self.n_cells in wanted]

    def kwargs(self, run_id: int) -> tuple[dict[str, Any], int, int]:
        """(model arguments, seed, replication) of run ``run_id``."""
        replication, cell = divmod(run_id, self.n_cells)
        return cell_kwargs(self.parameters, cell), self.seeds[replication], replication

    def hash_of(self, run_id: int) -> dict[int, str]:
        rows = self.hashes[self.hashes["RunId"] == run_id]
        return dict(zip(rows["Step"].astype(int), rows["state_hash"], strict=True))

    def llm_specs(self) -> set[str]:
        specs: set[str] = set()
        cls = self.model_cls
        for run_id in range(self.n_cells):
            kwargs = cell_kwargs(self.parameters, run_id)
            specs |= cls.llm_specs(kwargs) if hasattr(cls, "llm_specs") else set()
        return specs

    @property
    def param_names(self) -> list[str]:
        return [*self.params, *self.grid, *shorthand_names(self.model_cls)]


def load_parent(run_dir: Path) -> Parent:
    """A finished batch run directory, or one line saying why it cannot be branched."""
    run_dir = Path(run_dir)
    where = f"branch {run_dir}"
    config_path, manifest_path = run_dir / "config.toml", run_dir / "manifest.json"
    if not config_path.is_file():
        raise ConfigError(f"{where}: not a run directory (no config.toml)")
    if not manifest_path.is_file() or not (run_dir / "steps.parquet").is_file():
        raise ConfigError(f"{where}: the run has not finished (no manifest.json or steps.parquet)")
    config = tomllib.loads(config_path.read_text())
    manifest = json.loads(manifest_path.read_text())
    experiment = str(config.get("experiment", "batch"))
    if experiment != "batch":
        raise ConfigError(
            f"{where}: a {experiment!r} run; only batch runs (one model per seed) can be branched"
        )
    model_cls = game_model(config["game"])
    steps = pd.read_parquet(run_dir / "steps.parquet")
    runs = pd.read_parquet(run_dir / "runs.parquet")
    params = dict(config.get("params") or {})
    grid = dict(config.get("grid") or {})
    skip = [*params, *grid, *shorthand_names(model_cls)]
    hashes = state_hash.read(run_dir)
    if hashes is None:  # a run recorded before runs kept their hashes: hashed from its tables
        print(f"note: {run_dir} has no {state_hash.FILENAME}; hashing its tables", file=sys.stderr)
        hashes = state_hash.from_run_dir(run_dir, skip)
    if hashes is None or steps.empty:
        raise ConfigError(f"{where}: the run recorded no rounds")
    return Parent(
        dir=run_dir,
        game=str(config["game"]),
        model_cls=model_cls,
        params=params,
        grid=grid,
        seeds=[int(s) for s in manifest.get("seeds", [])],
        max_steps=int(config["max_steps"]),
        llm=dict(config.get("llm") or {}),
        runs=runs,
        steps=steps,
        hashes=hashes,
        name=str(config.get("name", run_dir.name)),
    )


# -- the game's hooks -----------------------------------------------------------------------


def game_hooks(model_cls: type) -> ModuleType | None:
    """The game's ``branching`` module: beside its model module, else beside a base class's
    (a family's, e.g. the C/D games'), if there is one."""
    for cls in model_cls.__mro__:
        package = cls.__module__.rpartition(".")[0]
        if not package or cls.__module__.startswith("mesa_dilemmas.dilemmas.base"):
            continue
        if cls.__module__.startswith("mesa."):
            break
        try:
            return importlib.import_module(f"{package}.branching")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.branching":
                raise
    return None


def check_branch(parent: Parent, spec: BranchSpec, where: str) -> BranchSpec:
    """The branch validated against the parent's game (one line naming the field)."""
    if spec.at > parent.max_steps:
        raise ConfigError(
            f"{where}.at: {spec.at} is after the run's last round (max_steps {parent.max_steps})"
        )
    schema = params_model(parent.model_cls)
    fields = set(schema.model_fields)
    hooks = game_hooks(parent.model_cls)
    for key in spec.set:
        if key not in fields:
            raise ConfigError(
                f"{where}.set.{key}: not a parameter of {parent.game} (see mesa-dilemmas params "
                f"{parent.game})"
            )
        if key in shorthand_names(parent.model_cls) or key == "players":
            raise ConfigError(
                f"{where}.set.{key}: says who plays; change a seat with seats = {{ N = {{...}} }}"
            )
        if key in getattr(hooks, "FIXED_PARAMS", ()):
            raise ConfigError(
                f"{where}.set.{key}: {parent.game} reads it only when a run starts; "
                "a branch cannot change it mid-run"
            )
    values = dict(spec.set)
    for cell in range(parent.n_cells):
        kwargs = cell_kwargs(parent.parameters, cell)
        try:
            checked = schema.model_validate({**kwargs, **spec.set})
        except ValidationError as err:
            raise ConfigError(_one_line(err, f"{where}.set")) from None
        values = {k: getattr(checked, k) for k in spec.set}
    if spec.message is not None and not hasattr(hooks, "inject_message"):
        raise ConfigError(f"{where}.message: {parent.game} has no shared messages to add to")
    first = int(getattr(hooks, "MESSAGE_FROM_ROUND", 1))
    if spec.message is not None and spec.at < first:
        raise ConfigError(
            f"{where}.message: {parent.game} takes a message before round {first} or later, "
            f"not before round {spec.at}"
        )
    if spec.message is not None and not " ".join(spec.message.split()):
        raise ConfigError(f"{where}.message: empty")
    from mesa_dilemmas.agents.population import Group

    for seat, table in spec.seats.items():
        try:
            Group.model_validate(table)
        except ValidationError as err:
            raise ConfigError(_one_line(err, f"{where}.seats.{seat}")) from None
    return spec.model_copy(update={"set": values})


# -- playing one branch of one run ------------------------------------------------------------


def _policies(model: Any) -> Iterator[Any]:
    for agent in _seated(model):
        policy = getattr(agent, "policy", None)
        if policy is not None:
            yield policy
    narrator = getattr(getattr(model, "broker", None), "narrator", None)
    if narrator is not None:
        yield narrator


@contextlib.contextmanager
def replay_only(model: Any) -> Iterator[int]:
    """Inside the block every language-model seat of ``model`` (and its narrator) answers as
    ``replay:<spec>``: from the record and cache only, a miss an error; the live specs are
    back after it.  Yields the number of seats switched."""
    switched: list[tuple[Any, Any]] = []
    for policy in _policies(model):
        spec = getattr(policy, "spec", None)
        if spec is None or not hasattr(spec, "replay_of") or spec.provider == "replay":
            continue
        from mesa_dilemmas.llm.specs import ModelSpec

        policy.spec = ModelSpec("replay", spec.model, spec.base_url, replay_of=spec)
        policy._client = None
        switched.append((policy, spec))
    try:
        yield len(switched)
    finally:
        for policy, spec in switched:
            policy.spec = spec
            policy._client = None


def intervene(model: Any, spec: BranchSpec) -> None:
    """Apply the branch's changes to ``model`` before it plays round ``spec.at``."""
    hooks = game_hooks(type(model))
    if spec.set:
        model.p = model.p.model_copy(update=dict(spec.set))
        if hasattr(hooks, "after_params"):
            hooks.after_params(model, dict(spec.set))
    for seat, table in sorted(spec.seats.items()):
        from mesa_dilemmas.agents.population import Group

        seated = [a for a in _seated(model) if getattr(a, "slot", None) == seat]
        if not seated:
            raise ConfigError(f"branch seats.{seat}: the game has no seat {seat}")
        agent = seated[0]
        group = Group.model_validate(table)
        persona = model.population.persona_for(group, agent.persona)
        policy = model.population.build(
            group,
            model=model,
            seat=seat,
            persona=persona,
            rules=type(model).rule_players(),
        )
        if hasattr(hooks, "swap_seat"):
            hooks.swap_seat(model, agent, policy, persona)
        else:
            agent.persona = persona
            agent.policy = policy
            policy.bind(agent)
    if spec.message is not None:
        assert hooks is not None
        hooks.inject_message(model, spec.message)


def _seated(model: Any) -> list[Any]:
    """Every seat's agent, in seat order where the game keeps them (``model.seats``: players who
    left the game -- a starved villager -- included), else the model's agents."""
    seats = getattr(model, "seats", None)
    return list(seats) if seats is not None else list(model.agents)


def _rows(model: Any, run_id: int, replication: int, kwargs: dict[str, Any]) -> pd.DataFrame:
    """The run's rows as Mesa's ``batch_run`` makes them (every collected step)."""
    from mesa.batchrunner import _collect_data

    rows = []
    for step in model.datacollector._collection_steps:
        model_data, agent_rows = _collect_data(model, step)
        base = {"RunId": run_id, "iteration": replication, "Step": step, **kwargs, **model_data}
        if agent_rows:
            rows += [{**base, **a} for a in agent_rows]
        else:
            rows.append(base)
    return pd.DataFrame(rows)


@dataclass
class Played:
    runs: pd.DataFrame
    steps: pd.DataFrame
    agents: pd.DataFrame | None
    #: the rounds replayed and checked against the parent's hashes (0..fork-1)
    checked: int
    #: the round after which the parent had stopped, when it stopped before the fork
    ended_before_fork: int | None = None
    #: the first round whose state differs from the parent's (None: none differs)
    diverged_at: int | None = None


def play(parent: Parent, spec: BranchSpec, run_id: int) -> Played:
    """Branch ``spec`` of parent run ``run_id``: replay, check, intervene, play on."""
    kwargs, seed, replication = parent.kwargs(run_id)
    model_cls = parent.model_cls
    model = model_factory(model_cls)(**kwargs, rng=seed)
    shape = Shape(
        parameters=parent.param_names,
        grid=list(parent.grid),
        agent_reporters=lambda: list(model.datacollector.agent_reporters),
    )
    prefix = spec.at - 1
    with replay_only(model):
        while model.running and model.steps < prefix:
            model.step()
    raw = _rows(model, run_id, replication, {**kwargs, "rng": seed})
    _, steps, agents = shape(raw)
    mine = state_hash.state_hashes(steps, agents, parent.param_names)
    recorded = parent.hash_of(run_id)
    for step, digest in zip(mine["Step"], mine["state_hash"], strict=True):
        theirs = recorded.get(int(step))
        if theirs != digest:
            raise BranchMismatch(
                f"branch {spec.name!r}: run {run_id} (seed {seed}) replays differently from "
                f"{parent.dir} at round {int(step)} (state hash {digest} != recorded "
                f"{theirs}); the prefix must replay the recorded history: same code, "
                f"parameters and recorded answers"
            )
    checked = len(mine)
    ended = None
    if model.running and model.steps >= prefix:
        intervene(model, spec)
        while model.running and model.steps < parent.max_steps:
            model.step()
    else:
        ended = int(model.steps)
    raw = _rows(model, run_id, replication, {**kwargs, "rng": seed})
    runs, steps, agents = shape(raw)
    after = state_hash.state_hashes(steps, agents, parent.param_names)
    differ = [
        int(t)
        for t, h in zip(after["Step"], after["state_hash"], strict=True)
        if recorded.get(int(t)) != h
    ]
    return Played(runs, steps, agents, checked, ended, min(differ) if differ else None)


# -- the experiment ---------------------------------------------------------------------------


@dataclass
class BranchOutcome:
    out_dir: Path
    effects: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)


def _metrics(parent: Parent) -> list[str]:
    declared = list(getattr(parent.model_cls, "RUN_METRICS", ()) or ())
    cols = declared or [
        c
        for c in parent.runs.columns
        if c not in state_hash.KEYS
        and c not in parent.param_names
        and c != "steps_run"
        and pd.api.types.is_numeric_dtype(parent.runs[c])
    ]
    return [c for c in cols if c in parent.runs.columns]


def paired_effects(
    parent_runs: pd.DataFrame, branch_runs: pd.DataFrame, metrics: list[str], seed: int = 0
) -> pd.DataFrame:
    """Per branch and metric: the mean paired difference branch - parent over the runs, a t
    interval and a percentile bootstrap interval (``LEVEL``), and the paired t-test's p."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    base = parent_runs.set_index("RunId")
    rows = []
    for label, frame in branch_runs.groupby("branch", sort=False):
        frame = frame.set_index("RunId")
        for metric in metrics:
            if metric not in frame.columns or metric not in base.columns:
                continue
            a = pd.to_numeric(frame[metric], errors="coerce").astype(float)
            b = pd.to_numeric(base.loc[frame.index, metric], errors="coerce").astype(float)
            d = (a - b).dropna().to_numpy(dtype=float)
            n = len(d)
            if n == 0:  # a metric this game leaves empty in these runs
                continue
            row: dict[str, Any] = {
                "branch": label,
                "metric": metric,
                "n": n,
                "parent_mean": float(b.mean()),
                "branch_mean": float(a.mean()),
                "diff_mean": float(d.mean()) if n else math.nan,
                "diff_sd": float(d.std(ddof=1)) if n > 1 else math.nan,
            }
            lo = hi = blo = bhi = p = math.nan
            if n > 1:
                if np.ptp(d) == 0:
                    lo = hi = blo = bhi = float(d[0])
                    p = 1.0 if d[0] == 0 else 0.0
                else:
                    test = stats.ttest_1samp(d, 0.0)
                    ci = test.confidence_interval(LEVEL)
                    lo, hi, p = float(ci.low), float(ci.high), float(test.pvalue)
                    means = d[rng.integers(0, n, size=(BOOTSTRAP, n))].mean(axis=1)
                    tail = (1 - LEVEL) / 2
                    blo, bhi = (float(q) for q in np.quantile(means, [tail, 1 - tail]))
            row.update(ci_low=lo, ci_high=hi, boot_low=blo, boot_high=bhi, p_value=p)
            rows.append(row)
    return pd.DataFrame(rows)


def _prefill_cache(parent: Parent, specs: list[BranchSpec]) -> int:
    """Put the parent's recorded answers of its prefix rounds into the shared cache (those it
    lacks), so a prefix replays even when the cache was cleared or off; the number put."""
    path = parent.dir / "llm_calls.parquet"
    if not path.is_file():
        return 0
    from mesa_dilemmas.llm.request import ChatResponse
    from mesa_dilemmas.llm.settings import LLMSettings
    from mesa_dilemmas.llm.stores.cache import ResponseCache

    last = max(s.at for s in specs) - 1
    calls = pd.read_parquet(path, columns=["key", "label", "request", "response", "error", "round"])
    calls = calls[calls["response"].notna() & calls["error"].isna() & (calls["round"] <= last)]
    cache = ResponseCache.at(LLMSettings.from_table(parent.llm).resolved_cache_dir())
    put = 0
    for row in calls.drop_duplicates("key").itertuples():
        if cache.get(row.key, row.label) is None:
            response = ChatResponse.from_json(json.loads(row.response))
            cache.put(row.key, row.label, json.loads(row.request), response)
            put += 1
    return put


def default_out(parent: Parent, name: str | None) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name or "branch").strip("-")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return parent.dir.parent / f"{parent.dir.name}--{slug}-{stamp}"


def run_branches(
    parent_dir: Path,
    table: BranchTable,
    *,
    out_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> BranchOutcome:
    """Play every branch of ``table`` on the parent's runs (those of ``table.seeds``), write the
    branch directory and return the effects."""
    parent = load_parent(parent_dir)
    specs = [check_branch(parent, s, f"branches[{i}]") for i, s in enumerate(table.branches)]
    labels = [s.name for s in specs]
    if len(set(labels)) != len(labels):
        raise ConfigError("branches: two branches have the same label; give each its own")
    if table.seeds is not None:
        unknown = [s for s in table.seeds if s not in parent.seeds]
        if unknown:
            raise ConfigError(
                f"seeds: {unknown[0]} is not a seed of {parent.dir} (its seeds: "
                f"{', '.join(map(str, parent.seeds[:8]))}{' ...' if len(parent.seeds) > 8 else ''})"
            )
    run_ids = parent.run_ids(table.seeds)
    out = out_dir or default_out(parent, table.name)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"--out {out}: directory exists and is not empty")
    llm_specs = parent.llm_specs()
    for s in specs:
        for group in s.seats.values():
            if "llm" in group:
                llm_specs.add(str(group["llm"]))
    guard = None
    if llm_specs:
        from mesa_dilemmas.llm.guard import LLMConfigError, RunGuard

        try:
            guard = RunGuard.configure(llm_specs, parent.llm, game=parent.game)
            guard.preflight()
        except LLMConfigError as exc:
            raise ConfigError(str(exc)) from None
    estimate = suffix_estimate(parent, specs, run_ids) if guard is not None else None
    if estimate is not None:
        print(f"note: {estimate['text']}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "branch.toml", branch_toml(parent, table, specs))
    say = progress or (lambda _text: None)
    started = time.time()
    played: list[tuple[BranchSpec, int, Played]] = []
    put = 0
    try:
        with guard.session(out, resume=False) if guard else contextlib.nullcontext():
            if guard is not None:
                put = _prefill_cache(parent, specs)
            for spec in specs:
                for run_id in run_ids:
                    say(f"{spec.name}: run {run_id}")
                    played.append((spec, run_id, play(parent, spec, run_id)))
    except BaseException:
        if guard is None:  # nothing paid, nothing worth keeping
            shutil.rmtree(out, ignore_errors=True)
        raise
    wall = time.time() - started
    outcome = _write(out, parent, specs, played, guard, put, wall)
    if estimate is not None:
        outcome.summary["llm_estimate"] = {k: v for k, v in estimate.items() if k != "text"}
        write_text_atomic(
            out / "summary.json", json.dumps(outcome.summary, indent=2, default=str) + "\n"
        )
    return outcome


def suffix_estimate(parent: Parent, specs: list[BranchSpec], run_ids: list[int]) -> dict | None:
    """What the branches' live rounds should cost at the parent's own rate per round (its
    record: paid calls and dollars over the rounds it played); the prefix costs nothing."""
    try:
        summary = json.loads((parent.dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    llm, per = summary.get("llm") or {}, summary.get("llm_per_round") or {}
    rounds = int(per.get("rounds") or 0)
    if not rounds:
        return None
    played = parent.runs.set_index("RunId")["steps_run"] if "steps_run" in parent.runs else None
    live = 0
    for spec in specs:
        for r in run_ids:
            last = int(played.loc[r]) if played is not None else parent.max_steps
            live += max(0, last - spec.at + 1)
    paid = float(llm.get("provider_calls") or 0)
    cost = float(llm.get("cost_usd") or 0.0)
    calls = paid / rounds * live
    dollars = cost / rounds * live
    text = (
        f"the parent paid {int(paid)} calls (${cost:.4g}) over {rounds} rounds; the branches' "
        f"{live} live rounds should pay about {calls:.0f} calls (${dollars:.4g}) at that rate "
        "(the replayed rounds pay nothing)"
    )
    return {
        "live_rounds": live,
        "calls": round(calls, 1),
        "cost_usd": round(dollars, 6),
        "text": text,
    }


def _write(
    out: Path,
    parent: Parent,
    specs: list[BranchSpec],
    played: list[tuple[BranchSpec, int, Played]],
    guard: Any,
    put: int,
    wall: float,
) -> BranchOutcome:
    def tagged(frame: pd.DataFrame | None, spec: BranchSpec) -> pd.DataFrame | None:
        if frame is None:
            return None
        frame = frame.copy()
        frame.insert(0, "branch", spec.name)
        frame.insert(1, "at", spec.at)
        return frame

    runs = pd.concat([tagged(p.runs, s) for s, _, p in played], ignore_index=True)
    steps = pd.concat([tagged(p.steps, s) for s, _, p in played], ignore_index=True)
    agent_parts = [tagged(p.agents, s) for s, _, p in played if p.agents is not None]
    agents = pd.concat(agent_parts, ignore_index=True) if agent_parts else None
    to_parquet_atomic(runs, out / "runs.parquet")
    to_parquet_atomic(steps, out / "steps.parquet")
    if agents is not None:
        to_parquet_atomic(agents, out / "agents.parquet")
    hashes = []
    for s, _, p in played:
        h = state_hash.state_hashes(p.steps, p.agents, parent.param_names)
        h.insert(0, "branch", s.name)
        hashes.append(h)
    to_parquet_atomic(pd.concat(hashes, ignore_index=True), out / state_hash.FILENAME)
    metrics = _metrics(parent)
    effects = paired_effects(parent.runs, runs, metrics)
    effects.to_csv(out / "effects.csv", index=False)
    prefix = _prefix_calls(out, specs) if guard is not None else {}
    summary: dict[str, Any] = {
        "parent": str(parent.dir.resolve()),
        "game": parent.game,
        "branches": [
            {
                "label": s.name,
                "at": s.at,
                "changes": s.describe(),
                "runs": sum(1 for x, _, _ in played if x is s),
                "rounds_checked": sum(p.checked for x, _, p in played if x is s),
                "ended_before_fork": sum(
                    1 for x, _, p in played if x is s and p.ended_before_fork is not None
                ),
                "runs_diverged": sum(
                    1 for x, _, p in played if x is s and p.diverged_at is not None
                ),
            }
            for s in specs
        ],
        "prefix_identical": True,  # a mismatch stops the branch before anything is written
        "metrics": metrics,
        "effects": json.loads(effects.to_json(orient="records")),
        "wall_time_s": round(wall, 3),
    }
    if guard is not None:
        summary["llm"] = guard.summary
        summary["llm_prefix"] = {**prefix, "answers_put_in_cache": put}
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")
    write_text_atomic(
        out / "manifest.json",
        json.dumps(
            {
                "kind": "branch",
                "parent": str(parent.dir.resolve()),
                "game": parent.game,
                "command": sys.argv,
                "seeds": sorted({parent.kwargs(r)[1] for _, r, _ in played}),
                "wall_time_s": round(wall, 3),
                "versions": package_versions(),
            },
            indent=2,
        )
        + "\n",
    )
    return BranchOutcome(out, effects, summary)


def _prefix_calls(out: Path, specs: list[BranchSpec]) -> dict[str, int]:
    """The branch's calls before and after the fork by source (from its record): the prefix
    has no ``provider`` call, by construction (its seats are replay specs)."""
    path = out / "llm_calls.parquet"
    if not path.is_file():
        return {"prefix_paid_calls": 0, "suffix_paid_calls": 0}
    calls = pd.read_parquet(path, columns=["round", "source", "error"])
    at = min(s.at for s in specs)
    paid = calls["source"].eq("provider") & calls["error"].isna()
    return {
        "prefix_calls": int((calls["round"] < at).sum()),
        "prefix_paid_calls": int((paid & (calls["round"] < at)).sum()),
        "suffix_paid_calls": int((paid & (calls["round"] >= at)).sum()),
    }


def branch_toml(parent: Parent, table: BranchTable, specs: list[BranchSpec]) -> str:
    import tomli_w

    data: dict[str, Any] = {"parent": str(parent.dir.resolve())}
    if table.name:
        data["name"] = table.name
    if table.seeds is not None:
        data["seeds"] = list(table.seeds)
    data["branches"] = [
        {
            "label": s.name,
            "at": s.at,
            **({"set": s.set} if s.set else {}),
            **({"seats": {str(k): v for k, v in s.seats.items()}} if s.seats else {}),
            **({"message": s.message} if s.message is not None else {}),
        }
        for s in specs
    ]
    return tomli_w.dumps(data)


# -- command line -----------------------------------------------------------------------------


def _value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def table_from_args(args: Any) -> BranchTable:
    """The branches the command line names: a ``--table`` file, or one branch of flags."""
    raw: dict[str, Any]
    if args.table is not None:
        if args.at is not None or args.set or args.seat or args.message is not None:
            raise ConfigError("--table: give the branches in the table or as flags, not both")
        try:
            raw = tomllib.loads(Path(args.table).read_text())
        except OSError as exc:
            raise ConfigError(f"--table {args.table}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--table {args.table}: not valid TOML: {exc}") from None
        raw.pop("parent", None)
    else:
        if args.at is None:
            raise ConfigError("--at: name the round to fork at (or give a --table of branches)")
        branch: dict[str, Any] = {"at": args.at}
        sets: dict[str, Any] = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
            sets[key.strip()] = _value(value)
        seats: dict[str, Any] = {}
        for item in args.seat:
            key, sep, value = item.partition("=")
            group = _value(value)
            if not sep or not isinstance(group, dict):
                raise ConfigError(
                    f'--seat {item!r}: expected SEAT={{ rule = "..." }} or SEAT={{ llm = "..." }}'
                )
            seats[key.strip()] = group
        branch.update({"set": sets, "seats": seats, "message": args.message, "label": args.label})
        raw = {"branches": [branch]}
    if args.name:
        raw["name"] = args.name
    if args.seeds:
        raw["seeds"] = [int(s) for s in args.seeds]
    try:
        return BranchTable.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_one_line(err, "branch")) from None


def cmd_branch(args: Any) -> int:
    table = table_from_args(args)
    progress = None if args.no_progress else (lambda text: print(text, file=sys.stderr))
    try:
        outcome = run_branches(Path(args.run_dir), table, out_dir=args.out, progress=progress)
    except BranchMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_effects(outcome))
    print(f"\nwritten to {outcome.out_dir}")
    return 0


def format_effects(outcome: BranchOutcome) -> str:
    lines = []
    llm = outcome.summary.get("llm_prefix")
    for b in outcome.summary["branches"]:
        lines.append(
            f"{b['label']}: {b['runs']} runs, {b['rounds_checked']} replayed states identical "
            f"to the parent's; {b['runs_diverged']} runs differ from the parent after the fork"
        )
        if b["runs_diverged"] == 0 and b["changes"].partition(": ")[2] != "nothing changed":
            lines.append(
                "  note: no recorded state changed: the game may not read what was changed "
                "after a run starts, or the change did not matter here"
            )
    if llm:
        lines.append(
            f"LLM calls: {llm.get('prefix_calls', 0)} in the prefix, "
            f"{llm.get('prefix_paid_calls', 0)} paid; {llm.get('suffix_paid_calls', 0)} paid "
            "after the fork"
        )
    frame = outcome.effects
    if not frame.empty:
        lines.append("")
        lines.append(
            f"effects (branch - parent, paired by run; {LEVEL:.0%} t interval, bootstrap interval):"
        )
        for row in frame.itertuples():
            lines.append(
                f"  {row.branch} | {row.metric}: {row.parent_mean:.4g} -> {row.branch_mean:.4g}, "
                f"diff {row.diff_mean:+.4g} [{row.ci_low:.4g}, {row.ci_high:.4g}] "
                f"(bootstrap [{row.boot_low:.4g}, {row.boot_high:.4g}], n={row.n})"
            )
    return "\n".join(lines)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "branch",
        help="fork a recorded run at a round with an intervention; the prefix replays at no cost",
        description=(__doc__ or "").split("\n\n")[0],
    )
    p.add_argument("run_dir", help="a finished run directory (mesa-dilemmas run ... --out DIR)")
    p.add_argument("--at", type=int, default=None, help="the first round with the change")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a model parameter changed from round --at on (repeat)",
    )
    p.add_argument(
        "--seat",
        action="append",
        default=[],
        metavar="SEAT={...}",
        help="a seat's new player, a population group: 3='{ rule = \"rule\" }' (repeat)",
    )
    p.add_argument("--message", default=None, help="a message to the players before round --at")
    p.add_argument("--label", default=None, help="the branch's name in the tables")
    p.add_argument("--table", default=None, help="a TOML file of [[branches]] (at, set, ...)")
    p.add_argument("--seeds", nargs="+", default=None, help="branch only these seeds of the run")
    p.add_argument("--name", default=None, help="the branch directory's name")
    p.add_argument("--out", type=Path, default=None, help="the branch directory")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_branch)
