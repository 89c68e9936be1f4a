"""The compare page's recorded runs and branches in a real headless Chromium: a recorded fishery
run is listed, a branch is made on the page (a round and a parameter change), and it appears
beside its parent with its fork marked, its effects tabled and its lines charted."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from dashboard_fixtures import browser_fixture, control, screenshot, tab_fixture  # noqa: F401

from mesa_dilemmas.scenarios.runner import run_scenario

SCENARIO = """
name = "lake"
game = "fishery"
seed = 3
replications = 3
max_steps = 10
processes = 1
[params]
n_agents = 5
growth_rate = 0.6
stop_at_collapse = false
"""


@pytest.fixture(scope="module", name="runs_dir")
def runs_dir_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("branch-runs")
    path = root / "lake.toml"
    path.write_text(textwrap.dedent(SCENARIO))
    run_scenario(str(path), out_dir=root / "runs" / "lake", progress=False)
    return root / "runs"


def test_a_branch_made_on_the_page_appears_beside_its_parent(tab, runs_dir):  # noqa: F811
    page = tab
    page.goto(page.base_url + "compare")
    panel = page.locator("[data-panel='branches']")
    panel.wait_for(timeout=90_000)
    folder = control(page, "Runs folder").locator("input")
    folder.fill(str(runs_dir))
    folder.press("Enter")
    page.wait_for_selector("[data-branches='0']", state="attached")
    assert "lake" in panel.inner_text()
    # fork at round 4 with the fine doubled
    rounds = control(page, "Fork at round").locator("input")
    rounds.fill("4")
    rounds.press("Enter")
    value = control(page, "New value").locator("input")
    control(page, "Parameter").click()
    page.get_by_role("option", name="penalty", exact=True).click()
    value.fill("20")
    value.press("Enter")
    page.get_by_role("button", name="Make branch").click()
    page.wait_for_selector("[data-status='branch']", timeout=120_000)
    page.wait_for_selector("[data-branches='1'][data-forks='[4]']", state="attached")
    # the branch's directory: the prefix replayed identically, then it played on
    made = [p for p in runs_dir.iterdir() if (p / "manifest.json").is_file() and p.name != "lake"]
    assert len(made) == 1
    summary = json.loads((made[0] / "summary.json").read_text())
    assert summary["branches"][0]["at"] == 4 and summary["branches"][0]["rounds_checked"] > 0
    effects = pd.read_csv(made[0] / "effects.csv")
    shown = int(page.locator("[data-table='branch-effects']").get_attribute("data-rows") or 0)
    charted = ["stock", "total_harvest", "compliance", "mean_effort", "punishments", "group_norm"]
    assert shown == len(effects[effects["metric"].isin(charted)]) > 0
    # a chart per quantity, with the parent's and the branch's lines over the recorded rounds
    caption = page.locator("[data-chart='branch_stock']")
    caption.wait_for()
    assert int(caption.get_attribute("data-points") or 0) == 11  # rounds 0..10 of the parent
    latest = json.loads(caption.get_attribute("data-latest") or "{}")
    assert set(latest) == {"parent run", "penalty=20 at 4"}, latest
    screenshot(page, "compare-branches")
