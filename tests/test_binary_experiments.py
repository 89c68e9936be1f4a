"""Self-play and cultural evolution at reduced sizes: structure, sanity, determinism, memory."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mesa_dilemmas.dilemmas.binary import figures as binary_figures
from mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution import (
    CulturalEvolutionExperiment,
    CulturalEvolutionOptions,
    Evolution,
)
from mesa_dilemmas.dilemmas.binary.experiments.self_play import (
    SelfPlayExperiment,
    sample_indices,
    split_points,
)
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.scenarios.config import ConfigError, load_scenario
from mesa_dilemmas.scenarios.experiment import RunContext

GAMES = ("public_goods", "collective_risk", "common_pool")


def ctx(tmp_path: Path, processes: int = 1) -> RunContext:
    return RunContext(out_dir=tmp_path, processes=processes, progress=False)


@pytest.mark.parametrize("game", GAMES)
def test_bundled_scenarios_validate(game: str) -> None:
    sc, opts = load_scenario(f"{game}/self_play")
    assert opts.group_sizes == [4, 16, 64, 256] and opts.samples == 200
    sc, opts = load_scenario(f"{game}/cultural_evolution")
    assert (opts.population, opts.survivors, opts.games_per_agent, opts.runs) == (512, 64, 4, 100)
    assert opts.group_sizes == [4, 64] and opts.threshold == 0.75 and opts.mutation_rate == 0.1


def test_option_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"options.sampels: unknown key"):
        load_scenario("public_goods/self_play", ["options.sampels=3"])
    with pytest.raises(ConfigError, match="population"):
        load_scenario("public_goods/cultural_evolution", ["options.population=100"])


def test_sampling_without_replacement_and_evenly_beyond_the_set() -> None:
    rng = np.random.default_rng(0)
    idx = sample_indices(rng, 10, 7)
    assert len(set(idx.tolist())) == 7
    counts = np.bincount(sample_indices(rng, 10, 37), minlength=10)
    assert counts.sum() == 37 and counts.max() - counts.min() <= 1
    assert split_points(4, None) == [0, 1, 2, 3, 4]
    assert split_points(256, 5) == [0, 64, 128, 192, 256]


@pytest.fixture(scope="module")
def self_play_runs(tmp_path_factory) -> dict[str, object]:
    out = {}
    for game in GAMES:
        sc, opts = load_scenario(
            f"{game}/self_play",
            ["options.group_sizes=[4, 16]", "options.samples=40", "options.splits=5"],
        )
        out[game] = SelfPlayExperiment().run(sc, opts, ctx(tmp_path_factory.mktemp(game)))
    return out


@pytest.mark.parametrize("game", GAMES)
def test_self_play_results(self_play_runs, game: str) -> None:
    res = self_play_runs[game]
    runs = res.runs
    assert len(runs) == 40 * (5 + 5)
    assert set(res.group_by) <= set(runs.columns) and set(res.metrics) <= set(runs.columns)
    assert (runs["normalised_payoff"] >= runs["min_possible"] - 1e-9).all()
    assert (runs["normalised_payoff"] <= runs["max_possible"] + 1e-9).all()
    means = runs.groupby(["group_size", "n_collective"])["normalised_payoff"].mean()
    for n in (4, 16):
        # collective groups do better than exploitative ones, clearly beyond sampling noise
        assert means[(n, n)] > means[(n, 0)] + 0.3
    assert runs.loc[runs["n_collective"] == 0, "collective_payoff"].isna().all()
    assert res.summary["samples_per_split"] == 40
    assert len(res.steps) == 10 * 20 and res.steps["cooperation_rate"].between(0, 1).all()


def test_self_play_public_goods_all_defect_floor(tmp_path: Path) -> None:
    """Exploitative-only groups of always-defectors get exactly the minimum line."""
    sc, opts = load_scenario(
        "public_goods/self_play",
        [
            "options.group_sizes=[8]",
            "options.samples=3",
            "options.splits=2",
            f'options.exploitative_set="{tmp_set(tmp_path)}"',
        ],
    )
    runs = SelfPlayExperiment().run(sc, opts, ctx(tmp_path)).runs
    assert (runs.loc[runs["n_collective"] == 0, "normalised_payoff"] == 1.0).all()


def tmp_set(tmp_path: Path) -> Path:
    root = tmp_path / "defectors"
    root.mkdir()
    (root / "strategy_set.toml").write_text(
        'source = "t"\nattitude = "exploitative"\n[[strategies]]\nref = "all_d"\n'
    )
    return root


def test_self_play_is_deterministic_across_process_counts(tmp_path: Path) -> None:
    overrides = ["options.group_sizes=[4, 8]", "options.samples=12", "options.splits=3", "seed=5"]
    sc, opts = load_scenario("collective_risk/self_play", overrides)
    one = SelfPlayExperiment().run(sc, opts, ctx(tmp_path, 1)).runs
    two = SelfPlayExperiment().run(sc, opts, ctx(tmp_path, 2)).runs
    pd.testing.assert_frame_equal(one, two)
    sc6, _ = load_scenario("collective_risk/self_play", [*overrides[:-1], "seed=6"])
    other = SelfPlayExperiment().run(sc6, opts, ctx(tmp_path, 1)).runs
    assert not np.array_equal(one["normalised_payoff"], other["normalised_payoff"])


SMALL_CE = [
    "options.population=64",
    "options.survivors=8",
    "options.group_sizes=[4, 16]",
    "options.runs=3",
    "options.max_generations=25",
]


@pytest.mark.parametrize("game", GAMES)
def test_cultural_evolution_results(tmp_path: Path, game: str) -> None:
    sc, opts = load_scenario(f"{game}/cultural_evolution", SMALL_CE)
    res = CulturalEvolutionExperiment().run(sc, opts, ctx(tmp_path))
    runs = res.runs
    assert len(runs) == 6 and set(runs["group_size"]) == {4, 16}
    freq_cols = [c for c in runs.columns if c.startswith("freq:")]
    assert freq_cols == ["freq:reference/collective", "freq:reference/exploitative"]
    np.testing.assert_allclose(runs[freq_cols].sum(axis=1), 1.0)
    assert runs["generations"].between(1, 25).all()
    # a run stops early exactly when its winner reached the threshold
    early = runs["generations"] < 25
    assert (runs.loc[early, "threshold_reached"]).all()
    assert runs["welfare_efficiency"].between(0, 1).all()
    table = res.summary["table2"]
    assert sum(table["4"]["winners"].values()) == 3
    steps = res.steps
    assert len(steps) == runs["generations"].sum()
    png = binary_figures.cultural_evolution(tmp_path, runs, steps, sc)
    assert png[0].stat().st_size > 10_000


def test_public_goods_evolution_favours_exploitation(tmp_path: Path) -> None:
    """In the Public Goods Game defectors out-earn cooperators in mixed groups, so the
    exploitative gene should win most runs even at this reduced size (paper, Table 2)."""
    sc, opts = load_scenario(
        "public_goods/cultural_evolution",
        [
            "options.population=128",
            "options.survivors=16",
            "options.group_sizes=[16]",
            "options.runs=4",
            "options.max_generations=40",
        ],
    )
    runs = CulturalEvolutionExperiment().run(sc, opts, ctx(tmp_path)).runs
    assert (runs["winner_attitude"] == "exploitative").sum() >= 3


def test_evolution_memory_stays_flat_over_200_generations() -> None:
    opts = CulturalEvolutionOptions(
        population=64, survivors=8, group_sizes=[4], threshold=1.0, max_generations=200
    )
    sets = [load_strategy_set("reference_collective"), load_strategy_set("reference_exploitative")]
    evo = Evolution(make_game("common_pool", 4, 20), sets, opts, np.random.SeedSequence(0))
    tracemalloc.start()
    try:
        sizes = {}
        for gen in evo.generations():
            if gen.index in (20, 200):
                sizes[gen.index] = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert set(sizes) == {20, 200}  # 200 generations were played
    assert sizes[200] - sizes[20] < 200_000


def test_self_play_figure(self_play_runs, tmp_path: Path) -> None:
    res = self_play_runs["common_pool"]
    sc, _ = load_scenario("common_pool/self_play")
    paths = binary_figures.self_play(tmp_path, res.runs, res.steps, sc)
    assert paths == [tmp_path / "self_play.png"] and paths[0].stat().st_size > 10_000


def test_runs_end_to_end_through_the_cli(tmp_path: Path) -> None:
    """The scenario runner writes the run directory and renders the figures of both experiments."""
    from mesa_dilemmas import cli

    sp = tmp_path / "sp"
    args = [
        "--set",
        "options.samples=5",
        "--set",
        "options.group_sizes=[4]",
        "--figures",
        "--no-progress",
    ]
    assert cli.main(["run", "collective_risk/self_play", "--out", str(sp), *args]) == 0
    assert (sp / "self_play.png").is_file() and (sp / "runs.parquet").is_file()
    assert len(pd.read_parquet(sp / "runs.parquet")) == 5 * 5
    ce = tmp_path / "ce"
    ce_args = [
        "--set",
        "options.runs=1",
        "--set",
        "options.population=32",
        "--set",
        "options.survivors=4",
        "--set",
        "options.group_sizes=[4]",
        "--figures",
        "--no-progress",
    ]
    assert cli.main(["run", "common_pool/cultural_evolution", "--out", str(ce), *ce_args]) == 0
    assert (ce / "cultural_evolution.png").is_file()
    out = tmp_path / "an"
    assert (
        cli.main(
            [
                "analyse",
                "strategies",
                "reference_exploitative",
                "--limit",
                "3",
                "--rollouts",
                "2",
                "--out",
                str(out),
                "--no-progress",
                "--no-references",
            ]
        )
        == 0
    )
    assert (out / "pca.png").is_file()


def test_bad_game_params_fail_before_any_work(tmp_path: Path) -> None:
    # loading the scenario already checks what the experiment needs (nothing written yet) ...
    with pytest.raises(ConfigError, match=r"options.game_params \(group size 4\): k: "):
        load_scenario("public_goods/self_play", ["options.game_params={k = 5.0}"])
    with pytest.raises(ConfigError, match="unknown parameter of common_pool"):
        load_scenario("common_pool/cultural_evolution", ["options.game_params={volume = 1}"])
    # ... and so does the experiment itself, for callers that skip the loader
    sc, opts = load_scenario("public_goods/self_play")
    opts = opts.model_copy(update={"game_params": {"k": 5.0}})
    with pytest.raises(ConfigError, match=r"options.game_params \(group size 4\): k: "):
        SelfPlayExperiment().run(sc, opts, ctx(tmp_path))
    sc, opts = load_scenario("common_pool/cultural_evolution")
    opts = opts.model_copy(update={"game_params": {"volume": 1}})
    with pytest.raises(ConfigError, match="unknown parameter of common_pool"):
        CulturalEvolutionExperiment().run(sc, opts, ctx(tmp_path))
