"""The dashboard's shell in a real headless Chromium: the sidebar, navigation, themes, "save as
scenario", the compare page and Reset after an LLM endpoint failed.

Same server and browser as ``test_dashboard_browser.py`` (see ``dashboard_fixtures``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from dashboard_fixtures import (  # noqa: F401
    browser_fixture,
    choose,
    control,
    metric,
    move_slider,
    open_game,
    reset,
    screenshot,
    status,
    step,
    tab_fixture,
    type_into,
)

#: what Mesa's own SolaraViz sidebar shows and a game page must not
MESA_INTERNALS = ("Render Interval", "Use Threads", "Information", "Time: ", "Model Parameters")


#: the compare page has caught up with round ``r``: its status and every chart show it (its two
#: agent views carry their own games' tokens)
COMPARE_CAUGHT_UP = """r => {
  const s = document.querySelector('[data-status]');
  if (!s || +s.dataset.round !== r) return false;
  return [...document.querySelectorAll('[data-token]')].filter(e => !e.closest('[data-view]'))
    .every(e => e.dataset.token === s.dataset.token);
}"""


def compare_step(tab) -> int:  # noqa: ANN001
    _, before = status(tab)
    tab.get_by_role("button", name="Step", exact=True).click()
    tab.wait_for_function(COMPARE_CAUGHT_UP, arg=before + 1)
    return before + 1


def _download(tab, name: str) -> Path:  # noqa: ANN001
    with tab.expect_download() as download:
        tab.get_by_role("button", name=name).click()
    return Path(download.value.path())


@pytest.mark.parametrize(
    ("game", "rounds", "compared"),
    [
        ("fishery", 5, ("stock", "total_harvest", "compliance", "mean_effort", "punishments")),
        ("public_goods", 4, ("cooperation_rate", "mean_payoff")),
        (
            "port_of_mars",
            5,
            ("port_health", "events_drawn_total", "trades_proposed", "trades_accepted"),
        ),
    ],
)
def test_save_as_scenario_replays_the_pages_game_with_mesa_dilemmas_run(
    tab, tmp_path: Path, game: str, rounds: int, compared: tuple[str, ...]
) -> None:
    """The saved file validates, and ``mesa-dilemmas run`` on it (unchanged) plays the game the
    page played: the page's numbers after N rounds are the run's row for step N."""
    from mesa_dilemmas.scenarios.config import validate

    open_game(tab, game)
    if game == "fishery":
        move_slider(tab, "villagers", 2)  # a changed parameter travels too
        reset(tab)
    if game == "port_of_mars":
        choose(tab, "leadership", "announce")  # a select travels too
        reset(tab)
    for r in range(1, rounds + 1):
        assert step(tab) == r
    shown = {key: metric(tab, key) for key in compared}
    path = _download(tab, "save as scenario (TOML)")
    raw = tomllib.loads(path.read_text())
    scenario, _ = validate(raw)
    assert scenario.game == game and scenario.seed == 42 and scenario.replications == 1
    if game == "fishery":
        assert raw["params"]["n_agents"] == 12
    if game == "port_of_mars":
        assert raw["params"]["leadership"] == "announce"
    target = tmp_path / "scenario.toml"
    target.write_bytes(path.read_bytes())
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mesa_dilemmas",
            "run",
            str(target),
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    steps = pd.read_parquet(out / "steps.parquet")
    row = steps[steps["Step"] == rounds].iloc[0]
    for key, value in shown.items():
        assert float(row[key]) == pytest.approx(value, rel=1e-5, abs=1e-6), key


def test_compare_page_plays_two_fishery_settings_from_one_seed(tab) -> None:
    """Punishment on (A) vs off (B): both games step together from the same seed; each is the
    game the fishery model plays with that setting."""
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
    from mesa_dilemmas.viz.dashboard.runtime import model_seed

    tab.goto(tab.base_url + "compare")
    tab.wait_for_selector("[data-page='compare'] [data-status='ready']", timeout=90_000)
    differs = tab.locator("[data-table='differences']")
    assert differs.get_attribute("data-rows") == "1" and "punishment" in differs.inner_text()
    for r in (1, 2, 3, 4):
        assert compare_step(tab) == r
    games = {
        "a": FisheryModel(rng=model_seed(42)),
        "b": FisheryModel(punishment=False, rng=model_seed(42)),
    }
    for side, game in games.items():
        for _ in range(4):
            game.step()
        collected = game.datacollector.model_vars
        assert metric(tab, f"{side}:stock") == pytest.approx(collected["stock"][-1], rel=1e-5)
        assert metric(tab, f"{side}:punishments") == collected["punishments"][-1]
    assert sum(games["b"].datacollector.model_vars["punishments"]) == 0  # B never sanctions
    assert sum(games["a"].datacollector.model_vars["punishments"]) > 0
    caption = tab.locator("[data-chart='stock']")
    latest = json.loads(caption.get_attribute("data-latest") or "{}")
    assert set(latest) == {"setting A", "setting B"}  # one chart, both settings
    assert caption.inner_text().startswith("round 4: setting A ")
    assert tab.locator("[data-view='fishery-lake']").count() == 2
    # ▶ plays both together; ❚❚ stops them
    tab.get_by_role("button", name="▶").click()
    tab.wait_for_function("+document.querySelector('[data-status]').dataset.round >= 6")
    tab.get_by_role("button", name="❚❚").click()
    tab.get_by_role("button", name="▶").wait_for()
    assert set(json.loads(caption.get_attribute("data-latest") or "{}")) == {
        "setting A",
        "setting B",
    }
    screenshot(tab, "compare")


def test_sidebar_shows_values_names_and_no_mesa_internals(tab) -> None:
    open_game(tab, "fishery")
    body = tab.inner_text("body")
    for text in (*MESA_INTERNALS, "This website runs on"):
        assert text not in body, text
    sliders = tab.locator(".mdd-param")
    assert sliders.count() >= 10
    for i in range(sliders.count()):
        param = sliders.nth(i)
        label = param.locator("label").inner_text()
        thumb = param.locator("[role=slider]")
        assert thumb.get_attribute("aria-label") == label
        box = param.locator("input[data-value-box]")
        assert box.get_attribute("aria-label").startswith(label)
        assert float(box.input_value()) == float(thumb.get_attribute("aria-valuenow"))
        track = param.locator(".v-slider").bounding_box()
        assert track is not None and track["width"] >= 150, (label, track)
    # units where known
    pause = tab.locator("[data-param='play_interval']")
    assert "ms" in pause.inner_text()
    # a typed value moves the slider and the next Reset uses it; an impossible one is refused
    villagers = tab.locator("[data-param='n_agents']")
    box = villagers.locator("input[data-value-box]")
    box.fill("12")
    box.press("Enter")  # taken on Enter (or when the box is left)
    tab.wait_for_function(
        "() => document.querySelector(\"[data-param='n_agents'] [role=slider]\")"
        ".getAttribute('aria-valuenow') === '12'"
    )
    box.fill("999")  # above the slider's range
    box.press("Enter")
    tab.wait_for_selector("[data-param='n_agents'] .error--text")
    assert villagers.locator("[role=slider]").get_attribute("aria-valuenow") == "12"
    reset(tab)
    assert tab.locator("[data-metric='population']").get_attribute("data-value").startswith("12")
    # the run's parameters in the sidebar's words
    tab.get_by_text("parameters of this run").click()
    settings = tab.locator("[data-table='run-settings']").inner_text()
    assert "sanction beta" in settings and "villagers" in settings
    assert "penalty" not in settings and "n_agents" not in settings
    screenshot(tab, "fishery_sidebar")


def test_navigation_names_the_pages_and_fits_at_1400px(tab) -> None:
    from mesa_dilemmas.viz.dashboard.app import PAGES, short_name

    tab.goto(tab.base_url)
    tab.wait_for_selector("text=open port of mars")
    tabs = tab.locator(".v-tab")
    names = [tabs.nth(i).inner_text().strip() for i in range(tabs.count())]
    assert names == ["Home", *(short_name(p) for p in PAGES), "Compare"]
    assert not any("_" in n for n in names)
    for i in range(tabs.count()):
        box = tabs.nth(i).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1400, names[i]
    title = tab.locator(".v-app-bar .v-toolbar__title").inner_text()
    assert "mesa-dilemmas" in title


def test_charts_say_every_series_in_words_and_follow_the_dark_theme(tab) -> None:
    open_game(tab, "fishery")
    for _ in (1, 2, 3):
        step(tab)
    caption = tab.locator("[data-chart='compliance']")
    text = caption.inner_text()
    assert text.startswith("round 3: ") and "mean effort" in text and "compliance" in text
    assert "points" not in text and "latest" not in text
    assert len(json.loads(caption.get_attribute("data-latest") or "{}")) == 2

    corner = """() => [...document.querySelectorAll('.mdd-caption[data-chart]')].map(c => {
        const canvas = c.parentElement.querySelector('canvas');
        return canvas ? canvas.getContext('2d').getImageData(3, 3, 1, 1).data[3] : -1; })"""
    tab.wait_for_function(f"() => ({corner})().every(a => a === 255)")  # white boxes in light
    toggle = tab.locator(".v-app-bar button").last
    for _ in range(3):
        if tab.locator(".v-application.theme--dark").count():
            break
        icon = toggle.inner_html()
        toggle.click()  # the toggle cycles through its states; each shows another icon
        tab.wait_for_function(
            "([el, before]) => el.innerHTML !== before", arg=[toggle.element_handle(), icon]
        )
    assert tab.locator(".v-application.theme--dark").count() == 1
    # dark: no chart keeps a white (opaque) background; the card's colour shows through
    tab.wait_for_function(f"() => ({corner})().every(a => a === 0)")
    screenshot(tab, "fishery_dark")


def test_narrow_layout_compare_page_keeps_its_controls_in_the_drawer(browser, dashboard_url):  # noqa: ANN001, ANN201
    context = browser.new_context(viewport={"width": 900, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    tab.base_url = dashboard_url
    try:
        tab.goto(dashboard_url + "compare")
        tab.wait_for_selector("[data-page='compare'] [data-status='ready']", timeout=90_000)
        step_button = tab.get_by_role("button", name="Step", exact=True)
        menu = tab.locator(".v-app-bar__nav-icon")
        assert menu.locator(".mdi-menu").count() == 1
        if step_button.is_visible():
            tab.mouse.click(850, 600)
            step_button.wait_for(state="hidden")
        menu.click()
        step_button.wait_for(state="visible")
        assert tab.locator("[data-setting='b'] [data-param='n_agents']").count() == 1
        assert compare_step(tab) == 1
        screenshot(tab, "compare_900px")
    finally:
        context.close()


def test_reset_after_an_llm_endpoint_failed_plays_again(tab) -> None:
    """An endpoint that rejects every call stops the round with its reason; after pointing the
    page at a working endpoint, Reset gives a game that steps.  A Reset while a slow round is
    still being played gives a new game that steps too."""
    from llm_servers.wire import Faults, WireServer

    with (
        WireServer(Faults(always="unauthorized")) as bad,
        WireServer() as good,
        WireServer(latency_s=2.0) as slow,
    ):
        open_game(tab, "public_goods")
        move_slider(tab, "players: LLM", 1)
        choose(tab, "LLM provider", "openai")
        type_into(tab, "LLM model", f"m@{bad.url}/v1")
        reset(tab)
        tab.get_by_role("button", name="Step", exact=True).click()
        tab.wait_for_selector("[data-status='error']")
        assert "401" in tab.locator("[data-error]").inner_text()

        type_into(tab, "LLM model", f"m@{good.url}/v1")
        reset(tab)
        assert step(tab) == 1 and status(tab) == ("ready", 1)
        assert good.state.counts["ok"] >= 1

        type_into(tab, "LLM model", f"m@{slow.url}/v1")
        reset(tab)
        tab.get_by_role("button", name="Step", exact=True).click()
        tab.wait_for_selector("[data-status='playing']")
        reset(tab)  # while the slow round is still being played
        assert step(tab) == 1 and status(tab) == ("ready", 1)
