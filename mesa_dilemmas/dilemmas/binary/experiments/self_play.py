"""Self-play (paper 002, Sec. 5.1): social welfare for every mix of exploitative and collective agents.

For each group size n and each split of n seats into ``n_collective``
collective and ``n - n_collective`` exploitative agents, ``samples`` groups
are drawn -- strategies sampled without replacement from the two sets, seats
shuffled -- and played for ``rounds`` rounds on the fast engine.  The measure
is the mean normalised reward: total payoff / (n * rounds).  Every sample is a
row of ``runs``; the runner aggregates them per (group_size, n_collective).

Sampling when a set is smaller than the number of seats it must fill (the
bundled reference sets have a dozen strategies; LLM sets have 512): the set is
used as evenly as possible -- whole random permutations of it, then a random
subset of the remainder -- so no strategy appears more than once more often
than any other.

Work is split into tasks of one (n, split) each, seeded from
``SeedSequence(scenario.seed).spawn(n_tasks)`` in a fixed order, so results
do not depend on the number of processes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mesa_dilemmas.dilemmas.binary.engine import Lineups
from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import DEFAULT_ROUNDS, MAX_PLAYERS, make_game
from mesa_dilemmas.dilemmas.binary.strategies.loader import (
    StrategySet,
    load_strategy_set,
    resolve_set_ref,
)
from mesa_dilemmas.scenarios import execution
from mesa_dilemmas.scenarios.experiment import Results, RunContext

if TYPE_CHECKING:
    from mesa_dilemmas.scenarios.config import Scenario

GameParam = float | int | None


# -- shared helpers (also used by cultural evolution) ----------------------


def sample_indices(rng: np.random.Generator, size: int, k: int) -> np.ndarray:
    """``k`` indices into a set of ``size``: without replacement, or as evenly as possible if k > size."""
    if size <= 0:
        raise ValueError("cannot sample from an empty strategy set")
    if k <= size:
        return rng.choice(size, k, replace=False)
    whole, rest = divmod(k, size)
    parts = [rng.permutation(size) for _ in range(whole)]
    parts.append(rng.choice(size, rest, replace=False))
    return np.concatenate(parts)


def prepare_sets(
    game: str,
    rounds: int,
    group_sizes: Sequence[int],
    game_params: dict[str, Any],
    set_names: Sequence[str],
) -> tuple[dict[str, Any], tuple[str, ...], list[StrategySet]]:
    """Shared set-up of the strategy-set experiments: the game's parameters (checked), the sets'
    resolved paths (what worker tasks carry) and the loaded sets (checked against the game)."""
    params = {k: v for k, v in game_params.items() if v is not None}
    _check_game_params(game, rounds, group_sizes, params)
    paths = [resolve_set_ref(name) for name in set_names]
    sets = [load_strategy_set(p) for p in paths]
    for strategy_set in sets:
        strategy_set.check_game(game)
    return params, tuple(paths), sets


def screen_sets(
    sets: Sequence[StrategySet], game: str, params: dict[str, Any]
) -> list[dict[str, str]]:
    """Per set, its strategies that misbehave in the sandbox screen (name -> reason).

    Run before the experiment when ``exclude_flagged`` is on; the tasks then
    drop them (:func:`without`).  Deterministic: the screen has no timing."""
    from mesa_dilemmas.dilemmas.binary.checks import screen_entries

    out = []
    for strategy_set in sets:
        found = screen_entries(list(strategy_set), game, params)
        out.append({strategy_set[i].name: why for i, why in sorted(found.items())})
        if len(found) == len(strategy_set):
            from mesa_dilemmas.scenarios.config import ConfigError

            raise ConfigError(
                f"exclude_flagged: every strategy of set {strategy_set.name!r} misbehaves "
                f"(first: {next(iter(out[-1].values()))})"
            )
    return out


def without(strategy_set: StrategySet, names: Sequence[str]) -> StrategySet:
    """``strategy_set`` minus the strategies named (the excluded offenders)."""
    if not names:
        return strategy_set
    drop = set(names)
    return StrategySet(
        **{**strategy_set.__dict__, "entries": [e for e in strategy_set if e.name not in drop]}
    )


def stop_if_all_failed(sets: Sequence[StrategySet], flagged: Mapping[str, Any]) -> None:
    """A set every strategy of which misbehaved stops the run (one line), never a plausible table."""
    for strategy_set in sets:
        names = {e.name for e in strategy_set}
        if names and names <= set(flagged):
            from mesa_dilemmas.scenarios.config import ConfigError

            first = flagged[next(iter(sorted(names)))]
            raise ConfigError(
                f"every strategy of set {strategy_set.name!r} failed "
                f"(first: {first.get('reason')}); no results are written"
            )


def deadline_at(seconds: float | None) -> float | None:
    """The run's deadline as a ``time.time()`` value (``seconds`` from now), or None."""
    return None if seconds is None else time.time() + float(seconds)


