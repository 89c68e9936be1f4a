"""Port of Mars scenarios validate, and the figures render from batch_run output."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
from cli_runner import cli
from mesa.batchrunner import batch_run

from mesa_dilemmas.dilemmas.port_of_mars import figures as figs
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.scenarios.config import bundled_scenarios, load_scenario

SCENARIOS = [n for n in bundled_scenarios() if n.startswith("port_of_mars/")]


def test_the_required_scenarios_exist():
    assert {"port_of_mars/svo_rule_based", "port_of_mars/cultural_groups"} <= set(SCENARIOS)


@pytest.mark.parametrize("name", SCENARIOS)
def test_bundled_scenarios_validate(name):
    scenario, _ = load_scenario(name)
    # rule-based experiments at 200 games; LLM ones at the paper's 50 per cell
    least = 50 if name.startswith("port_of_mars/llm_") else 200
    assert scenario.game == "port_of_mars" and scenario.replications >= least
    assert scenario.max_steps >= 12  # longer than any game (at most 12 rounds by default)


@pytest.fixture(scope="module")
def batch() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = batch_run(
        PortOfMarsModel,
        {"svo_angles": [[-15, 0, 15, 30, 60]], "meeting": [True, False]},
        rng=list(range(6)),
        data_collection_period=1,
        max_steps=30,
        display_progress=False,
    )
    steps = pd.DataFrame(rows)
    runs = steps.groupby("RunId").tail(1)
    return runs, steps


def test_runs_hold_every_per_run_metric_in_the_last_row(batch):
    runs, _ = batch
    assert len(runs) == 12
    for col in (
        "survived",
        "final_points_mean",
        "collapse_round",
        "pct_dirty",
        "health_coins_total",
        "players_json",
    ):
        assert col in runs.columns
    players = figs.player_table(runs, ["meeting"])
    assert len(players) == 60 and set(players["label"]) == {
        "svo-15",
        "svo0",
        "svo15",
        "svo30",
        "svo60",
    }
    # the model-level health total is the sum of the players' (agent rows must not shadow it)
    by_run = players.groupby("run")["health_coins_total"].sum()
    assert (runs.set_index("RunId")["health_coins_total"] == by_run).all()


def test_figures_render(batch, tmp_path):
    runs, steps = batch
    scenario = SimpleNamespace(grid={"meeting": [True, False]})
    paths = figs.svo_points(tmp_path, runs, steps, scenario)
    paths += figs.cultural_table(tmp_path, runs, steps, scenario)
    paths += figs.health_trajectories(tmp_path, runs, steps, scenario)
    assert len(paths) >= 7
    assert all(p.exists() and p.stat().st_size > 1000 for p in paths)
    table = pd.read_csv(tmp_path / "port_of_mars_by_label.csv")
    assert set(table["group"]) == {"meeting=True", "meeting=False"}


def _cli(*args: str) -> str:
    result = cli(*args, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_analyse_port_of_mars_writes_the_meeting_tests_and_the_leadership_table(tmp_path):
    comm = tmp_path / "comm"
    _cli(
        "run",
        "port_of_mars/communication",
        "--out",
        str(comm),
        "--no-progress",
        "--set",
        "replications=6",
    )
    out = _cli("analyse", "port_of_mars", str(comm))
    assert "Mann" not in out  # the tables, not prose
    tests = pd.read_csv(comm / "analysis" / "meeting_tests.csv")
    assert set(tests["label"]) == {"svo-15", "svo0", "svo15", "svo30", "svo60"}
    assert tests["health_coins_total_p"].between(0, 1).all()
    by_label = pd.read_csv(comm / "analysis" / "by_label.csv")
    assert len(by_label) == 10 and by_label["pct_dirty"].between(0, 100).all()
    lead = tmp_path / "lead"
    _cli(
        "run",
        "port_of_mars/leadership_rule_based",
        "--out",
        str(lead),
        "--no-progress",
        "--set",
        "replications=3",
        "--set",
        "grid.leadership=['announce', 'unaware']",
        "--set",
        "grid.leader_seat=[0, 4]",
    )
    _cli("analyse", "port_of_mars", str(lead))
    table = pd.read_csv(lead / "analysis" / "leadership.csv")
    assert set(table["leader"]) == {"svo-15", "svo60"} and (table["runs"] == 3).all()
    assert table["survival"].between(0, 1).all()


@pytest.mark.parametrize("name", ["svo_rule_based", "cultural_groups", "communication", "traits"])
def test_rule_scenarios_run_at_size_without_an_over_long_meeting(name, tmp_path):
    """Regression: the rule meeting writer once wrote 912 characters into a 900-character
    meeting and stopped the run; long games (many needs and offers) come up at this size."""
    from mesa_dilemmas.scenarios.runner import run_scenario

    out = run_scenario(
        f"port_of_mars/{name}",
        out_dir=tmp_path / "r",
        progress=False,
        overrides=["replications=80"],
    )
    assert out.summary["n_runs"] >= 80
