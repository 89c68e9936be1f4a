"""Runs with and without fallback decisions: each run counts its decisions answered by their
fallback (``decision_fallbacks``, only where a policy may fall back), and ``analyse norms``
reports its statistics over every run and again over the runs without any (the loopback
OpenAI-format server answers the first request with text the layer must reject)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from cli_runner import cli
from llm_fixtures import REPO
from llm_servers.wire import Faults, WireServer

from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

SCENARIO = """
name = "fallback-runs"
game = "fishery"
seed = 5
replications = 3
max_steps = 2
processes = 1
[params]
n_agents = 4
llm_agents = 2
llm = "openai:gpt-4o-mini@{url}/v1"
[llm]
max_tokens = 64
cache = false
answer_retries = 0
max_fallback_rate = 1.0
"""


class Garbled(Policy):
    """A lenient policy whose every answer is unusable (each decision falls back)."""

    strict = False

    def decide(self, decision):
        return "no number here"


def test_a_run_counts_its_fallback_decisions_and_rule_runs_have_no_such_column():
    model = FisheryModel(n_agents=4, stop_at_collapse=False, rng=3)
    garbled = Garbled()
    garbled.bind(model.villagers[0])
    model.villagers[0].policy = garbled
    model.step()
    assert model.decision_fallbacks == model.broker.stats.total("fallbacks") >= 1
    rule_only = FisheryModel(n_agents=4, rng=3)
    assert not rule_only.may_fall_back()
    assert "decision_fallbacks" not in rule_only.datacollector.model_reporters


def test_analyse_norms_reports_every_run_and_the_runs_without_fallbacks(tmp_path: Path):
    with WireServer(faults=Faults(script=["invalid"])) as server:
        path = tmp_path / "scenario.toml"
        path.write_text(SCENARIO.format(url=server.url))
        done = cli(
            "run",
            str(path),
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
            "--yes",
            cache=tmp_path / "cache",
            cwd=REPO,
            env={"OPENAI_API_KEY": "sk-test"},
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    runs = pd.read_parquet(tmp_path / "run" / "runs.parquet")
    counts = runs["decision_fallbacks"].tolist()
    assert sum(counts) == 1 and counts.count(0) == 2, counts  # the first request only
    done = cli("analyse", "norms", str(tmp_path / "run"), cache=tmp_path / "cache", cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "1 of 3 runs had decisions answered by their fallback (1 decisions in all)" in (
        done.stdout
    )
    assert "over the runs without fallback decisions" in done.stdout
    assert (tmp_path / "run" / "analysis" / "without_fallbacks").is_dir()
