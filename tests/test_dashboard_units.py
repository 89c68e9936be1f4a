"""The dashboard without a browser: seeds, controls, the model SolaraViz drives, LLM records, assets.

Fast checks of the pieces the browser tests (``test_dashboard_browser.py``) rely on,
including the failure paths that are awkward to provoke through a page.
"""

from __future__ import annotations

import argparse
import math
import stat
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mesa.visualization.solara_viz import _build_model_init_kwargs

from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.llm import session
from mesa_dilemmas.scenarios.config import ConfigError
from mesa_dilemmas.viz.dashboard import assets, charts
from mesa_dilemmas.viz.dashboard import controls as c
from mesa_dilemmas.viz.dashboard.app import PAGES
from mesa_dilemmas.viz.dashboard.components import default_params, fmt, raw
from mesa_dilemmas.viz.dashboard.llm_panel import _matches, stop_reason
from mesa_dilemmas.viz.dashboard.llm_run import LLMChoice, LLMRun, Transcript
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage, coerce_seed
from mesa_dilemmas.viz.dashboard_cli import register, server_env

PAGE_BY_PATH = {p.path: p for p in PAGES}


@pytest.fixture
def isolated_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No active LLM run before or after; records and cache in tmp_path."""
    monkeypatch.setenv("MESA_DILEMMAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_RECORD_DIR", str(tmp_path / "records"))
    monkeypatch.delenv("MESA_DILEMMAS_DASHBOARD_LLM_CONFIG", raising=False)
    with session.use(None):  # the active run as it was is back afterwards
        yield tmp_path


def model_for(page: GamePage, **overrides: Any) -> DashboardModel:
    params = default_params({"page": page, **page.controls()})
    return DashboardModel(**{**params, **overrides})


# -- the seed box --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seed"),
    [
        ("42", 42),
        (" 7 ", 7),
        ("1_000", 1000),
        ("4.0", 4),
        (5, 5),
        (3.0, 3),
        (np.int64(9), 9),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_seed_box_text_becomes_an_int(text: Any, seed: int | None) -> None:
    assert coerce_seed(text) == seed


@pytest.mark.parametrize("text", ["abc", "-1", "2.5", "nan", "inf", 2.5])
def test_a_bad_seed_is_a_readable_error(text: Any) -> None:
    with pytest.raises(ValueError, match="seed"):
        coerce_seed(text)


def test_mesa_reset_with_the_seed_as_text_builds_the_run_that_seed_names() -> None:
    """Mesa 3.5.1's own Reset path: the seed arrives as the input's text, with a Scenario."""
    page = PAGE_BY_PATH["fishery"]
    first = model_for(page, rng="11")
    params = {**default_params({"page": page, **page.controls()}), "rng": "11"}
    kwargs = _build_model_init_kwargs(
        first, params, add_scenario_when_empty=True, require_model_accepts_scenario=True
    )
    assert kwargs["rng"] == "11" and "scenario" in kwargs  # what Mesa hands over
    again = type(first)(**kwargs)
    assert again.error is None and again.seed == first.seed == 11
    for m in (first, again):
        m.step()
        m.step()
    assert again.view.series["stock"] == first.view.series["stock"]


def test_a_blank_seed_draws_one_and_says_so() -> None:
    m = model_for(PAGE_BY_PATH["public_goods"], rng="")
    assert m.seed_drawn and isinstance(m.seed, int) and m.error is None


def test_a_bad_seed_leaves_a_stopped_model_with_the_error() -> None:
    m = model_for(PAGE_BY_PATH["fishery"], rng="abc")
    assert m.error is not None and "seed" in m.error and not m.running and m.game is None
    assert m.seed_invalid and not m.seed_drawn  # the status says so, not a stand-in seed
    m.step()  # Step on a failed model does nothing (and does not raise)
    assert m.round == 0 and m.time == 0


# -- controls ------------------------------------------------------------------


def test_slider_range_comes_from_the_parameter_constraints() -> None:
    s = c.slider(FisheryModel, "growth_rate", step=0.05)
    assert (s["type"], s["min"], s["max"], s["value"]) == ("SliderFloat", 0.0, 2.0, 0.6)
    n = c.slider(FisheryModel, "n_agents", high=40)
    assert (n["type"], n["min"], n["max"], n["value"]) == ("SliderInt", 2, 40, 10)


def test_a_page_can_narrow_a_range_but_never_widen_it() -> None:
    s = c.slider(FisheryModel, "catchability", low=0.0, high=5.0, step=0.005)
    assert s["min"] == pytest.approx(0.005) and s["max"] == 1.0  # gt=0 excludes 0; le=1 caps 5


def test_an_unbounded_parameter_needs_a_range() -> None:
    with pytest.raises(ValueError, match="capacity"):
        c.slider(FisheryModel, "capacity")
    assert c.slider(FisheryModel, "capacity", low=50, high=1000, step=10)["max"] == 1000


def test_selects_and_checkboxes_follow_the_annotations() -> None:
    assert c.select(FisheryModel, "population")["values"] == ["general", "typed"]
    box = c.checkbox(FisheryModel, "social_learning")
    assert box["type"] == "Checkbox" and box["label"] == "social learning" and box["value"] is True
    assert "imitate" in box["description"]  # the schema's description: the input's tooltip
    with pytest.raises(TypeError):
        c.select(FisheryModel, "n_agents")
    with pytest.raises(TypeError):
        c.slider(FisheryModel, "population")


@pytest.mark.parametrize(
    ("path", "cls"), [("fishery", FisheryModel), ("port_of_mars", PortOfMarsModel)]
)
def test_every_slider_end_and_default_is_a_value_the_game_accepts(path: str, cls: type) -> None:
    schema = params_model(cls)
    for name, spec in PAGE_BY_PATH[path].controls().items():
        if name not in schema.model_fields or not isinstance(spec, dict):
            continue
        values = [spec["value"]] + ([spec["min"], spec["max"]] if "min" in spec else [])
        for v in values:
            schema.model_validate({name: v})  # raises if the dashboard could send a bad value


# -- the model SolaraViz drives ------------------------------------------------------


@pytest.mark.parametrize("path", sorted(PAGE_BY_PATH))
def test_every_page_builds_steps_and_snapshots_its_game(path: str) -> None:
    m = model_for(PAGE_BY_PATH[path])
    assert m.error is None and m.running and m.view is not None
    first = m.token
    for r in (1, 2, 3):
        m.step()
        assert m.round == r and m.time == r  # Mesa's clock follows the rounds
    assert m.token != first and m.version == 4


def test_a_game_the_rules_refuse_is_an_error_not_an_exception() -> None:
    m = model_for(PAGE_BY_PATH["public_goods"], k=8.0)  # k must stay below n = 4
    assert m.error and "could not start the game" in m.error and "k:" in m.error
    assert not m.running and m.detail and "Traceback" in m.detail


@dataclass
class FakeGame:
    """A game whose rounds take ``delay`` seconds and raise in round ``fail_at``."""

    delay: float = 0.0
    fail_at: int = 0
    round: int = 0
    running: bool = True
    agents: list[Any] = field(default_factory=list)
    #: the LLM run active in the thread that played the last round
    seen_run: str | None = None

    def step(self) -> None:
        self.seen_run = session.active_path()
        time.sleep(self.delay)
        if self.round + 1 == self.fail_at:
            raise RuntimeError("the lake caught fire")
        self.round += 1


def fake_page(llm_agents: int = 0, **game: Any) -> GamePage:
    return GamePage(
        path="fake",
        title="fake",
        summary="",
        controls=dict,
        build=lambda params, seed, llm: FakeGame(**game),
        snapshot=lambda g: {"round": g.round},
        panels=lambda **_: None,
        llm_agents=lambda params: llm_agents,
    )


def test_a_round_that_raises_stops_the_model_with_the_error() -> None:
    m = DashboardModel(page=fake_page(fail_at=2), rng=1)
    m.step()
    assert m.round == 1 and m.error is None
    m.step()
    assert m.error and "round 2 failed" in m.error and "lake caught fire" in m.error
    assert not m.running
    m.step()
    assert m.round == 1 and m.time == 2  # nothing more is played


def test_a_tick_from_a_play_loop_that_was_paused_is_refused() -> None:
    """Mesa's Play loop is a threaded Solara task; ❚❚ starts a new run of it.  A tick the old
    run sends after that (it was asleep when the button was pressed) must not play a round."""
    from solara.tasks import TaskThreaded

    m = DashboardModel(page=fake_page(), rng=1)
    m.shown(m.version)  # the page shows the start
    asleep, wake, replaced = threading.Event(), threading.Event(), threading.Event()

    def playing() -> None:
        m.step()  # a tick while this run is current plays a round
        asleep.set()
        wake.wait(10)
        m.step()  # the tick after ❚❚: refused

    loop = TaskThreaded(playing, key="play-loop")
    loop()
    assert asleep.wait(10)
    old = loop._current_thread
    loop.function = replaced.set  # ❚❚: Mesa's loop task runs again (and returns at once)
    loop()
    assert replaced.wait(10)
    wake.set()
    old.join(10)
    assert m.round == 1 and m.time == 1 and m.refused_ticks == 1
    m.step()  # a Step pressed by hand (not from a task thread) still plays
    assert m.round == 2 and m.refused_ticks == 1


def test_a_play_tick_waits_until_the_page_has_shown_the_previous_round() -> None:
    """Play never outruns the page: the next tick plays only once ``shown`` says the page
    has rendered the last round (else Solara's render loop guard gives up on a busy page)."""
    from solara.tasks import TaskThreaded

    m = DashboardModel(page=fake_page(), rng=1)
    m.shown(m.version)

    def playing() -> None:
        m.step()
        m.step()  # waits for the page

    loop = TaskThreaded(playing, key="play-loop")
    loop()
    deadline = time.monotonic() + 10
    while not m._shown._waiters:  # the second tick is waiting (a condition, not a sleep)
        assert time.monotonic() < deadline, "the second tick did not wait for the page"
        time.sleep(0.01)
    assert m.round == 1
    m.shown(m.version)  # the page rendered round 1
    loop._current_thread.join(10)
    assert m.round == 2 and m.refused_ticks == 0


UNREACHABLE = {"llm_provider": "openai", "llm_model": "nobody@http://127.0.0.1:9/v1"}


def test_llm_rounds_run_in_the_background_and_steps_meanwhile_are_ignored(
    isolated_llm: Path,
) -> None:
    m = DashboardModel(page=fake_page(llm_agents=1, delay=2.0), rng=1, **UNREACHABLE)
    assert m.error is None and m.llm is not None
    start = time.monotonic()
    m.step()
    assert time.monotonic() - start < 1.0 and m.busy  # Step returned long before the round ends
    m.step()  # a second Step (or a Play tick) during the round is ignored...
    assert m.time == 1  # ...and Mesa's clock did not advance for it
    assert m.wait(10) and not m.busy
    assert m.round == 1 and m.view == {"round": 1} and m.running
    # the round's thread played in the model's own run
    assert m.game.seen_run == str(m.llm.session_file)
    assert m.game.seen_run.startswith(str(isolated_llm / "records"))


def test_an_llm_round_that_raises_is_reported_after_the_worker_ends(isolated_llm: Path) -> None:
    m = DashboardModel(page=fake_page(llm_agents=1, fail_at=1), rng=1, **UNREACHABLE)
    m.step()
    assert m.wait(10)
    assert m.error and "lake caught fire" in m.error and not m.running


@pytest.mark.parametrize(
    ("path", "llm_params"),
    [
        ("fishery", {"n_agents": 4, "llm_agents": 1}),
        ("public_goods", {"n_llm": 1}),
        ("port_of_mars", {"llm_players": 1}),
    ],
)
def test_llm_pages_play_on_when_every_call_fails(
    isolated_llm: Path, monkeypatch: pytest.MonkeyPatch, path: str, llm_params: dict[str, Any]
) -> None:
    """A provider whose every call fails (HTTP 500) stops the round with its reason on the page:
    no rule answer stands in for the model (the game stays at round 0, the app lives on), and
    the reason says how to keep trying (``on_provider_error = "wait"``)."""
    from llm_servers.wire import Faults, WireServer

    config = isolated_llm / "llm.toml"
    config.write_text("[llm]\nmax_retries = 0\nanswer_retries = 0\ntimeout_s = 5\n")
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_LLM_CONFIG", str(config))
    with WireServer(Faults(server_error=1.0)) as server:
        failing = {"llm_provider": "openai", "llm_model": f"nobody@{server.url}/v1"}
        m = model_for(PAGE_BY_PATH[path], **llm_params, **failing)
        assert m.error is None and m.llm is not None and m.llm_agent_ids
        m.step()
        assert m.wait(60) and m.error and "round 1 failed" in m.error
    assert 'on_provider_error = "wait"' in m.error and m.round == 0
    assert "gave up after 1 attempts" in m.error  # the provider's failure, not a rule's answer
    assert m.llm.summary()["fallbacks"] == 0
    m.close()


def test_an_unreachable_provider_stops_the_game_with_its_reason(
    isolated_llm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = isolated_llm / "llm.toml"
    config.write_text("[llm]\nmax_retries = 0\nanswer_retries = 0\ntimeout_s = 5\n")
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_LLM_CONFIG", str(config))
    m = model_for(PAGE_BY_PATH["fishery"], n_agents=4, llm_agents=1, **UNREACHABLE)
    m.step()
    assert m.wait(60) and m.error and "endpoint unreachable" in m.error and not m.running
    what, fix = stop_reason(m)  # the page names the reason and the fix
    assert what == "the provider's endpoint cannot be reached" and "server is running" in fix
    m.close()


def test_a_missing_api_key_is_an_error_on_the_page(
    isolated_llm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    m = DashboardModel(page=fake_page(llm_agents=1), rng=1, llm_provider="anthropic")
    assert m.error and "ANTHROPIC_API_KEY" in m.error and m.game is None


def test_llm_choice_makes_the_spec_and_layers_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert LLMChoice().spec == "local"
    assert LLMChoice(provider="openai", model="gpt-4o").spec == "openai:gpt-4o"
    config = tmp_path / "llm.toml"
    config.write_text("[llm]\ntemperature = 0.1\nmax_tokens = 999\n")
    monkeypatch.setenv("MESA_DILEMMAS_DASHBOARD_LLM_CONFIG", str(config))
    settings = LLMChoice(answer_mode="tags", max_tokens=64).settings()
    assert (settings.temperature, settings.max_tokens, settings.answer_mode) == (0.1, 64, "tags")


def test_the_llm_record_gives_the_latest_prompt_and_answer_per_agent(isolated_llm: Path) -> None:
    from mesa_dilemmas.llm.request import CallContext, ChatResponse

    run = LLMRun.start(LLMChoice(provider="openai", model="m@http://127.0.0.1:9/v1"))
    rec = run.recorder

    def call(agent: int | None, kind: str, answer: str | None, error: str | None = None) -> None:
        ctx = CallContext(kind=kind, agent_id=agent, round=1)
        request = {
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": f"ask {kind}"},
            ]
        }
        response = None if answer is None else ChatResponse(text=answer, tokens_in=10, tokens_out=2)
        rec.record_call(
            ctx,
            key=f"{agent}{kind}",
            label="openai:m",
            source="provider",
            request=request,
            response=response,
            latency_s=0.1,
            cost_usd=0.5,
            error=error,
        )
        rec.record_decision(
            ctx,
            retries=0,
            parse_failures=0,
            fell_back=error is not None,
            call_errors=int(error is not None),
            error=error,
            value="C",
        )

    call(3, "g.first", "C")
    call(3, "g.second", '{"answer": "D"}')
    call(None, "g.meeting", None, error="context overflow")
    call(5, "g.first", "C")
    transcripts = run.transcripts()
    assert [(t.agent, t.kind) for t in transcripts] == [
        (3, "g.second"),
        (5, "g.first"),
        (None, "g.meeting"),
    ]
    assert transcripts[0].prompt == [("system", "sys"), ("user", "ask g.second")]
    assert transcripts[0].answer == '{"answer": "D"}' and transcripts[2].error == "context overflow"
    summary = run.summary()
    assert summary["calls"] == 4 and summary["tokens_in"] == 30 and summary["call_errors"] == 1
    assert [e["kind"] for e in run.errors()] == ["g.meeting"]
    run.close()


def test_the_transcript_filter() -> None:
    t = Transcript(
        3,
        "fishery.effort",
        2,
        0,
        "provider",
        "local:x",
        [("user", "the lake holds 40")],
        "0.4",
        None,
        1,
        1,
    )
    assert _matches(t, "all agents", "", False, "villager 3")
    assert _matches(t, "villager 3", "LAKE", False, "villager 3")
    assert not _matches(t, "villager 4", "", False, "villager 3")
    assert not _matches(t, "all agents", "", True, "villager 3")  # no error
    assert not _matches(t, "all agents", "sea", False, "villager 3")


# -- formatting and charts ------------------------------------------------------


def test_numbers_for_people_and_for_tests() -> None:
    assert (fmt(231.4321), fmt(0.12345), fmt(12), fmt(math.nan), fmt(True)) == (
        "231",
        "0.123",
        "12",
        "n/a",
        "yes",
    )
    assert (raw(231.4321), raw(math.nan), raw(None), raw(False)) == ("231.4321", "nan", "nan", "0")


# -- Vega-Lite charts and agent views -----------------------------------------------


@pytest.fixture(scope="module")
def vega_lite() -> Any:
    """A validator of Vega-Lite specs (the schema Altair ships)."""
    import jsonschema
    from altair.vegalite.v6.schema import load_schema

    return jsonschema.Draft7Validator(load_schema())


def assert_valid(validator: Any, spec: dict[str, Any]) -> None:
    errors = [e.message[:200] for e in validator.iter_errors(spec)]
    assert not errors, errors


def test_every_chart_kind_is_a_valid_vega_lite_spec_with_and_without_data(vega_lite: Any) -> None:
    from mesa_dilemmas.viz.dashboard import vega

    specs = [
        vega.line("l", [charts.Series("a", [1.0, 2.0, math.nan]), charts.Series("b", [3.0])],
                  [charts.Ref("r", 2.0)], ylim=(0, 5)),
        vega.line("l", []),
        vega.bars("b", ["x", "y"], {"one": [1, 2], "two": [3, 4]}),
        vega.bars("b", ["x", "y"], {"one": [1, 2]}, colors=["#111111", "#222222"]),
        vega.bars("b", [], {}),
        vega.stack("s", [charts.Series("a", [0.5, 0.6]), charts.Series("b", [0.5, 0.4])]),
        vega.stack("s", []),
        vega.actions("a", np.array([[True, False], [False, False]]), ["p0", "p1"]),
        vega.actions("a", np.zeros((0, 2), dtype=bool), ["p0", "p1"]),
    ]  # fmt: skip
    for spec in specs:
        assert_valid(vega_lite, spec)
    line = specs[0]
    assert [r["y"] for r in line["data"]["values"] if r["series"] == "a"] == [
        1.0,
        2.0,
        None,
    ]  # a gap
    assert line["layer"][2]["encoding"]["text"] == {
        "field": "label"
    }  # the reference line is labelled


@pytest.mark.parametrize("path", ["fishery", "port_of_mars", "public_goods", "common_pool"])
def test_agent_views_show_every_agent_of_the_game(path: str, vega_lite: Any) -> None:
    from mesa_dilemmas.dilemmas.binary import agent_view as binary_view
    from mesa_dilemmas.dilemmas.fishery import agent_view as av
    from mesa_dilemmas.dilemmas.port_of_mars import agent_view as pom_view

    draw = {"fishery": av.fishery_chart, "port_of_mars": pom_view.port_of_mars_chart}.get(
        path, binary_view.binary_chart
    )
    m = model_for(PAGE_BY_PATH[path])
    for _ in range(3):
        m.step()
    spec, agents, caption = draw(m.game)
    assert_valid(vega_lite, spec)
    assert agents == len(list(m.game.agents))
    if path == "fishery":
        rows = av.fishery_villagers(m.game)
        punished = sum(r["state"] == "punished this round" for r in rows)
        assert punished == sum(v.punished > 0 for v in m.game.villagers)
        # who punished whom: one arrow per sanction, the same count as the game's
        sanctions = int(m.game.punishments)
        assert len(m.game.sanctions) == sanctions and f'data-count="{sanctions}"' in caption
        assert punished == len({b for _, b in m.game.sanctions}) and "shared norm" in caption
    elif path == "port_of_mars":
        seats, trades = pom_view.port_of_mars_seats(m.game)
        assert {s["role"] for s in seats} == set(m.game.roles)
        assert len(trades) == sum(o.status == "accepted" for o in m.game.round_offers)
    else:
        rows = binary_view.binary_players(m.game)
        cooperated = int(m.game.actions[-1].sum())
        assert sum(r["last action"] == "C" for r in rows) == cooperated
        assert f"{cooperated} of {agents} cooperated" in caption
        assert ("stock" in caption) == (path == "common_pool")


@pytest.mark.parametrize("path", ["fishery", "common_pool", "port_of_mars"])
def test_the_runs_data_exports_as_csv_and_parquet(path: str) -> None:
    import io

    import pandas as pd

    from mesa_dilemmas.viz.dashboard.components import export_bytes, run_table

    m = model_for(PAGE_BY_PATH[path])
    for _ in range(3):
        m.step()
    table = run_table(m)
    collected = m.game.datacollector.get_model_vars_dataframe()
    assert table is not None and len(table) == len(collected) and (table["seed"] == m.seed).all()
    csv = pd.read_csv(io.BytesIO(export_bytes(m, "csv")), index_col=0)
    parquet = pd.read_parquet(io.BytesIO(export_bytes(m, "parquet")))
    for back in (csv, parquet):
        assert list(back.columns) == list(table.columns) and len(back) == len(table)
    numeric = table.select_dtypes("number").columns
    np.testing.assert_allclose(
        csv[numeric].to_numpy(float), table[numeric].to_numpy(float), equal_nan=True
    )


@pytest.mark.parametrize("path", ["fishery", "public_goods", "common_pool", "port_of_mars"])
def test_the_exported_rows_are_numbered_by_the_round_they_record(path: str) -> None:
    """Issue 28: the binary games collect after each round only, so their rows are rounds
    1..n (they were numbered 0..n-1); the fishery collects round 0 too (rows 0..n)."""
    import io

    import pandas as pd

    from mesa_dilemmas.viz.dashboard.components import export_bytes

    m = model_for(PAGE_BY_PATH[path])
    for _ in range(4):
        m.step()
    csv = pd.read_csv(io.BytesIO(export_bytes(m, "csv")), index_col=0)
    assert csv.index[-1] == m.round == 4
    assert list(csv.index) == list(range(csv.index[0], 5)) and csv.index[0] in (0, 1)


# -- front-end assets and the command line -------------------------------------------


def test_the_assets_named_are_the_ones_solara_loads() -> None:
    needed = assets.required_packages()
    assert any("solara-vuetify" in p for p in needed)
    assert any(p.startswith("requirejs@") for p in needed)
    assert any(p.startswith("font-awesome@") for p in needed)
    assert all("@" in p.lstrip("@") for p in needed)  # exact versions
    # Mesa's component grid and Altair charts: the versions Solara's own widgets ask for
    assert any(p.startswith("@widgetti/vue-grid-layout@") for p in needed)
    assert {"vega@5", "vega-lite@5", "vega-embed@6"} <= set(needed)


def test_the_front_end_is_vue_2_where_mesa_lays_out_its_components() -> None:
    """Mesa's SolaraViz component grid is a Vue 2 component: ipyvue 3 leaves it blank."""
    assert not assets.vue3()
    assert "solara-vuetify-app@" in assets.required_packages()[0]


def test_assets_are_unpacked_from_npm_tarballs(tmp_path: Path) -> None:
    """``npm pack`` replaced by a script that writes a tarball the way npm does (package/...)."""
    fake = tmp_path / "npm"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys, tarfile, io, pathlib\n"
        "spec, dest = sys.argv[2], pathlib.Path(sys.argv[sys.argv.index('--pack-destination') + 1])\n"
        "name = spec.replace('@', '').replace('/', '-') + '.tgz'\n"
        "with tarfile.open(dest / name, 'w:gz') as tar:\n"
        "    data = b'/* ' + spec.encode() + b' */'\n"
        "    info = tarfile.TarInfo('package/dist/file.js'); info.size = len(data)\n"
        "    tar.addfile(info, io.BytesIO(data))\n"
        "print(name)\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    cache = tmp_path / "cdn"
    assert assets.missing(cache) == assets.required_packages()
    installed = assets.install(cache, npm=str(fake), quiet=True)
    assert installed == assets.required_packages() and assets.missing(cache) == []
    for spec in installed:
        assert (cache / spec / "dist" / "file.js").read_text() == f"/* {spec} */"
    assert assets.install(cache, npm=str(fake)) == []  # nothing left to do


def test_dashboard_subcommand_and_its_environment(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["dashboard"])
    assert (args.port, args.host, args.func.__name__) == (8765, "127.0.0.1", "cmd_dashboard")
    good = tmp_path / "good.toml"
    good.write_text("[llm]\ntemperature = 0.2\n")
    env = server_env(
        parser.parse_args(["dashboard", "--llm-config", str(good), "--record-dir", "rec"])
    )
    assert env["MESA_DILEMMAS_DASHBOARD_LLM_CONFIG"] == str(good.resolve())
    assert env["MESA_DILEMMAS_DASHBOARD_RECORD_DIR"] == str(Path("rec").resolve())
    assert "SOLARA_TELEMETRY_MIXPANEL_ENABLE" in env  # off unless the user set it
    bad = tmp_path / "bad.toml"
    bad.write_text("[llm]\ntemprature = 0.2\n")
    with pytest.raises(ConfigError, match="temprature"):
        server_env(parser.parse_args(["dashboard", "--llm-config", str(bad)]))


def test_solaras_cookie_warning_is_silenced_on_loopback_only() -> None:
    import subprocess

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    warn = "import warnings; warnings.warn('Cookies with samesite=none require https, but ...')"
    for host, silent in (("127.0.0.1", True), ("0.0.0.0", False)):
        env = server_env(parser.parse_args(["dashboard", "--host", host]))
        out = subprocess.run([sys.executable, "-c", warn], env=env, capture_output=True, text=True)
        assert ("samesite" not in out.stderr) == silent, (host, out.stderr)


def test_the_subcommand_is_on_the_main_command_line_once_registered() -> None:
    from mesa_dilemmas import cli

    assert cli.SHARED_COMMANDS["dashboard"][0] == "mesa_dilemmas.viz.dashboard_cli"
    args = cli.build_parser("dashboard").parse_args(["dashboard", "--port", "9000"])
    assert (args.port, args.host, args.func.__name__) == (9000, "127.0.0.1", "cmd_dashboard")
