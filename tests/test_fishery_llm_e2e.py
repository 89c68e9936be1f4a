"""LLM societies end to end on the embedded local model, as a user runs them (reduced sizes).

Runs the bundled ``fishery/llm_societies`` and ``fishery/llm_ablation`` scenarios through the
CLI with the real SmolLM2-135M model (llama.cpp), then checks the records, the per-round call
budget of the paper (at most 4 decisions per villager per round), the analysis and figures, and
that a recorded run replays with zero provider calls and an identical ``runs.parquet``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from cli_runner import cli
from llm_fixtures import needs_local

pytestmark = [needs_local, pytest.mark.slow]

SMALL = [
    "--no-progress",
    "--set",
    "replications=1",
    "--set",
    "max_steps=2",
    "--set",
    "params.n_agents=3",
    "--set",
    "params.llm_agents=3",
]


@pytest.fixture(scope="module")
def society(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("society")
    cache = root / "cache"
    out = root / "run"
    result = cli(
        "run",
        "fishery/llm_societies",
        "--out",
        str(out),
        *SMALL,
        "--set",
        "grid.growth_rate=[0.6]",
        "--set",
        "grid.altruism_ratio=[1.0]",
        "--figures",
        cache=cache,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out, cache


def test_society_runs_on_the_local_model_and_reports_its_cost(society):
    out, _ = society
    summary = json.loads((out / "summary.json").read_text())
    llm = summary["llm"]
    assert llm["provider_calls"] > 0 and llm["tokens_in"] > 0 and llm["tokens_out"] > 0
    assert "wall_time_s" in summary and llm["by_model"]
    decisions = pd.read_parquet(out / "llm_decisions.parquet")
    per_agent_round = decisions.groupby(["agent_id", "round"]).size()
    assert per_agent_round.max() <= 4  # effort, punish, norms, vote
    assert set(decisions["kind"]) >= {"fishery.effort", "fishery.punish", "fishery.norms"}
    per_round = summary["llm_per_round"]
    assert per_round["decisions_per_villager_round"] <= 4
    assert per_round["tokens_per_round"] > 0
    runs = pd.read_parquet(out / "runs.parquet")
    assert runs.loc[0, "steps_run"] == 2 and 0 <= runs.loc[0, "norm_similarity"] <= 1
    steps = pd.read_parquet(out / "steps.parquet")
    assert steps["shared_policy"].iloc[0] == "No shared policy has been agreed yet."
    for png in ("llm_survival.png", "llm_efficiency.png", "llm_norm_structure.png"):
        assert (out / png).stat().st_size > 1000


def test_recorded_society_replays_with_zero_calls_and_identical_runs(society, tmp_path):
    out, cache = society
    again = tmp_path / "replay"
    result = cli(
        "run",
        "fishery/llm_societies",
        "--out",
        str(again),
        *SMALL,
        "--set",
        "grid.growth_rate=[0.6]",
        "--set",
        "grid.altruism_ratio=[1.0]",
        "--set",
        'grid.llm=["replay:local"]',
        cache=cache,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((again / "summary.json").read_text())["llm"]["provider_calls"] == 0
    a = pd.read_parquet(out / "runs.parquet").drop(columns=["llm"])
    b = pd.read_parquet(again / "runs.parquet").drop(columns=["llm"])
    pd.testing.assert_frame_equal(a, b)


def test_analyse_norms_on_the_recorded_society(society):
    out, cache = society
    result = cli("analyse", "norms", str(out), cache=cache)
    assert result.returncode == 0, result.stderr
    assert "Group norms adopted over time" in result.stdout
    assert (out / "analysis" / "group_norms.csv").exists()


def test_ablation_runs_osl_and_ogd_on_the_local_model(tmp_path):
    out = tmp_path / "ablation"
    result = cli(
        "run",
        "fishery/llm_ablation",
        "--out",
        str(out),
        *SMALL,
        "--set",
        "params.n_agents=2",
        "--set",
        "params.llm_agents=1",  # one LLM villager beside a rule one: half the calls of two
        "--set",
        "grid.growth_rate=[0.2]",
        "--set",
        "grid.altruism_ratio=[0.0]",
        "--set",
        "grid.social_learning=[true, false]",
        "--set",
        "grid.group_decision=[false]",
        "--figures",
        cache=tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    decisions = pd.read_parquet(out / "llm_decisions.parquet")
    assert "fishery.vote" not in set(decisions["kind"])  # no group decision: no vote in either cell
    assert (out / "llm_ablation.png").exists()
