"""Issue 28, items 6, 7 and 11 in a real headless Chromium: what the pages show.

Every text a chart draws (titles, axis labels, legends, reference-line labels) lies inside
its canvas and, for a clipped layer, inside its plot, read from Vega's scenegraph; a zoom
clips the collapse threshold away rather than drawing it along the lower edge; the meeting
box shows every line; the compare page's lakes fit at 900 px; charts download under their
own names; the collapse banner, the meeting heading and the Play button say what happened;
the Stag Hunt page speaks in words; the LLM panel is in sight while a slow round plays.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from dashboard_fixtures import (  # noqa: F401
    browser_fixture,
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

#: every chart widget on the page has drawn the snapshot the status line shows
ALL_DRAWN = """() => {
  const t = document.querySelector('[data-status]').dataset.token;
  return [...document.querySelectorAll('.mdd-vega')].every(e => e.dataset.drawn === t);
}"""

#: every text item of a drawn chart, with its box in canvas pixels, and whether its mark is
#: clipped to its group (then also its box in the group and the group's size)
TEXTS = """e => {
  const view = e.mddView;
  const canvas = e.querySelector('canvas').getBoundingClientRect();
  const [ox, oy] = view.origin();
  const out = [];
  const marks = (group, dx, dy) => { for (const m of group.items || []) mark(m, dx, dy); };
  const mark = (node, dx, dy) => {
    for (const item of node.items || []) {
      if (node.marktype === 'group') { marks(item, dx + (item.x || 0), dy + (item.y || 0)); continue; }
      if (node.marktype !== 'text' || !item.bounds || item.text === undefined || item.text === '') continue;
      if (item.opacity === 0 || item.fillOpacity === 0) continue;
      const b = item.bounds, g = node.group || {};
      out.push({text: String(item.text), clip: !!node.clip, x1: b.x1 + dx, y1: b.y1 + dy,
                x2: b.x2 + dx, y2: b.y2 + dy, gx1: b.x1, gy1: b.y1, gx2: b.x2, gy2: b.y2,
                gw: g.width, gh: g.height});
    }
  };
  mark(view.scenegraph().root, ox, oy);
  return {width: canvas.width, height: canvas.height, texts: out};
}"""


def clipped_texts(tab: Any) -> list[str]:
    """Every text of every drawn chart on the page that its canvas or its plot cuts off (a text
    of a clipped layer wholly outside its plot is not drawn at all: a zoomed-away label)."""
    out = []
    for chart in tab.locator(".mdd-vega").all():
        info = chart.evaluate(TEXTS)
        for t in info["texts"]:
            if t["clip"]:
                hidden = (
                    t["gx2"] <= 0 or t["gy2"] <= 0 or t["gx1"] >= t["gw"] or t["gy1"] >= t["gh"]
                )
                inside = (
                    t["gx1"] >= -0.5
                    and t["gy1"] >= -0.5
                    and t["gx2"] <= t["gw"] + 0.5
                    and t["gy2"] <= t["gh"] + 0.5
                )
                if not hidden and not inside:
                    out.append(f"{t['text']!r} (cut by its plot)")
                if hidden:
                    continue
            outside = (
                t["x1"] < -0.5
                or t["y1"] < -0.5
                or t["x2"] > info["width"] + 0.5
                or t["y2"] > info["height"] + 0.5
            )
            if outside:
                out.append(f"{t['text']!r} (outside the canvas)")
    return out


#: every chart on the page has been drawn (the compare page's charts and lakes carry different
#: tokens, so this waits for a drawing, not for a token)
EVERY_CHART_DRAWN = """() => [...document.querySelectorAll('.mdd-vega')]
  .every(e => e.mddView && e.querySelector('canvas'))"""


def play(tab: Any, rounds: int) -> None:
    for _ in range(rounds):
        step(tab)
    tab.wait_for_function(ALL_DRAWN)


@pytest.mark.parametrize(
    "path",
    [
        "public_goods",
        "collective_risk",
        "common_pool",
        "cultural_evolution",
        "fishery",
        "port_of_mars",
        "stag_hunt",
    ],
)
def test_no_chart_cuts_off_a_label(tab, path: str) -> None:
    """Titles, axis labels, legends and reference-line labels ("best possible 2.00" at the top
    of its range, the common pool's legend, axis labels grown after the first draw) are all
    drawn inside their charts."""
    open_game(tab, path)
    play(tab, 4)
    assert clipped_texts(tab) == []  # the agent views (lake, seats, players) included


#: the reference lines of a chart: each label's item and, drawn right before it, its halo
REF_LABELS = """e => {
  const out = [];
  const walk = (node) => {
    if (!node) return;
    if (node.marktype === 'group') { for (const g of node.items || []) for (const m of g.items || []) walk(m); return; }
    if (node.marktype === 'text') for (const i of node.items || []) out.push({text: i.text, fill: i.fill, stroke: i.stroke || null});
  };
  for (const m of e.mddView.scenegraph().root.items[0].items) walk(m);
  return out;
}"""


def test_the_threshold_label_is_drawn_on_a_halo_over_the_cooperation_line(tab) -> None:
    """Collective risk: the cooperation line runs along the threshold (2 of 4 is the threshold
    share); its label has a halo of the background under it, so the line does not strike it
    out, and it stays in the plot."""
    open_game(tab, "collective_risk")
    play(tab, 3)
    chart = tab.locator(".v-card:has([data-chart='cooperation_rate']) .mdd-vega")
    texts = chart.evaluate(REF_LABELS)
    label = next(
        i
        for i, t in enumerate(texts)
        if str(t["text"]).startswith("threshold m") and t["stroke"] is None
    )
    halo = texts[label - 1]
    assert halo["text"] == texts[label]["text"] and halo["fill"] == halo["stroke"] == "#ffffff"
    assert clipped_texts(tab) == []


#: the y pixel of the collapse threshold's line in the stock chart, and the plot's height
THRESHOLD_LINE = """e => {
  const view = e.mddView;
  const y = view.scale('y');
  const domain = y.domain();
  const found = [];
  const walk = (node) => {
    if (node.marktype === 'group') { for (const g of node.items || []) for (const m of g.items || []) walk(m); return; }
    if (node.marktype === 'rule' && node.clip) for (const i of node.items || []) found.push(i.y);
  };
  for (const m of view.scenegraph().root.items[0].items) walk(m);
  return {domain, ys: found, height: view.scenegraph().root.items[0].height};
}"""


def test_a_zoom_clips_the_collapse_threshold_away_instead_of_drawing_it_at_the_edge(tab) -> None:
    open_game(tab, "fishery")
    play(tab, 6)
    chart = tab.locator(".v-card:has([data-chart='stock']) .mdd-vega")
    box = chart.bounding_box()
    # zoom in around the top of the plot, where the stock is, until 15 fish are out of view
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + 60)
    for _ in range(6):
        tab.mouse.wheel(0, -300)
        try:
            tab.wait_for_function(
                "e => e.mddView.scale('y').domain()[0] > 20",
                arg=chart.element_handle(),
                timeout=3000,
            )
            break
        except Exception:  # noqa: BLE001 - one more turn of the wheel
            continue
    line = chart.evaluate(THRESHOLD_LINE)
    assert line["domain"][0] > 20, line
    threshold = max(line["ys"])  # the lowest line drawn: 15 fish, below the view
    assert threshold > line["height"] + 1, line  # outside the plot (clipped), not on its edge
    assert clipped_texts(tab) == []  # and its label went with it


def test_the_meeting_box_shows_every_line_at_900_px(browser, dashboard_url) -> None:  # noqa: ANN001
    context = browser.new_context(viewport={"width": 900, "height": 1200})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    tab.base_url = dashboard_url
    try:
        open_game(tab, "port_of_mars")
        close_drawer(tab)
        for _ in range(2):
            step(tab)
        for key in ("meeting-view", "meeting"):
            box = tab.locator(f"[data-text='{key}']")
            lines = box.inner_text().count("\n") + 1
            assert lines >= 10
            height = box.evaluate("e => [e.scrollHeight, e.clientHeight]")
            assert height[0] <= height[1] + 1, (key, height)  # nothing hidden below the edge
        screenshot(tab, "port_of_mars_meeting_900px")
    finally:
        context.close()


def close_drawer(tab: Any) -> None:
    """At 900 px the sidebar is a drawer that starts open over the page: close it, then open
    it again (its buttons are then usable)."""
    step_button = tab.get_by_role("button", name="Step", exact=True)
    if step_button.is_visible():
        tab.mouse.click(850, 600)
        step_button.wait_for(state="hidden")
    tab.locator(".v-app-bar__nav-icon").click()
    step_button.wait_for(state="visible")


def test_the_compare_pages_lakes_fit_side_by_side_at_900_px(browser, dashboard_url) -> None:  # noqa: ANN001
    context = browser.new_context(viewport={"width": 900, "height": 1200})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    try:
        tab.goto(dashboard_url + "compare")
        tab.wait_for_selector("[data-page='compare'] [data-status='ready']", timeout=90_000)
        lakes = tab.locator("[data-view='fishery-lake']")
        tab.wait_for_function(
            "() => document.querySelectorAll(\"[data-view='fishery-lake'] .mdd-vega[data-drawn]\").length == 2"
        )
        # one round of each (the compare page draws its charts from the first round on)
        tab.get_by_role("button", name="Step", exact=True).click()
        tab.wait_for_selector("[data-page='compare'] [data-status][data-round='1']")
        tab.wait_for_function(EVERY_CHART_DRAWN)
        tab.mouse.click(850, 600)  # close the drawer (it starts open over the page at 900 px)
        tab.get_by_role("button", name="Step", exact=True).wait_for(state="hidden")
        page = tab.locator("[data-page='compare']").bounding_box()
        right = page["x"] + page["width"]
        boxes = []
        for i in range(2):
            view = lakes.nth(i).bounding_box()
            canvas = lakes.nth(i).locator("canvas").bounding_box()
            boxes.append(canvas)
            assert canvas["x"] >= view["x"] - 0.5
            assert canvas["x"] + canvas["width"] <= view["x"] + view["width"] + 0.5
            assert canvas["x"] + canvas["width"] <= min(right, 900) + 0.5  # setting B's too
        assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"]  # side by side
        assert clipped_texts(tab) == []  # the subtitles too
        screenshot(tab, "compare_lakes_900px")
    finally:
        context.close()


def save_svg(tab: Any, card: Any) -> str:
    card.locator(".vega-actions, details").first.evaluate("d => d.setAttribute('open', '')")
    with tab.expect_download() as download:
        card.get_by_text("Save as SVG").click()
    return download.value.suggested_filename


def test_charts_download_under_the_game_seed_and_chart_name(tab) -> None:
    open_game(tab, "fishery")
    play(tab, 1)
    stock = tab.locator(".v-card:has([data-chart='stock'])")
    assert save_svg(tab, stock) == "fishery_seed42_stock.svg"
    lake = tab.locator("[data-view='fishery-lake']")
    assert save_svg(tab, lake) == "fishery_seed42_fishery-lake.svg"
    open_game(tab, "common_pool")
    play(tab, 1)
    payoff = tab.locator(".v-card:has([data-chart='mean_payoff'])")
    assert save_svg(tab, payoff) == "common_pool_seed42_mean_payoff.svg"


def test_the_collapse_banner_says_a_villager_starved(tab) -> None:
    """Harsh sanctions (beta 30, gamma 10) ruin a villager while the lake is full (seed 42:
    round 5): the banner says that, not "the stock fell ... or a villager starved"."""
    open_game(tab, "fishery")
    for label in ("sanction beta", "cost of sanctioning gamma"):
        thumb = control(tab, label).locator("[role=slider]")
        thumb.focus()
        tab.keyboard.press("End")
    tab.wait_for_function(
        "() => [...document.querySelectorAll('[data-param]')].filter(p => "
        "/^(sanction beta|cost of sanctioning gamma)/.test(p.querySelector('label').textContent.trim()) "
        "&& +p.querySelector('input[type=number]').value >= 10).length == 2"
    )
    reset(tab)
    while status(tab)[0] == "ready":
        step(tab)
    banner = tab.locator("[data-banner='collapse']").inner_text()
    assert re.search(
        r"collapsed in round \d+: \d+ villagers? starved \(the stock, [\d.]+, stayed", banner
    )
    assert "or a villager starved" not in banner
    assert metric(tab, "collapsed") == 1


def test_the_meeting_heading_says_a_solar_flare_cancelled_it(tab) -> None:
    """Seed 0: a Solar Flare in round 7; the heading no longer says "written by rule_narrator"."""
    open_game(tab, "port_of_mars")
    type_into(tab, "seed", "0")
    reset(tab)
    for _ in range(7):
        step(tab)
    heading = tab.locator(".v-card:has([data-text='meeting-moment']) .v-card__title").inner_text()
    assert heading == "Planning meeting of round 7: cancelled by a Solar Flare"
    assert "cancelled" in tab.locator("[data-text='meeting-absent']").inner_text()


def test_policies_count_rounds(tab) -> None:
    open_game(tab, "fishery")
    play(tab, 2)
    policy = tab.locator("[data-text='shared-policy']").inner_text()
    assert policy.endswith("fish per round.")
    caption = tab.locator("[data-view='fishery-lake'] .mdd-caption").inner_text()
    history = tab.locator("[data-table='norm-history']").inner_text()
    assert "per day" not in caption + history + policy


def test_a_finished_game_offers_a_replay_not_a_disabled_pause(tab) -> None:
    """Played to its end with ▶, the button says "↺ replay" (enabled) where Mesa left a disabled
    ❚❚; replay starts the game again and plays it."""
    open_game(tab, "port_of_mars")  # 9 rounds
    tab.get_by_role("button", name="▶").click()
    tab.wait_for_selector("[data-status='finished']", timeout=120_000)
    replay = tab.locator("button[data-play='finished']")
    replay.wait_for()
    assert replay.inner_text().strip().lower() == "↺ replay" and replay.is_enabled()
    assert tab.get_by_role("button", name="❚❚").count() == 0
    assert "replay plays it again" in tab.locator("[data-status]").inner_text()
    old = tab.locator("[data-status]").get_attribute("data-model")
    replay.click()
    tab.wait_for_selector(f"[data-status]:not([data-model='{old}'])")
    tab.wait_for_selector("[data-status='finished']", timeout=120_000)  # played to the end again
    assert status(tab)[1] >= 1


def test_the_stag_hunt_page_shows_words_not_ids(tab) -> None:
    open_game(tab, "stag_hunt")
    play(tab, 2)
    labels = tab.locator(".mdd-metric-label").all_inner_texts()
    captions = tab.locator("[data-chart]").all_inner_texts()
    sliders = tab.locator("[data-param] label").all_inner_texts()
    shown = labels + captions + sliders
    assert "share of hunters who went for the stag" in labels
    assert "hunters in the group" in sliders
    assert not [t for t in shown if "_" in t], shown


def test_the_llm_panel_is_in_sight_while_a_slow_round_plays(browser, dashboard_url) -> None:  # noqa: ANN001
    """A screen-sized window (1400 x 900): while an LLM round is still playing (an endpoint that
    answers after 20 s), the panel's live line is on screen without scrolling, above the
    game's charts."""
    from llm_servers.wire import WireServer

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    tab.base_url = dashboard_url
    try:
        with WireServer(latency_s=20.0) as slow:
            open_game(tab, "public_goods")
            move_slider(tab, "players: LLM", 1)
            control(tab, "LLM provider").click()
            tab.get_by_role("option", name="openai", exact=True).click()
            type_into(tab, "LLM model", f"m@{slow.url}/v1")
            reset(tab)
            tab.get_by_role("button", name="Step", exact=True).click()
            tab.wait_for_selector("[data-llm-progress='playing']")
            progress = tab.locator("[data-llm-progress='playing']").bounding_box()
            assert progress["y"] >= 0 and progress["y"] + progress["height"] <= 900
            first_chart = tab.locator("[data-view], [data-chart]").first.bounding_box()
            assert progress["y"] < first_chart["y"]
            screenshot(tab, "public_goods_llm_round_playing")
            reset(tab)  # leave no slow round behind
    finally:
        context.close()
