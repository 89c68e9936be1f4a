"""Issue 28, items 6, 7 and 11 without a browser: what the pages' words and chart specs say.

Labels that stay inside their charts (legend columns, where a reference line's label goes,
no clamped scale), the file names charts download under, the collapse banner's cause, the
meeting heading when a Solar Flare cancelled the meeting, policies in rounds, the Play
button once the game is over, the Stag Hunt page in words, and the LLM panel's place.
(The browser checks of the same are in ``test_dashboard_labels_browser.py``.)
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.charts import Ref, Series
from mesa_dilemmas.viz.dashboard.components import default_params
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage


def page_model(page: GamePage, seed: int = 42, **changes: Any) -> DashboardModel:
    params = default_params(page.controls())
    params.pop("rng", None)
    return DashboardModel(page=page, rng=seed, **{**params, **changes})


# -- item 6: labels inside their charts ----------------------------------------------------


def test_a_legend_of_long_entries_goes_one_a_row_and_short_ones_share_a_row() -> None:
    common_pool = [
        "mean payoff",
        "most possible (all defect: stock ÷ n)",
        "least (all cooperate: ÷ 2n)",
    ]
    assert vega.legend_columns(common_pool) == 1
    assert vega.legend_columns(["setting A", "setting B"]) == 2
    assert vega.legend_columns(["a", "b", "c", "d", "e"]) == 3  # never more than 3
    # the estimate never puts more on a row than the narrowest chart holds
    for names in (common_pool, ["mean payoff this round", "average so far"]):
        columns = vega.legend_columns(names)
        widest = max(len(n) for n in names) * vega.CHAR_PX + 30
        assert columns * widest <= vega.NARROWEST_PX


def _ref_places(spec: dict[str, Any]) -> dict[str, str]:
    rows = next(layer["data"]["values"] for layer in spec["layer"] if layer.get("data"))
    return {r["label"]: r["place"] for r in rows}


def test_a_reference_line_at_the_top_of_the_range_is_labelled_below_it() -> None:
    """ "best possible 2.00" sat above the plot's top edge, where the zoom's clip cut it off."""
    spec = vega.line(
        "Mean payoff",
        [Series("mean payoff", [1.5, 1.25, 1.0, 1.25])],
        [Ref("worst possible 1.00", 1.0), Ref("best possible 2.00", 2.0)],
    )
    assert _ref_places(spec) == {"worst possible 1.00": "above", "best possible 2.00": "below"}
    with_ylim = vega.line("Port health", [Series("h", [100, 90])], [Ref("t", 100)], ylim=(0, 102))
    assert _ref_places(with_ylim) == {"t": "below"}
    # every label is drawn on a halo of the background (a data line through it is covered)
    texts = [layer for layer in spec["layer"] if layer["mark"].get("type") == "text"]
    halos = [t for t in texts if t["mark"].get("stroke") == vega.HALO]
    assert len(halos) == len(texts) // 2 and all(t["mark"]["strokeWidth"] >= 5 for t in halos)
    order = [t["mark"].get("stroke") == vega.HALO for t in texts]
    assert order == [True, False, True, False]  # each halo right under its label


def test_a_chart_with_a_fixed_range_does_not_clamp() -> None:
    """Clamped, a zoomed-in stock chart drew the collapse threshold (and its label) along its
    lower edge; unclamped, a line outside the view is clipped away."""
    spec = vega.line("Lake stock", [Series("stock", [300, 250])], [Ref("c", 15)], ylim=(0, 315))
    scale = spec["layer"][0]["encoding"]["y"]["scale"]
    assert scale == {"domain": [0, 315]} and "clamp" not in scale


def test_ring_views_keep_their_subtitle_within_the_view() -> None:
    from mesa_dilemmas.dilemmas.fishery.agent_view import fishery_chart
    from mesa_dilemmas.dilemmas.fishery.page import PAGE
    from mesa_dilemmas.viz.dashboard.agent_views import SUBTITLE_CHARS, wrap

    spec, _, _ = fishery_chart(page_model(PAGE).game)
    lines = spec["title"]["subtitle"]
    assert len(lines) > 1 and all(len(line) <= SUBTITLE_CHARS for line in lines)
    assert spec["width"] + 20 < 426  # half of a 900 px page (the compare page's columns)
    assert spec["config"]["legend"]["orient"] == "bottom"
    assert wrap("a · b", 3) == ["a", "b"] and wrap("one two three", 7) == ["one two", "three"]


def test_charts_download_under_the_game_the_seed_and_their_name() -> None:
    from mesa_dilemmas.dilemmas.fishery.page import COMPARE, PAGE
    from mesa_dilemmas.viz.dashboard.compare import CompareModel, setting_specs
    from mesa_dilemmas.viz.dashboard.components import chart_filename
    from mesa_dilemmas.viz.dashboard.vega_widget import with_token

    model = page_model(PAGE, seed=7)
    assert chart_filename(model, "stock") == "fishery_seed7_stock"
    assert chart_filename(model, "fishery-lake") == "fishery_seed7_fishery-lake"
    a = default_params(setting_specs(PAGE))
    compare = CompareModel(compare=COMPARE, a=a, b=a, rng=3)
    assert chart_filename(compare, "stock") == "compare_fishery_seed3_stock"
    assert (
        chart_filename(compare, "fishery-lake", "B")
        == "compare_fishery_seed3_fishery-lake_settingB"
    )
    assert chart_filename(None, "stock") == "stock"  # a chart on a user's own page
    spec = with_token({"mark": "bar"}, "t:1", "fishery_seed7_stock")
    assert spec["usermeta"] == {
        "token": "t:1",
        "embedOptions": {"downloadFileName": "fishery_seed7_stock"},
    }


# -- item 7: words that say what happened ---------------------------------------------------


def test_the_collapse_banner_says_whether_the_stock_fell_or_a_villager_starved() -> None:
    from mesa_dilemmas.dilemmas.fishery.page import PAGE

    fell = page_model(PAGE, capacity=50.0, growth_rate=0.0)
    starved = page_model(PAGE, penalty=30.0, punish_cost=10.0)  # sanctions ruin a villager
    for m in (fell, starved):
        while m.game_running:
            m.step()
        assert m.view.collapsed
    assert fell.view.collapse_cause.startswith("the stock fell to ")
    from mesa_dilemmas.dilemmas.base import params_model
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

    threshold = f"{params_model(FisheryModel).model_fields['collapse_threshold'].default:g}"
    assert f"at or below the collapse threshold {threshold}" in fell.view.collapse_cause
    assert "starved" not in fell.view.collapse_cause
    assert re.match(r"\d+ villagers? starved \(the stock, ", starved.view.collapse_cause)
    assert f"stayed above the collapse threshold {threshold}" in starved.view.collapse_cause
    for m in (fell, starved):
        assert "or a villager" not in m.view.collapse_cause
    running = page_model(PAGE)
    running.step()
    assert running.view.collapse_cause == ""


def test_the_meeting_heading_says_a_solar_flare_cancelled_the_meeting() -> None:
    from mesa_dilemmas.dilemmas.port_of_mars.page import PAGE, meeting_heading

    m = page_model(PAGE, seed=0)  # seed 0: a Solar Flare in round 7
    headings = {}
    while m.game_running and m.round < 7:
        m.step()
        headings[m.round] = meeting_heading(m.view)
    assert m.view.meeting_absent_kind == "solar_flare"
    assert headings[7] == "Planning meeting of round 7: cancelled by a Solar Flare"
    assert "cancelled" in m.view.meeting_absent
    assert headings[6] == "Planning meeting of round 6 (written by rule_narrator)"
    assert all("written by" not in h for r, h in headings.items() if r == 7)
    switched_off = page_model(PAGE, meeting=False)
    switched_off.step()
    assert meeting_heading(switched_off.view) == "Planning meeting of round 1: switched off"


def test_the_fishery_page_counts_its_policies_in_rounds() -> None:
    from mesa_dilemmas.dilemmas.fishery.agent_view import fishery_chart, policy_words
    from mesa_dilemmas.dilemmas.fishery.norms import cap_sentence
    from mesa_dilemmas.dilemmas.fishery.page import PAGE

    assert policy_words(cap_sentence(4.06)) == (
        "Each villager should harvest at most 4.06 fish per round."
    )
    written = "Catch no more than 3 fish per day, friends."  # an LLM's words: as written
    assert policy_words(written) == written
    m = page_model(PAGE)
    for _ in range(3):
        m.step()
    shown = [m.view.shared_policy, *(p for _, p in m.view.norm_history)]
    assert all("per round" in p and "per day" not in p for p in shown)
    assert "per day" not in fishery_chart(m.game)[2]  # the lake's caption


def test_the_play_button_offers_a_replay_once_the_game_is_over() -> None:
    """After the last round the Play button is "↺ replay" (Reset and play), not Mesa's disabled
    ❚❚; the status line says so."""
    import ipyvuetify as v
    import solara

    from mesa_dilemmas.dilemmas.public_goods.page import PAGE
    from mesa_dilemmas.viz.dashboard.components import REPLAY, RunControls

    m = page_model(PAGE, rounds=2)
    model = solara.Reactive(m)
    params = solara.Reactive({"page": PAGE, **default_params(PAGE.controls())})
    _, rc = solara.render(RunControls(model, params), handle_error=False)

    def buttons() -> dict[str, Any]:
        return {b.children[0]: b for b in rc.find(v.Btn).widgets if b.children}

    assert list(buttons()) == ["Reset", "▶", "Step"]
    for _ in range(2):
        buttons()["Step"].click()
    assert not m.game_running and m.error is None
    shown = buttons()
    assert REPLAY in shown and not shown[REPLAY].disabled and "❚❚" not in shown
    assert shown["Step"].disabled
    shown[REPLAY].click()  # a new game of the same settings, playing
    assert model.value is not m
    model.value.wait(10)
    rc.close()


def test_the_stag_hunt_page_says_its_numbers_and_parameters_in_words() -> None:
    from mesa_dilemmas.viz.dashboard import app
    from mesa_dilemmas.viz.dashboard.components import latest_caption

    page = next(p for p in app.PAGES if p.path == "stag_hunt")
    labels = {k: v["label"] for k, v in page.controls().items()}
    assert labels["n_hunters"] == "hunters in the group"
    assert labels["threshold"] == "hunters needed to catch the stag"
    assert all("_" not in label for label in labels.values())
    m = page_model(page)
    m.step()
    assert m.view.words["stag_share"] == "share of hunters who went for the stag"
    assert all("_" not in w for w in m.view.words.values())
    spec = vega.line("x", [Series(m.view.words["caught"], m.view.series["caught"])])
    assert latest_caption(spec).startswith("round 1: stags caught so far ")


@pytest.mark.parametrize("description", [None, "", "x" * 80])
def test_a_control_without_a_short_description_is_its_name_in_words(description: Any) -> None:
    from mesa_dilemmas.viz.dashboard.generic import control_label

    assert control_label("n_hunters", description) == "n hunters"


# -- item 11: the LLM panel where a running round is seen -----------------------------------


def test_the_llm_panel_comes_right_after_the_status_line() -> None:
    import inspect

    from mesa_dilemmas.viz.dashboard import screen

    source = inspect.getsource(screen.ModelView)
    status, panel, panels = (
        source.index("RoundStatus("),
        source.index("LLMPanel("),
        source.index("model.page.panels("),
    )
    assert status < panel < panels
