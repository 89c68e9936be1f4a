"""Port of Mars LLM scenarios end to end through the CLI, as a user runs them (reduced sizes).

* ``port_of_mars/llm_svo`` on the embedded SmolLM2 model (llama.cpp, for real): one round, one
  LLM seat, the LLM meeting writer; then the recorded run replays with ``replay:local`` at zero
  provider calls and an identical ``runs.parquet``.
* Every bundled LLM scenario at one round through the loopback OpenAI-wire server (a scripted
  responder, not a model): the scenario, its population and its prompts run end to end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from cli_runner import cli
from llm_fixtures import needs_local
from llm_servers.wire import WireServer

from mesa_dilemmas.scenarios.config import bundled_scenarios

LLM_SCENARIOS = sorted(n for n in bundled_scenarios() if n.startswith("port_of_mars/llm_"))
TINY = ["--no-progress", "--set", "replications=1", "--set", "params.n_rounds=1"]
#: the shortest meeting and notes the game allows: the embedded model writes to its limit, and
#: every note it writes is a generation of up to summary_chars characters
SHORT_MEETING = ["--set", "params.meeting_chars=200", "--set", "params.summary_chars=40"]


def test_the_paper_experiments_exist_as_llm_scenarios():
    assert {
        "port_of_mars/llm_svo",
        "port_of_mars/llm_svo_wide",
        "port_of_mars/llm_cultural_groups",
        "port_of_mars/llm_traits",
        "port_of_mars/llm_communication",
        "port_of_mars/llm_leadership",
    } <= set(LLM_SCENARIOS)


@pytest.mark.parametrize("name", LLM_SCENARIOS)
def test_llm_scenario_runs_through_the_loopback_server(name, tmp_path):
    with WireServer() as server:
        out = tmp_path / "run"
        grid = []
        if name.endswith("leadership"):  # one cell of the 15
            grid = ["--set", "grid.leadership=['announce']", "--set", "grid.leader_seat=[0]"]
        result = cli(
            "run",
            name,
            "--out",
            str(out),
            *TINY,
            *grid,
            "--set",
            "params.llm_players=2",
            "--set",
            f"params.llm=openai:test-model@{server.url}/v1",
            cache=tmp_path / "cache",
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert server.state.requests > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm"]["provider_calls"] > 0
    decisions = pd.read_parquet(out / "llm_decisions.parquet")
    kinds = set(decisions["kind"])
    assert {"port_of_mars.health_plan", "port_of_mars.invest"} <= kinds
    if "communication" not in name:
        assert {"port_of_mars.meeting", "port_of_mars.meeting_summaries"} <= kinds
    runs = pd.read_parquet(out / "runs.parquet")
    assert "meeting_fallbacks" in runs.columns and "leader_label" in runs.columns


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pom_local")
    cache, out = root / "cache", root / "run"
    result = cli(
        "run",
        "port_of_mars/llm_svo",
        "--out",
        str(out),
        *TINY,
        *SHORT_MEETING,
        "--set",
        "params.llm_players=1",
        cache=cache,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out, cache


@needs_local
@pytest.mark.slow
def test_llm_svo_runs_on_the_embedded_model(local_run):
    out, _ = local_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm"]["provider_calls"] > 0 and summary["llm"]["tokens_in"] > 0
    decisions = pd.read_parquet(out / "llm_decisions.parquet")
    kinds = set(decisions["kind"])
    assert {"port_of_mars.meeting", "port_of_mars.health_plan", "port_of_mars.invest"} <= kinds
    calls = pd.read_parquet(out / "llm_calls.parquet")
    assert calls["error"].isna().all()  # no context overflow, no grammar failure
    assert (
        summary["overall"]["meetings_held"]["mean"]
        + summary["overall"]["meeting_fallbacks"]["mean"]
        >= 1
    )  # the meeting was held, or its fall-back is reported


@needs_local
@pytest.mark.slow
def test_recorded_llm_svo_replays_with_zero_calls(local_run, tmp_path):
    out, cache = local_run
    again = tmp_path / "replay"
    result = cli(
        "run",
        "port_of_mars/llm_svo",
        "--out",
        str(again),
        *TINY,
        *SHORT_MEETING,
        "--set",
        "params.llm_players=1",
        "--set",
        "params.llm=replay:local",
        cache=cache,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((again / "summary.json").read_text())["llm"]["provider_calls"] == 0
    a, b = (
        pd.read_parquet(d / "runs.parquet").drop(columns=["llm"], errors="ignore")
        for d in (out, again)
    )
    # the seats' policy names differ ("llm:local:..." vs "llm:replay:local:..."); nothing else
    for frame in (a, b):
        frame["players_json"] = [
            json.dumps([{k: v for k, v in p.items() if k != "policy"} for p in json.loads(x)])
            for x in frame["players_json"]
        ]
    pd.testing.assert_frame_equal(a, b)
