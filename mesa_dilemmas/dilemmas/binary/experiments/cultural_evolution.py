"""Cultural evolution (paper 002, Sec. 6.1): users imitate successful (model, attitude) choices.

A population of ``population`` agents; each carries a *gene* -- a strategy
set's (source, attitude) -- and one strategy sampled from that set.  Initially
genes are split uniformly.  Each generation:

1. every agent plays ``games_per_agent`` games: that many times the
   population is shuffled and cut into groups of n (so population must be a
   multiple of n); an agent's fitness is its mean normalised payoff
   (payoff per round) over its games;
2. the ``survivors`` fittest keep gene and strategy (ties broken at random);
3. every other agent copies the gene of a parent drawn from the whole
   population with probability proportional to fitness, mutates it with
   probability ``mutation_rate`` and samples a fresh strategy for it.

Mutation changes the source (another source with a set of the same
attitude) or the attitude (same source), each with probability 1/2, falling
back to whichever is possible.  The run stops when one gene holds at least
``threshold`` of the population or after ``max_generations`` generations; the
most frequent gene then is the winner.  Welfare efficiency is the last
played generation's mean normalised payoff placed between the game's minimum
(0) and maximum (1) possible welfare.

Only per-generation gene frequencies and mean payoff are kept, so memory is
flat however many generations run.  Runs are independent tasks seeded from
``SeedSequence(scenario.seed)``; results do not depend on the process count.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mesa_dilemmas.dilemmas.binary.engine import Lineups
from mesa_dilemmas.dilemmas.binary.experiments.self_play import (
    GameParam,
    _merge_flags,
    check_sets,
    deadline_at,
    memo_summary,
    prepare_sets,
    saved_map,
    screen_sets,
    start_task,
    stop_if_all_failed,
    without,
)
from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import DEFAULT_ROUNDS, MAX_PLAYERS, BinaryGame, make_game
from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategySet, load_strategy_set
from mesa_dilemmas.scenarios.experiment import Results, RunContext

if TYPE_CHECKING:
    from mesa_dilemmas.scenarios.config import Scenario


class CulturalEvolutionOptions(BaseModel):
    """The ``[options]`` of a cultural-evolution scenario (defaults: the paper's)."""

    model_config = ConfigDict(extra="forbid")

    #: strategy sets (bundled names or paths); each set's (source, attitude) is one gene
    sets: list[str] = ["reference_collective", "reference_exploitative"]
    group_sizes: list[Annotated[int, Field(ge=2, le=MAX_PLAYERS)]] = [4, 64]
    population: Annotated[int, Field(ge=2, le=1_000_000)] = 512
    games_per_agent: Annotated[int, Field(ge=1, le=1000)] = 4
    survivors: Annotated[int, Field(ge=0)] = 64
    mutation_rate: Annotated[float, Field(ge=0, le=1)] = 0.1
    threshold: Annotated[float, Field(gt=0, le=1)] = 0.75
    max_generations: Annotated[int, Field(ge=1, le=100_000)] = 200
    runs: Annotated[int, Field(ge=1, le=100_000)] = 100
    rounds: Annotated[int, Field(ge=1, le=10_000)] = DEFAULT_ROUNDS
    game_params: dict[str, GameParam] = {}
    #: screen the sets in the sandbox first and leave out strategies that misbehave (instead of
    #: letting them play the default action with a flag); the summary lists them
    exclude_flagged: bool = False
    #: wall-clock seconds the run may take (see the self-play's option); None: no deadline
    deadline: Annotated[float | None, Field(gt=0)] = None

    @model_validator(mode="after")
    def _consistent(self) -> CulturalEvolutionOptions:
        if not self.sets:
            raise ValueError("sets: give at least one strategy set")
        if not self.group_sizes:
            raise ValueError("group_sizes: give at least one group size")
        for n in self.group_sizes:
            if self.population % n:
                raise ValueError(
                    f"population: {self.population} is not a multiple of group size {n}"
                )
        if self.survivors >= self.population:
            raise ValueError(f"survivors: must be fewer than the population ({self.population})")
        return self


@dataclass(frozen=True)
class Gene:
    source: str
    attitude: str

    @property
    def label(self) -> str:
        return f"{self.source}/{self.attitude}"


def genes_of(sets: Sequence[StrategySet]) -> list[Gene]:
    """One gene per set, from its metadata; two sets with the same gene are an error."""
    genes = []
    for s in sets:
        gene = Gene(s.source or s.name, s.attitude or "unspecified")
        if gene in genes:
            raise ValueError(f"sets: two strategy sets share the gene {gene.label!r}")
        genes.append(gene)
    return genes


def mutation_table(genes: Sequence[Gene]) -> list[tuple[list[int], list[int]]]:
    """For each gene: (other sources with the same attitude, other attitudes of the same source)."""
    table = []
    for g in genes:
        other_source = [
            j for j, h in enumerate(genes) if h.attitude == g.attitude and h.source != g.source
        ]
        other_attitude = [
            j for j, h in enumerate(genes) if h.source == g.source and h.attitude != g.attitude
        ]
        table.append((other_source, other_attitude))
    return table


@dataclass
class Generation:
    """What one generation leaves behind (all that is kept)."""

    index: int  # 1-based number of this generation
    frequencies: np.ndarray  # gene frequencies of the population that played it
    mean_payoff: float  # mean normalised payoff of the generation


class Evolution:
    """One evolution run; iterate :meth:`generations` to play it, one summary per generation.

    The state is the current population only (``genes``, ``strategies``), so
    memory does not grow with the number of generations.
    """

    def __init__(
        self,
        game: BinaryGame,
        sets: Sequence[StrategySet],
        opts: CulturalEvolutionOptions,
        seed: np.random.SeedSequence,
    ) -> None:
        self.game, self.sets, self.opts = game, list(sets), opts
        self.rng = np.random.default_rng(seed)
        self.table = mutation_table(genes_of(self.sets))
        self.sizes = np.array([len(s) for s in self.sets])
        #: every set's entries in one list; set g's strategy j is ``palette[offsets[g] + j]``
        self.palette = [e for s in self.sets for e in s]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.intp)
        pop = opts.population
        self.genes = self.rng.permutation(np.arange(pop) % len(self.sets))
        self.strategies = self._sample_strategies(self.genes)
        #: strategies the sandbox flagged: name -> [matches flagged, first reason]
        self.flagged: dict[str, list[Any]] = {}
        #: memoised answers of deterministic strategies, of the memoisable ones
        self.memo = [0, 0]

    def _sample_strategies(self, genes: np.ndarray) -> np.ndarray:
        return (self.rng.random(len(genes)) * self.sizes[genes]).astype(np.int64)

    @property
    def frequencies(self) -> np.ndarray:
        return np.bincount(self.genes, minlength=len(self.sets)) / self.opts.population

    def play(self) -> np.ndarray:
        """Every agent plays ``games_per_agent`` games; returns its mean normalised payoff."""
        opts, rng, n, pop = self.opts, self.rng, self.game.n_players, self.opts.population
        groups = np.concatenate(
            [rng.permutation(pop).reshape(-1, n) for _ in range(opts.games_per_agent)]
        )
        entry = self.offsets[self.genes] + self.strategies  # each agent's palette index
        lineups = Lineups(self.palette, entry[groups])
        result = play_batch(self.game, lineups, rng.integers(0, 2**63, size=len(groups)))
        for flag in result.flags:
            self.flagged.setdefault(flag.strategy, [0, flag.reason])[0] += 1
        self.memo[0] += result.memo_hits
        self.memo[1] += result.memo_eligible
        fitness = np.zeros(pop)
        np.add.at(fitness, groups, result.normalised)
        return fitness / opts.games_per_agent

    def reproduce(self, fitness: np.ndarray) -> None:
        """Top ``survivors`` stay; the rest imitate fitness-proportionally, mutate, resample."""
        opts, rng, pop = self.opts, self.rng, self.opts.population
        order = np.lexsort((rng.random(pop), -fitness))
        top = order[: opts.survivors]
        weights = np.clip(fitness, 0.0, None)
        total = weights.sum()
        probs = weights / total if total > 0 else np.full(pop, 1.0 / pop)
        n_children = pop - opts.survivors
        child = self.genes[rng.choice(pop, size=n_children, p=probs)]
        for j in np.flatnonzero(rng.random(n_children) < opts.mutation_rate):
            other_source, other_attitude = self.table[child[j]]
            first, second = (
                (other_source, other_attitude)
                if rng.random() < 0.5
                else (other_attitude, other_source)
            )
            options = first or second
            if options:
                child[j] = options[int(rng.integers(len(options)))]
        self.genes = np.concatenate([self.genes[top], child])
        self.strategies = np.concatenate([self.strategies[top], self._sample_strategies(child)])

    def generations(self) -> Iterator[Generation]:
        """Play until one gene reaches the threshold or the generation limit."""
        opts = self.opts
        for gen in range(1, opts.max_generations + 1):
            freqs = self.frequencies
            fitness = self.play()
            yield Generation(gen, freqs, float(fitness.mean()))
            self.reproduce(fitness)
            if self.frequencies.max() >= opts.threshold:
                return


