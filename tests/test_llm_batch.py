"""Batch mode: the calls made at once go out as one batch job (OpenAI's Batch API, Anthropic's
Message Batches, Gemini's batch jobs of inlined requests), through the real SDKs against a
loopback server that speaks the three batch wire formats; batch prices; one job per phase with
results equal to call by call; a run killed with a job pending resumes by polling the same job
and pays nothing twice."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llm_fixtures import REPO, llm_env  # noqa: F401
from llm_servers.wire import WireServer
from test_strategy_writing import Canned

from mesa_dilemmas.agents import Decision, NumberSpec
from mesa_dilemmas.agents.broker import DecisionBroker
from mesa_dilemmas.llm import make_policy, session
from mesa_dilemmas.llm.accounting import PriceTable, load_calls
from mesa_dilemmas.llm.settings import LLMSettings

pytestmark = pytest.mark.usefixtures("llm_env")

EFFORT = NumberSpec(0, 10, integer=True)
SPECS = {
    "openai": "openai:gpt-4o-mini@{url}/v1",
    "anthropic": "anthropic:claude-haiku-4-5@{url}",
    "gemini": "gemini:gemini-2.0-flash@{url}",
}


@pytest.mark.parametrize("provider", sorted(SPECS))
def test_a_phase_goes_out_as_one_batch_job_at_batch_prices(provider, tmp_path):
    settings = {"cache": False, "batch": True, "batch_poll_s": 0.05}
    with WireServer() as server:
        session.start_run(LLMSettings(**settings), tmp_path / "run", resume=False)
        policy = make_policy(SPECS[provider].format(url=server.url), run_seed=1, **settings)
        broker = DecisionBroker(narrator=policy)
        try:
            values = broker.ask_all(
                [Decision("unit.effort", EFFORT, {"i": i}, None, 1, 5) for i in range(6)]
            )
        finally:
            broker.close()
        summary = session.finish_run()
        assert server.state.requests == 0 and server.state.batch_lines == 6
        assert len(server.state.batches) == 1
    assert all(0 <= v <= 10 for v in values) and broker.stats.total("fallbacks") == 0
    calls = [c for c in load_calls(tmp_path / "run") if c["source"] == "provider"]
    (batch_id,) = {c["batch_id"] for c in calls}
    assert batch_id in server.state.batches and len(calls) == 6
    label = SPECS[provider].partition("@")[0]
    for c in calls:
        list_cost = PriceTable().cost(
            label, c["tokens_in"], c["tokens_out"], c["cached_tokens"], c["cache_write_tokens"]
        )
        assert c["cost_usd"] == pytest.approx(list_cost / 2)  # batch: half the list price
    assert summary["fallbacks"] == 0


def _generate(server_url: str, out: Path, cache: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ)  # the child runs its own LLM session (none is inherited)
    env["MESA_DILEMMAS_CACHE_DIR"] = str(cache)
    env["OPENAI_API_KEY"] = "sk-test-batch"
    (out.parent / "llm.toml").write_text("[llm]\ncache = false\nbatch_poll_s = 0.05\n")
    cmd = [
        sys.executable,
        "-m",
        "mesa_dilemmas",
        "strategies",
        "generate",
        "--game",
        "public_goods",
        "--attitude",
        "collective",
        "--model",
        f"openai:writer@{server_url}/v1",
        "-n",
        "4",
        "--out",
        str(out),
        "--max-tries",
        "3",
        "--llm",
        str(out.parent / "llm.toml"),
        "--batch",
        "--quiet",
        *extra,
    ]
    return subprocess.Popen(
        cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
def test_strategies_generate_batch_killed_with_a_job_pending_resumes_by_polling_it(tmp_path):
    out, cache = tmp_path / "set", tmp_path / "cache"
    with WireServer(responder=Canned(4, tmp_path / "marker")) as server:
        server.state.hold_batches = True  # the first job never finishes while the run lives
        proc = _generate(server.url, out, cache)
        deadline = time.monotonic() + 120
        while not server.state.batches and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(server.state.batches) == 1  # the descriptions' job is pending
        time.sleep(0.5)  # the job id is on the record
        proc.kill()
        proc.wait(timeout=30)
        (first,) = server.state.batches
        server.state.hold_batches = False
        resumed = _generate(server.url, out, cache, "--resume")
        stdout, stderr = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, stderr
        lines = server.state.batch_lines
        jobs = list(server.state.batches)
    assert jobs[0] == first  # polled again, not sent again
    # 4 descriptions once; code: plan 0 once, plan 1 twice, plan 2 three times, plan 3 three
    assert lines == 4 + 1 + 2 + 3 + 3
    summary = json.loads((out / "generation.json").read_text())
    assert summary["accepted"] == 3 and summary["llm"]["provider_calls"] == lines


LOCKSTEP_SCENARIO = """
name = "batch-lockstep"
game = "fishery"
seed = 11
replications = 3
max_steps = 2
processes = 1
[params]
n_agents = 4
llm_agents = 2
llm = "{model}@{url}"
[llm]
max_tokens = 64
cache = false
batch = {batch}
batch_poll_s = 0.05
"""


#: provider -> (the model, the server's path for its SDK, its key variable)
SCENARIO_MODELS = {
    "openai": ("openai:gpt-4o-mini", "/v1", "OPENAI_API_KEY"),
    "gemini": ("gemini:gemini-2.0-flash", "", "GEMINI_API_KEY"),
}


def _scenario_cmd(
    tmp_path: Path, url: str, batch: bool, name: str, *extra: str, provider: str = "openai"
):
    model, suffix, key = SCENARIO_MODELS[provider]
    path = tmp_path / f"{name}.toml"
    path.write_text(
        LOCKSTEP_SCENARIO.format(model=model, url=f"{url}{suffix}", batch=str(batch).lower())
    )
    env = dict(os.environ)  # the child runs its own LLM session (none is inherited)
    env["MESA_DILEMMAS_CACHE_DIR"] = str(tmp_path / f"cache-{name}")
    env[key] = "test-key-batch"
    out = tmp_path / name
    where = ["--resume", str(out)] if "--resume" in extra else ["--out", str(out)]
    cmd = [
        sys.executable,
        "-m",
        "mesa_dilemmas",
        "run",
        str(path),
        *where,
        "--no-progress",
        "--yes",
    ]
    return cmd, env, out


def _scenario_run(
    tmp_path: Path, url: str, batch: bool, name: str, *extra: str, provider: str = "openai"
) -> Path:
    cmd, env, out = _scenario_cmd(tmp_path, url, batch, name, *extra, provider=provider)
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("provider", sorted(SCENARIO_MODELS))
def test_a_scenarios_replications_advance_in_lockstep_one_batch_job_per_phase(provider, tmp_path):
    """With ``[llm] batch`` a scenario's replications play side by side: each phase's calls of
    all three replications go out as one job (not one per replication), at batch prices, and the
    results equal the same run made call by call."""
    import pandas as pd

    with WireServer() as server:
        direct = _scenario_run(tmp_path, server.url, False, "direct", provider=provider)
        direct_requests = server.state.requests
        assert direct_requests > 0 and not server.state.batches
        batched = _scenario_run(tmp_path, server.url, True, "batched", provider=provider)
        assert server.state.requests == direct_requests  # no call went out one by one
        jobs = len(server.state.batches)
        lines = server.state.batch_lines
    assert lines == direct_requests  # every call once, inside a job
    calls = [c for c in load_calls(batched) if c["source"] == "provider"]
    rounds = {(c["round"], c["step"], c["kind"]) for c in calls}
    # one job per phase of a round: the 3 replications' calls of a phase share it
    assert jobs == len(rounds) < len(calls) / 2, (jobs, len(rounds), len(calls))
    for c in calls:
        list_cost = PriceTable().cost(
            SCENARIO_MODELS[provider][0],
            c["tokens_in"],
            c["tokens_out"],
            c["cached_tokens"],
            c["cache_write_tokens"],
        )
        assert c["cost_usd"] == pytest.approx(list_cost / 2)
    manifest = json.loads((batched / "manifest.json").read_text())
    assert manifest["engine"]["lockstep"] is True
    drop = ["llm"]
    one = pd.read_parquet(direct / "runs.parquet").drop(columns=drop, errors="ignore")
    two = pd.read_parquet(batched / "runs.parquet").drop(columns=drop, errors="ignore")
    pd.testing.assert_frame_equal(one, two)
    steps = [pd.read_parquet(d / "steps.parquet") for d in (direct, batched)]
    pd.testing.assert_frame_equal(*steps)


@pytest.mark.parametrize("provider", sorted(SCENARIO_MODELS))
def test_a_scenario_killed_with_a_batch_job_pending_resumes_by_polling_it(provider, tmp_path):
    """A lockstep batch run killed while its first phase's job is pending: ``--resume`` polls
    the same job (found in the run record) and the server receives every request once."""
    with WireServer() as server:
        server.state.hold_batches = True  # the first job never finishes while the run lives
        cmd, env, out = _scenario_cmd(tmp_path, server.url, True, "killed", provider=provider)
        proc = subprocess.Popen(
            cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        while not server.state.batches and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(server.state.batches) == 1
        first_lines = server.state.batch_lines
        deadline = time.monotonic() + 60  # the job's id reaches the run record
        while time.monotonic() < deadline:
            found = []
            if (out / "llm_calls.sqlite").exists():
                with sqlite3.connect(f"file:{out / 'llm_calls.sqlite'}?mode=ro", uri=True) as db:
                    try:
                        found = db.execute("SELECT batch_id FROM batches").fetchall()
                    except sqlite3.OperationalError:
                        found = []
            if found:
                break
            time.sleep(0.1)
        assert found, "the pending job never reached the run record"
        proc.kill()
        proc.wait(timeout=30)
        (first,) = server.state.batches
        server.state.hold_batches = False
        _scenario_run(tmp_path, server.url, True, "killed", "--resume", provider=provider)
        jobs = list(server.state.batches)
        lines = server.state.batch_lines
        assert server.state.requests == 0
        reference = _scenario_run(tmp_path, server.url, True, "reference", provider=provider)
        total = server.state.batch_lines - lines
    assert jobs[0] == first  # polled again, not sent again
    assert first_lines > 0 and lines == total  # every call sent once, in all
    import pandas as pd

    pd.testing.assert_frame_equal(
        pd.read_parquet(out / "runs.parquet").drop(columns=["llm"], errors="ignore"),
        pd.read_parquet(reference / "runs.parquet").drop(columns=["llm"], errors="ignore"),
    )
