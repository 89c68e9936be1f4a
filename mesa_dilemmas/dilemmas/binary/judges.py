"""What the claims about the C/D games share: reading a self-play or cultural-evolution run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mesa_dilemmas.analysis.verdicts import Experiment, read_runs

#: the paper the C/D games' claims come from, titled for the reproduction report
PAPERS = {"002": "Willis et al. — collective behaviour of hundreds of LLM agents"}


def wins_by_attitude(run_dir: Path) -> pd.DataFrame:
    """Cultural evolution: how many runs each attitude won, per group size."""
    runs = read_runs(run_dir)
    return runs.groupby(["group_size", "winner_attitude"]).size().unstack(fill_value=0)


def self_play_experiment(key: str, game: str) -> Experiment:
    """A C/D game's self-play at the report's sizes (tiny: 3 groups of 4 and of 8, so a judge
    of group size has two; quick: 40 per split)."""
    return Experiment(
        key,
        f"{game}/self_play",
        tiny=["options.samples=3", "options.group_sizes=[4,8]"],
        quick=["options.samples=40", "options.group_sizes=[4,16,64]", "options.splits=9"],
    )


def evolution_experiment(key: str, game: str) -> Experiment:
    """A C/D game's cultural evolution at the report's sizes."""
    return Experiment(
        key,
        f"{game}/cultural_evolution",
        tiny=[
            "options.runs=1",
            "options.population=64",
            "options.survivors=8",
            "options.max_generations=3",
        ],  # fmt: skip
        quick=[
            "options.runs=8",
            "options.population=128",
            "options.survivors=16",
            "options.max_generations=60",
        ],  # fmt: skip
    )