@dataclass(frozen=True)
class EvolutionTask:
    game: str
    game_params: dict[str, Any]
    group_size: int
    run: int
    set_paths: tuple[str, ...]
    options: dict[str, Any]
    seed: np.random.SeedSequence
    #: per set, the strategy names left out (``exclude_flagged``)
    excluded: tuple[tuple[str, ...], ...] = ()
    #: the run's deadline (``time.time()``), or None
    deadline: float | None = None


def run_evolution_task(task: EvolutionTask) -> dict[str, Any]:
    """One evolution run: per-generation frequencies and payoff, the final population's frequencies."""
    start_task(task.deadline)
    opts = CulturalEvolutionOptions.model_validate(task.options)
    game = make_game(task.game, task.group_size, opts.rounds, **task.game_params)
    sets = [load_strategy_set(p) for p in task.set_paths]
    if task.excluded:
        sets = [without(s, names) for s, names in zip(sets, task.excluded, strict=True)]
    evolution = Evolution(game, sets, opts, task.seed)
    history = list(evolution.generations())
    return {
        "frequencies": np.array([g.frequencies for g in history]),
        "mean_payoff": np.array([g.mean_payoff for g in history]),
        "final": evolution.frequencies,
        "flagged": evolution.flagged,
        "memo": evolution.memo,
    }


