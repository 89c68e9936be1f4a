"""Batch mode: the calls made at once go out as one batch job (OpenAI's Batch API, Anthropic's
Message Batches), through the real SDKs against a loopback server that speaks both batch wire
formats; batch prices; a run killed with a job pending resumes by polling the same job and
pays nothing twice."""

from __future__ import annotations

import json
import os
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
SPECS = {"openai": "openai:gpt-4o-mini@{url}/v1", "anthropic": "anthropic:claude-haiku-4-5@{url}"}


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
        list_cost = PriceTable().cost(label, c["tokens_in"], c["tokens_out"],
                                      c["cached_tokens"], c["cache_write_tokens"])  # fmt: skip
        assert c["cost_usd"] == pytest.approx(list_cost / 2)  # batch: half the list price
    assert summary["fallbacks"] == 0


def _generate(server_url: str, out: Path, cache: Path, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != session.ENV}
    env["MESA_DILEMMAS_CACHE_DIR"] = str(cache)
    env["OPENAI_API_KEY"] = "sk-test-batch"
    (out.parent / "llm.toml").write_text("[llm]\ncache = false\nbatch_poll_s = 0.05\n")
    cmd = [sys.executable, "-m", "mesa_dilemmas", "strategies", "generate", "--game",
           "public_goods", "--attitude", "collective", "--model",
           f"openai:writer@{server_url}/v1", "-n", "4", "--out", str(out), "--max-tries", "3",
           "--llm", str(out.parent / "llm.toml"), "--batch", "--quiet", *extra]  # fmt: skip
    return subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


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
