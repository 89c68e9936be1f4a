"""The cultural-evolution page (paper 002, Sec. 6.1): gene shares over generations, one per Step.

It drives the experiment's own :class:`~mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution.Evolution`
one generation at a time (its ``generations()`` iterator), so the page shows
exactly what a ``cultural_evolution`` scenario computes for one run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import solara

from mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution import (
    CulturalEvolutionOptions,
    Evolution,
    Generation,
    genes_of,
)
from mesa_dilemmas.dilemmas.binary.rules import binary_games, make_game
from mesa_dilemmas.dilemmas.binary.strategies.loader import load_strategy_set, resolve_set_path
from mesa_dilemmas.viz.dashboard import controls as c
from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.charts import Ref, Series
from mesa_dilemmas.viz.dashboard.components import Chart, ChartGrid, Metric, Metrics
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage

OPTIONS = (
    "population",
    "games_per_agent",
    "survivors",
    "mutation_rate",
    "threshold",
    "max_generations",
    "rounds",
)


class EvolutionRun:
    """One evolution run stepped a generation at a time (``round`` = generations played)."""

    def __init__(
        self, game: str, group_size: int, opts: CulturalEvolutionOptions, seed: int
    ) -> None:
        self.opts = opts
        self.rules = make_game(game, group_size, opts.rounds)
        self.sets = [load_strategy_set(resolve_set_path(s)) for s in opts.sets]
        for s in self.sets:
            s.check_game(game)
        self.genes = [g.label for g in genes_of(self.sets)]
        self.evolution = Evolution(self.rules, self.sets, opts, np.random.SeedSequence(seed))
        self._generations = self.evolution.generations()
        self.history: list[Generation] = []
        self.running = True
        self.round = 0
        self.welfare = self.rules.welfare_bounds()

    def step(self) -> None:
        generation = next(self._generations, None)
        if generation is None:  # the threshold was reached or the last generation played
            self.running = False
            return
        self.history.append(generation)
        self.round = generation.index
        if generation.index >= self.opts.max_generations:
            self.running = False


@dataclass(frozen=True)
class EvolutionView:
    generation: int
    genes: list[str]
    shares: list[list[float]]  # per gene, per generation played
    current: list[float]  # the population now
    mean_payoff: list[float]
    welfare: tuple[float, float]
    threshold: float
    finished: bool
    #: the population now, one row per agent: gene, strategy, survivor or offspring
    agents: list[dict[str, str]] = field(default_factory=list)


def controls() -> dict[str, Any]:
    opts = CulturalEvolutionOptions
    games = list(binary_games())  # every registered C/D game; the first is the default
    return {
        "game": c.choice("game", games[0], games),
        "group_size": c.int_slider("group size n (divides the population)", 4, 2, 64),
        "population": c.slider(opts, "population", low=16, high=1024, step=16, value=512),
        "games_per_agent": c.slider(opts, "games_per_agent", high=10, label="games per agent"),
        "survivors": c.slider(opts, "survivors", high=256, step=8, value=64),
        "mutation_rate": c.slider(opts, "mutation_rate", step=0.01, label="mutation rate"),
        "threshold": c.slider(opts, "threshold", low=0.5, step=0.05, label="winning share"),
        "max_generations": c.slider(opts, "max_generations", high=500, label="generations at most"),
        "rounds": c.slider(opts, "rounds", high=100, label="rounds per game"),
        "rng": c.seed_box(42),
    }


def build(params: dict[str, Any], seed: int, llm: str | None) -> EvolutionRun:
    n = int(params["group_size"])
    opts = CulturalEvolutionOptions(group_sizes=[n], runs=1, **{k: params[k] for k in OPTIONS})
    return EvolutionRun(str(params["game"]), n, opts, seed)


def population_rows(run: EvolutionRun) -> list[dict[str, str]]:
    """One row per agent in the population's order: after a generation the survivors come
    first (they kept their gene), then the offspring (imitated, perhaps mutated)."""
    # the generator is paused after a generation's play, before its reproduction: the population
    # now is the one that played the last generation, made by the reproduction before it
    evolution, bred = run.evolution, len(run.history) >= 2
    survivors = run.opts.survivors if bred else 0
    rows = []
    for i, (gene, strategy) in enumerate(
        zip(evolution.genes.tolist(), evolution.strategies.tolist(), strict=True)
    ):
        entries = run.sets[gene].entries
        rows.append(
            {
                "gene": run.genes[gene],
                "strategy": entries[strategy].name if strategy < len(entries) else str(strategy),
                "kind": "initial" if not bred else "survivor" if i < survivors else "offspring",
            }
        )
    return rows


def snapshot(run: EvolutionRun) -> EvolutionView:
    freqs = np.array([g.frequencies for g in run.history]).reshape(-1, len(run.genes))
    return EvolutionView(
        generation=run.round,
        genes=run.genes,
        shares=freqs.T.tolist(),
        current=run.evolution.frequencies.tolist(),
        mean_payoff=[g.mean_payoff for g in run.history],
        welfare=run.welfare,
        threshold=run.opts.threshold,
        finished=not run.running,
        agents=population_rows(run),
    )


@solara.component
def Panels(view: EvolutionView, model: DashboardModel) -> None:
    t = model.token
    lead = int(np.argmax(view.current))
    low, high = view.welfare
    payoff = view.mean_payoff[-1] if view.mean_payoff else math.nan
    efficiency = (payoff - low) / (high - low) if high > low else math.nan
    Metrics(
        [
            Metric("generation", "generations played", view.generation),
            Metric("leading_gene", "leading gene", view.genes[lead]),
            Metric("leading_share", "its share now", view.current[lead]),
            Metric("mean_payoff", "mean payoff (last generation)", payoff),
            Metric("welfare_efficiency", "welfare efficiency", efficiency),
            Metric("finished", "finished", view.finished),
        ]
    )
    generations = list(range(1, view.generation + 1))
    shares = [Series(g, s, x=generations) for g, s in zip(view.genes, view.shares, strict=True)]
    charts = [
        (
            "gene_shares",
            lambda: vega.stack("Gene shares over generations", shares, ylabel="share"),
            view.shares[lead] if view.shares else [],
        ),
        (
            "gene_lines",
            lambda: vega.line(
                "Gene shares and the winning threshold",
                shares,
                [Ref(f"threshold {view.threshold:g}", view.threshold, "#d62728")],
                xlabel="generation",
                ylim=(-0.02, 1.02),
            ),
            view.shares[lead] if view.shares else [],
        ),
        (
            "mean_payoff",
            lambda: vega.line(
                "Mean payoff per generation",
                [Series("mean payoff", view.mean_payoff, x=generations)],
                [
                    Ref(f"worst possible {low:.2f}", low, "#7f7f7f"),
                    Ref(f"best possible {high:.2f}", high, "#555555"),
                ],
                xlabel="generation",
                ylabel="payoff per round",
            ),
            view.mean_payoff,
        ),
        (
            "current_shares",
            lambda: vega.bars(
                "The population now", view.genes, {"share": view.current}, ylabel="share"
            ),
            view.current,
        ),
    ]
    ChartGrid(charts, t)
    survivors = sum(a["kind"] == "survivor" for a in view.agents)
    note = (
        f"first the {survivors} survivors of generation {view.generation - 1} (kept their gene), "
        "then the offspring (imitated the fittest, some mutated)"
        if survivors
        else "the initial population: genes dealt evenly, in random order"
    )
    with solara.Card(margin=0):  # the whole width: one cell per agent
        Chart(
            "population_strip",
            t,
            lambda: vega.strip(
                f"The population of generation {view.generation}: {len(view.agents)} agents, "
                "one cell each, coloured by gene",
                view.agents,
                view.genes,
                subtitle=note,
            ),
            len(view.agents),
            view.current[lead],  # the leading gene's share, as its metric
        )


def scenario_body(model: DashboardModel) -> dict[str, Any]:
    """ "Save as scenario" (:attr:`GamePage.scenario_of`): the ``cultural_evolution`` experiment
    with one run of the page's group size (``[options]``).  Its runs derive their generators
    differently from the page, so the file repeats the page's settings, not its numbers."""
    params = dict(model.params)
    game = str(params.pop("game"))
    group_size = int(params.pop("group_size"))
    return {
        "game": game,
        "experiment": "cultural_evolution:CulturalEvolutionExperiment",
        "options": {**params, "group_sizes": [group_size], "runs": 1},
    }


PAGE = GamePage(
    path="cultural_evolution",
    order=50,
    title="Cultural evolution (paper 002)",
    summary=(
        "A population whose genes are (source, attitude) strategy sets plays the chosen game; the "
        "fittest keep their gene, the rest imitate in proportion to fitness and mutate. "
        "One Step is one generation."
    ),
    controls=controls,
    build=build,
    snapshot=snapshot,
    panels=Panels,
    scenario_of=scenario_body,
    agent_labels=lambda run: {},
    unit="generation",
)