class CulturalEvolutionExperiment:
    """Table 2: winning genes, generations to the threshold and welfare efficiency per group size."""

    USES_MODEL_PARAMS: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = CulturalEvolutionOptions

    @classmethod
    def check(cls, scenario: Scenario, options: BaseModel) -> None:
        """What ``run`` needs (game parameters, strategy sets, distinct genes), before anything is written."""
        opts = CulturalEvolutionOptions.model_validate(options.model_dump())
        sets = prepare_sets(
            scenario.game, opts.rounds, opts.group_sizes, opts.game_params, opts.sets
        )[2]
        check_sets(sets)
        genes_of(sets)

    def run(self, scenario: Scenario, options: BaseModel, ctx: RunContext) -> Results:
        opts = CulturalEvolutionOptions.model_validate(
            options.model_dump() if isinstance(options, BaseModel) else options
        )
        params, paths, sets = prepare_sets(
            scenario.game, opts.rounds, opts.group_sizes, opts.game_params, opts.sets
        )
        excluded = (
            screen_sets(sets, scenario.game, params) if opts.exclude_flagged else [{} for _ in sets]
        )
        genes = genes_of(sets)
        specs = [(n, r) for n in opts.group_sizes for r in range(opts.runs)]
        seeds = np.random.SeedSequence(scenario.seed).spawn(len(specs))
        dumped = {**opts.model_dump(), "deadline": None}  # the deadline is the task's own
        deadline = deadline_at(opts.deadline)
        tasks = [
            EvolutionTask(
                scenario.game,
                params,
                n,
                r,
                paths,
                dumped,
                seed,
                tuple(map(tuple, excluded)),
                deadline,
            )
            for (n, r), seed in zip(specs, seeds, strict=True)
        ]
        outputs = saved_map(run_evolution_task, tasks, ctx, "evolution")
        rows, steps = [], []
        for run_id, (task, out) in enumerate(zip(tasks, outputs, strict=True)):
            low, high = make_game(
                scenario.game, task.group_size, opts.rounds, **params
            ).welfare_bounds()
            final = out["final"]
            winner = int(np.argmax(final))
            last_payoff = float(out["mean_payoff"][-1])
            row: dict[str, Any] = {
                "group_size": task.group_size,
                "run": task.run,
                "winner": genes[winner].label,
                "winner_source": genes[winner].source,
                "winner_attitude": genes[winner].attitude,
                "winner_frequency": float(final[winner]),
                "threshold_reached": bool(final[winner] >= opts.threshold),
                "generations": len(out["mean_payoff"]),
                "final_mean_payoff": last_payoff,
                "welfare_efficiency": (last_payoff - low) / (high - low)
                if high > low
                else float("nan"),
            }
            row.update({f"freq:{g.label}": float(f) for g, f in zip(genes, final, strict=True)})
            rows.append(row)
            frame = pd.DataFrame(out["frequencies"], columns=[f"freq:{g.label}" for g in genes])
            frame.insert(0, "mean_payoff", out["mean_payoff"])
            frame.insert(0, "run", task.run)
            frame.insert(0, "group_size", task.group_size)
            frame.insert(0, "Step", np.arange(1, len(frame) + 1))
            frame.insert(0, "RunId", run_id)
            steps.append(frame)
        stop_if_all_failed(
            [without(s, ex) for s, ex in zip(sets, excluded, strict=True)], _merge_flags(outputs)
        )
        runs = pd.DataFrame(rows)
        table: dict[str, Any] = {}
        for n, grp in runs.groupby("group_size"):
            table[str(n)] = {
                "winners": {g.label: int((grp["winner"] == g.label).sum()) for g in genes},
                "threshold_reached": int(grp["threshold_reached"].sum()),
                "average_generations": float(grp["generations"].mean()),
                "welfare_efficiency": float(grp["welfare_efficiency"].mean()),
                "runs": len(grp),
            }
        summary = {
            "experiment": "cultural_evolution",
            "game": scenario.game,
            "genes": [g.label for g in genes],
            "sets": [s.metadata() for s in sets],
            "table2": table,
            "flagged_strategies": _merge_flags(outputs),
            "memo": memo_summary(outputs),
            "excluded_strategies": {s.name: ex for s, ex in zip(sets, excluded, strict=True)},
        }
        return Results(
            runs=runs,
            steps=pd.concat(steps, ignore_index=True),
            summary=summary,
            metrics=["generations", "welfare_efficiency", "winner_frequency", "final_mean_payoff"],
            group_by=["group_size"],
            seeds=[int(s.generate_state(1, np.uint64)[0]) for s in seeds],
        )
