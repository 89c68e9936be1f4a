"""The example game in examples/stag_hunt: a game from its own package, found by entry point.

``scripts/test.sh`` installs it (``pip install -e examples/stag_hunt``); the conformance test
already runs ``check_game`` over it with every other registered game."""

from __future__ import annotations

from importlib.metadata import entry_points

import pandas as pd
import pytest
from cli_runner import cli

from mesa_dilemmas.dilemmas.registry import game_model, games

pytestmark = pytest.mark.skipif(
    "stag_hunt" not in {ep.name for ep in entry_points(group="mesa_dilemmas.games")},
    reason="the example package is not installed (pip install -e examples/stag_hunt)",
)


def test_the_installed_game_is_registered_by_its_entry_point():
    assert games()["stag_hunt"] == "stag_hunt.model:StagHuntModel"
    assert game_model("stag_hunt").GAME == "stag_hunt"


def test_the_installed_game_runs_from_the_command_line_with_its_own_scenario(tmp_path):
    listed = cli("scenarios")
    assert "stag_hunt/trust" in listed.stdout
    out = tmp_path / "run"
    result = cli("run", "stag_hunt/trust", "--out", str(out), "--set", "replications=6")
    assert result.returncode == 0, result.stderr
    runs = pd.read_parquet(out / "runs.parquet")
    caught = runs.groupby("threshold")["caught"].mean()
    assert caught[2] > caught[8]  # the larger the group a stag needs, the rarer the catch
    agents = pd.read_parquet(out / "agents.parquet")
    assert set(agents.columns) == {"RunId", "iteration", "seed", "Step", "AgentID", "wealth"}


def test_the_installed_game_by_import_path_and_with_an_llm_group(tmp_path):
    """``game = "module:Class"`` works without a name, and a population puts the embedded
    model on two seats of a game this project has never seen."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'game = "stag_hunt.model:StagHuntModel"\nmax_steps = 1\n[params]\nn_hunters = 4\nthreshold = 2\n'
        '[population]\ngroups = [{ llm = "local", count = 2 }]\n[llm]\nanswer_mode = "native"\n'
    )
    out = tmp_path / "run"
    result = cli("run", str(scenario), "--out", str(out))
    assert result.returncode == 0, result.stderr
    calls = pd.read_parquet(out / "llm_calls.parquet")
    assert len(calls) >= 2 and set(calls["kind"]) == {"stag_hunt.hunt"}


def test_the_dashboard_has_a_page_for_the_installed_game():
    from mesa_dilemmas.viz.dashboard import app
    from mesa_dilemmas.viz.dashboard.runtime import DashboardModel

    page = next(p for p in app.PAGES if p.path == "stag_hunt")
    controls = page.controls()
    assert {"n_hunters", "threshold", "stag_payoff", "rng"} <= set(controls)
    params = {k: v["value"] for k, v in controls.items() if k != "rng"}
    model = DashboardModel(page=page, rng=3, **params)
    model.step()
    assert model.error is None and model.view.round == 1 and "stag_share" in model.view.series


def test_the_example_brings_its_page_figure_and_command_by_entry_point(tmp_path):
    """Nothing of mesa-dilemmas names the example: its page, figure and command appear only
    because its own pyproject.toml registers them."""
    from mesa_dilemmas.dilemmas.registry import COMMANDS, FIGURES, PAGES, extensions
    from mesa_dilemmas.viz.dashboard import app

    assert extensions(PAGES)["stag_hunt"].value == "stag_hunt.page:PAGE"
    page = next(p for p in app.PAGES if p.path == "stag_hunt")
    assert page.title == "Stag Hunt (example game)"  # its own page, not the generic one
    assert "stag_hunt.catch_rate" in extensions(FIGURES)
    assert "stag-hunt" in extensions(COMMANDS)
    assert "stag-hunt" in cli("--help").stdout
    out = tmp_path / "run"
    ran = cli("run", "stag_hunt/trust", "--out", str(out), "--set", "replications=4", "--figures")
    assert ran.returncode == 0, ran.stderr
    assert (out / "catch_rate.png").stat().st_size > 5_000  # the scenario names the figure
    table = cli("stag-hunt", str(out))
    assert table.returncode == 0, table.stderr
    rates = dict(line.split() for line in table.stdout.splitlines()[1:])
    assert float(rates["2"]) > float(rates["8"])
    assert cli("stag-hunt", str(tmp_path)).returncode == 2  # not a run: one line, exit 2