def start_task(deadline: float | None) -> None:
    """In a task's process: the run's deadline for every sandboxed call from now on."""
    from mesa_dilemmas.sandbox import set_deadline

    set_deadline(deadline)


def saved_map(
    fn: Callable[[Any], dict[str, Any]],
    tasks: Sequence[Any],
    ctx: RunContext,
    desc: str,
    costs: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """:func:`execution.map_tasks`, with every finished task's output kept in the run
    directory (``tasks/``) as it arrives: a run that fails late (a deadline, a crash) keeps what
    was done, and ``--resume`` plays only the tasks that are missing.  A run past its
    deadline stops with one line."""
    from mesa_dilemmas.files import load_task_output, save_task_output
    from mesa_dilemmas.sandbox import DeadlinePassed
    from mesa_dilemmas.scenarios.config import ConfigError

    folder = Path(ctx.out_dir) / "tasks"
    # a task's fingerprint: everything but the deadline (a resumed run has a new one)
    keys = [
        hashlib.sha256(repr(dataclasses.replace(t, deadline=None)).encode()).hexdigest()[:32]
        for t in tasks
    ]
    done: dict[int, dict[str, Any]] = {}
    if ctx.resume:
        for i, key in enumerate(keys):
            got = load_task_output(folder, i, key)
            if got is not None:
                done[i] = got
    todo = [i for i in range(len(tasks)) if i not in done]

    def keep(j: int, out: dict[str, Any]) -> None:
        save_task_output(folder, todo[j], keys[todo[j]], out)
        done[todo[j]] = out

    try:
        execution.map_tasks(
            fn,
            [tasks[i] for i in todo],
            processes=ctx.processes,
            progress=ctx.progress,
            desc=desc,
            costs=None if costs is None else [costs[i] for i in todo],
            on_result=keep,
            keep=False,
        )
    except DeadlinePassed as exc:
        start_task(None)  # tasks run in this process leave no deadline behind
        raise ConfigError(
            f"deadline: {exc}; {len(done)} of {len(tasks)} tasks finished and are kept "
            f"(--resume {ctx.out_dir} continues)"
        ) from None
    start_task(None)
    return [done[i] for i in range(len(tasks))]


def check_sets(sets: Sequence[StrategySet]) -> None:
    for strategy_set in sets:
        if not len(strategy_set):
            raise ValueError(f"strategy set {strategy_set.name!r} has no strategies")


def _check_game_params(
    game: str, rounds: int, sizes: Sequence[int], params: dict[str, Any]
) -> None:
    """Build the game at every group size, so a bad parameter fails before any work starts."""
    from mesa_dilemmas.scenarios.config import ConfigError

    for n in sizes:
        try:
            make_game(game, n, rounds, **params)
        except ValueError as exc:
            raise ConfigError(f"options.game_params (group size {n}): {exc}") from None


# -- options -----------------------------------------------------------------


class SelfPlayOptions(BaseModel):
    """The ``[options]`` of a self-play scenario."""

    model_config = ConfigDict(extra="forbid")

    #: strategy sets (bundled name or path) for the two attitudes
    exploitative_set: str = "reference_exploitative"
    collective_set: str = "reference_collective"
    group_sizes: list[Annotated[int, Field(ge=2, le=MAX_PLAYERS)]] = [4, 16, 64, 256]
    #: groups drawn per split (the paper: 200)
    samples: Annotated[int, Field(ge=1, le=1_000_000)] = 200
    rounds: Annotated[int, Field(ge=1, le=10_000)] = DEFAULT_ROUNDS
    #: None: every split n_collective = 0..n; else that many evenly spaced splits (0 and n included)
    splits: Annotated[int | None, Field(ge=2)] = None
    #: the game's own parameters (k, m, capacity, growth), e.g. {k = 3} for Appendix B
    game_params: dict[str, GameParam] = {}
    #: players per engine batch (bounds memory; larger batches amortise numpy calls)
    batch_players: Annotated[int, Field(ge=2, le=1_000_000)] = 16384
    #: screen the sets in the sandbox first and leave out strategies that misbehave (instead of
    #: letting them play the default action with a flag); the summary lists them
    exclude_flagged: bool = False
    #: wall-clock seconds the run may take; strategy code still running then stops it (one
    #: line), keeping the finished tasks for --resume.  None: no deadline
    deadline: Annotated[float | None, Field(gt=0)] = None

    @field_validator("group_sizes")
    @classmethod
    def _nonempty(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("give at least one group size")
        return v


def split_points(n: int, splits: int | None) -> list[int]:
    """The n_collective values played for group size n."""
    if splits is None or splits >= n + 1:
        return list(range(n + 1))
    return sorted({round(x) for x in np.linspace(0, n, splits)})


@dataclass(frozen=True)
class SelfPlayTask:
    game: str
    game_params: dict[str, Any]
    rounds: int
    n: int
    n_collective: int
    samples: int
    exploitative: str  # resolved set path
    collective: str
    batch_players: int
    seed: np.random.SeedSequence
    #: strategy names left out of the (exploitative, collective) sets
    excluded: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    #: the run's deadline (``time.time()``), or None
    deadline: float | None = None


def run_self_play_task(task: SelfPlayTask) -> dict[str, np.ndarray]:
    """Play all samples of one split; returns per-sample arrays and per-round cooperation."""
    start_task(task.deadline)
    game = make_game(task.game, task.n, task.rounds, **task.game_params)
    sets = {
        "e": without(load_strategy_set(task.exploitative), task.excluded[0]),
        "c": without(load_strategy_set(task.collective), task.excluded[1]),
    }
    rng = np.random.default_rng(task.seed)
    n, nc = task.n, task.n_collective
    ne = n - nc
    per_batch = max(1, task.batch_players // n)
    welfare = np.empty(task.samples)
    coop = np.empty(task.samples)
    pay_e = np.full(task.samples, np.nan)
    pay_c = np.full(task.samples, np.nan)
    coop_rounds = np.zeros(task.rounds)
    flagged: dict[str, list[Any]] = {}  # strategy -> [matches flagged, first reason]
    memo = [0, 0]  # answers of deterministic strategies taken from the memo, of the memoisable
    done = 0
    # lineups as indices into one palette (exploitative entries, then collective ones)
    palette = [*sets["e"], *sets["c"]]
    size_e, size_c = len(sets["e"]), len(sets["c"])
    while done < task.samples:
        size = min(per_batch, task.samples - done)
        index = np.empty((size, n), dtype=np.intp)
        mask = np.empty((size, n), dtype=bool)
        for b in range(size):
            members = np.concatenate(
                [sample_indices(rng, size_e, ne), sample_indices(rng, size_c, nc) + size_e]
            )
            seats = rng.permutation(n)
            index[b] = members[seats]
            mask[b] = seats >= ne
        entropies = rng.integers(0, 2**63, size=size)
        result = play_batch(game, Lineups(palette, index), entropies)
        for flag in result.flags:
            flagged.setdefault(flag.strategy, [0, flag.reason])[0] += 1
        memo[0] += result.memo_hits
        memo[1] += result.memo_eligible
        norm = result.normalised
        sl = slice(done, done + size)
        welfare[sl] = norm.mean(axis=1)
        coop[sl] = result.coop_by_round.sum(axis=1) / (n * task.rounds)
        if ne:
            pay_e[sl] = np.where(~mask, norm, 0.0).sum(axis=1) / ne
        if nc:
            pay_c[sl] = np.where(mask, norm, 0.0).sum(axis=1) / nc
        coop_rounds += result.coop_by_round.sum(axis=0) / n
        done += size
    return {
        "normalised_payoff": welfare,
        "cooperation_rate": coop,
        "exploitative_payoff": pay_e,
        "collective_payoff": pay_c,
        "coop_by_round": coop_rounds / task.samples,
        "flagged": flagged,
        "memo": memo,
    }


def memo_summary(outputs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Memoisation of deterministic strategies over a run's tasks: hits and hit rate."""
    hits = sum(int(o.get("memo", (0, 0))[0]) for o in outputs)
    eligible = sum(int(o.get("memo", (0, 0))[1]) for o in outputs)
    return {
        "hits": hits,
        "memoisable_calls": eligible,
        "hit_rate": hits / eligible if eligible else None,
    }


def _merge_flags(outputs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Strategies that misbehaved (sandbox flags): in how many matches, and the first reason."""
    merged: dict[str, dict[str, Any]] = {}
    for out in outputs:
        for name, (count, reason) in out.get("flagged", {}).items():
            entry = merged.setdefault(name, {"matches": 0, "reason": reason})
            entry["matches"] += count
    return merged


class SelfPlayExperiment:
    """Mean normalised reward for every exploitative/collective split at every group size."""

    USES_MODEL_PARAMS: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = SelfPlayOptions

    @classmethod
    def check(cls, scenario: Scenario, options: BaseModel) -> None:
        """What ``run`` needs (game parameters, non-empty strategy sets), before anything is written."""
        opts = SelfPlayOptions.model_validate(options.model_dump())
        sets = [opts.exploitative_set, opts.collective_set]
        check_sets(
            prepare_sets(scenario.game, opts.rounds, opts.group_sizes, opts.game_params, sets)[2]
        )

    def run(self, scenario: Scenario, options: BaseModel, ctx: RunContext) -> Results:
        opts = SelfPlayOptions.model_validate(
            options.model_dump() if isinstance(options, BaseModel) else options
        )
        params, set_paths, set_list = prepare_sets(
            scenario.game,
            opts.rounds,
            opts.group_sizes,
            opts.game_params,
            [opts.exploitative_set, opts.collective_set],
        )
        paths = dict(zip(("exploitative", "collective"), set_paths, strict=True))
        sets: dict[str, StrategySet] = dict(
            zip(("exploitative", "collective"), set_list, strict=True)
        )
        excluded = (
            screen_sets(set_list, scenario.game, params) if opts.exclude_flagged else [{}, {}]
        )
        specs = [(n, nc) for n in opts.group_sizes for nc in split_points(n, opts.splits)]
        seeds = np.random.SeedSequence(scenario.seed).spawn(len(specs))
        tasks = [
            SelfPlayTask(
                scenario.game,
                params,
                opts.rounds,
                n,
                nc,
                opts.samples,
                paths["exploitative"],
                paths["collective"],
                opts.batch_players,
                seed,
                (tuple(excluded[0]), tuple(excluded[1])),
            )
            for (n, nc), seed in zip(specs, seeds, strict=True)
        ]
        deadline = deadline_at(opts.deadline)  # not in the tasks' fingerprints: resumable
        tasks = [dataclasses.replace(t, deadline=deadline) for t in tasks]
        outputs = saved_map(
            run_self_play_task, tasks, ctx, "self-play", costs=[t.n * t.samples for t in tasks]
        )
        stop_if_all_failed(
            [without(s, ex) for s, ex in zip(set_list, excluded, strict=True)],
            _merge_flags(outputs),
        )
        bounds = {
            n: make_game(scenario.game, n, opts.rounds, **params).welfare_bounds()
            for n in opts.group_sizes
        }
        frames, steps = [], []
        for split_id, (task, out) in enumerate(zip(tasks, outputs, strict=True)):
            low, high = bounds[task.n]
            frames.append(
                pd.DataFrame(
                    {
                        "group_size": task.n,
                        "n_collective": task.n_collective,
                        "n_exploitative": task.n - task.n_collective,
                        "frac_collective": task.n_collective / task.n,
                        "sample": np.arange(task.samples),
                        "normalised_payoff": out["normalised_payoff"],
                        "cooperation_rate": out["cooperation_rate"],
                        "exploitative_payoff": out["exploitative_payoff"],
                        "collective_payoff": out["collective_payoff"],
                        "min_possible": low,
                        "max_possible": high,
                    }
                )
            )
            steps.append(
                pd.DataFrame(
                    {
                        "RunId": split_id,
                        "Step": np.arange(1, opts.rounds + 1),
                        "group_size": task.n,
                        "n_collective": task.n_collective,
                        "cooperation_rate": out["coop_by_round"],
                    }
                )
            )
        runs = pd.concat(frames, ignore_index=True)
        per_size = {}
        for n, grp in runs.groupby("group_size"):
            means = grp.groupby("n_collective")["normalised_payoff"].mean()
            low, high = bounds[int(n)]
            per_size[str(n)] = {
                "min_possible": low,
                "max_possible": high,
                "all_exploitative": float(means.iloc[0]),
                "all_collective": float(means.iloc[-1]),
                "mean_over_splits": float(means.mean()),
                "efficiency_over_splits": float((means.mean() - low) / (high - low))
                if high > low
                else None,
            }
        summary = {
            "experiment": "self_play",
            "game": scenario.game,
            "game_params": make_game(
                scenario.game, opts.group_sizes[0], opts.rounds, **params
            ).params(),
            "sets": {k: s.metadata() for k, s in sets.items()},
            "samples_per_split": opts.samples,
            "by_group_size": per_size,
            "flagged_strategies": _merge_flags(outputs),
            "memo": memo_summary(outputs),
            "excluded_strategies": dict(zip(("exploitative", "collective"), excluded, strict=True)),
        }
        return Results(
            runs=runs,
            steps=pd.concat(steps, ignore_index=True),
            summary=summary,
            metrics=[
                "normalised_payoff",
                "cooperation_rate",
                "exploitative_payoff",
                "collective_payoff",
            ],
            group_by=["group_size", "n_collective"],
            seeds=[int(s.generate_state(1, np.uint64)[0]) for s in seeds],
        )
