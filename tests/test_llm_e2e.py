"""End to end through ``python -m mesa_dilemmas run``: LLM villagers in the fishery,
answered by a loopback OpenAI-wire test server.  Cache re-use, SIGKILL + resume, budgets."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from cli_runner import child_env, cli
from llm_fixtures import REPO
from llm_servers.wire import WireServer

SCENARIO = """
name = "llm-e2e"
game = "fishery"
seed = 7
replications = {replications}
max_steps = {steps}
processes = {processes}
[params]
n_agents = 6
llm_agents = 2
llm = "openai:test-model@{url}/v1"
[llm]
max_tokens = 64
"""


def write_scenario(
    tmp_path: Path, url: str, *, replications: int = 2, steps: int = 4, processes: int = 1
) -> Path:
    path = tmp_path / "scenario.toml"
    path.write_text(
        SCENARIO.format(url=url, replications=replications, steps=steps, processes=processes)
    )
    return path


def run_cli(args: list[str], cache: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return cli("run", *args, "--no-progress", cache=cache, cwd=REPO, timeout=timeout)


def provider_keys(run_dir: Path) -> list[str]:
    with sqlite3.connect(f"file:{run_dir / 'llm_calls.sqlite'}?mode=ro", uri=True) as conn:
        return [r[0] for r in conn.execute("SELECT key FROM calls WHERE source = 'provider'")]


def paid_so_far(run_dir: Path) -> int:
    """Provider calls recorded so far by a run that is still going (0 before its tables exist)."""
    if not (run_dir / "llm_calls.sqlite").exists():
        return 0
    try:
        return len(provider_keys(run_dir))
    except sqlite3.OperationalError:
        return 0


def results(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "runs.parquet").drop(columns=["llm"], errors="ignore")


def test_second_identical_run_makes_zero_calls(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with WireServer() as server:
        scenario = write_scenario(tmp_path, server.url)
        first = run_cli([str(scenario), "--out", str(tmp_path / "one")], cache)
        assert first.returncode == 0, first.stderr
        requests = server.state.requests
        second = run_cli([str(scenario), "--out", str(tmp_path / "two")], cache)
        assert second.returncode == 0, second.stderr
        assert server.state.requests == requests  # zero calls reached the server
    import json

    one = json.loads((tmp_path / "one" / "summary.json").read_text())["llm"]
    two = json.loads((tmp_path / "two" / "summary.json").read_text())["llm"]
    assert one["provider_calls"] == requests > 0 and one["fallbacks"] == 0
    assert two["provider_calls"] == 0 and two["cache_hits"] == two["calls"] == one["calls"]
    pd.testing.assert_frame_equal(results(tmp_path / "one"), results(tmp_path / "two"))
    steps = [pd.read_parquet(tmp_path / d / "steps.parquet") for d in ("one", "two")]
    pd.testing.assert_frame_equal(*steps)


def test_sigkill_mid_run_then_resume_repeats_no_call(tmp_path: Path) -> None:
    with WireServer(latency_s=0.05) as server:
        scenario = write_scenario(tmp_path, server.url, replications=2, steps=5)
        # the reference: the same run, uninterrupted, with its own cache
        ref = run_cli([str(scenario), "--out", str(tmp_path / "ref")], tmp_path / "cache-ref")
        assert ref.returncode == 0, ref.stderr
        total = len(provider_keys(tmp_path / "ref"))

        run_dir, cache = tmp_path / "killed", tmp_path / "cache"
        cmd = [
            sys.executable,
            "-m",
            "mesa_dilemmas",
            "run",
            str(scenario),
            "--out",
            str(run_dir),
            "--no-progress",
        ]
        proc = subprocess.Popen(
            cmd,
            env=child_env(cache),
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                if paid_so_far(run_dir) >= total // 3:
                    break
                time.sleep(0.05)
            assert proc.poll() is None, "the run finished before it could be killed"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
        paid_before = len(provider_keys(run_dir))
        assert 0 < paid_before < total
        assert not (run_dir / "summary.json").exists()

        resumed = run_cli([str(scenario), "--resume", str(run_dir)], cache)
        assert resumed.returncode == 0, resumed.stderr
    keys = provider_keys(run_dir)
    assert len(keys) == len(set(keys)) == total  # every call paid exactly once
    import json

    summary = json.loads((run_dir / "summary.json").read_text())["llm"]
    assert summary["segments"] == 2 and summary["cache_hits"] >= paid_before
    pd.testing.assert_frame_equal(results(tmp_path / "ref"), results(run_dir))


@pytest.mark.parametrize("processes", [1, 2])
def test_budget_stops_the_run_cleanly(tmp_path: Path, processes: int) -> None:
    cache = tmp_path / "cache"
    with WireServer() as server:
        scenario = write_scenario(
            tmp_path, server.url, replications=2, steps=4, processes=processes
        )
        run_dir = tmp_path / "run"
        out = run_cli(
            [str(scenario), "--out", str(run_dir), "--set", "llm.budget.max_calls=9"], cache
        )
        assert out.returncode != 0
        assert "llm budget reached" in out.stderr and "max_calls = 9" in out.stderr
        assert "Traceback" not in out.stderr, out.stderr  # a clear message, not a crash
        assert len(provider_keys(run_dir)) == 9  # exactly the budget, all recorded
        assert (run_dir / "llm_calls.parquet").exists()
        # a larger budget and --resume finish the run, paying only for what is missing
        before = server.state.requests
        more = run_cli(
            [str(scenario), "--resume", str(run_dir), "--set", "llm.budget.max_calls=10000"], cache
        )
        assert more.returncode == 0, more.stderr
        keys = provider_keys(run_dir)
        assert len(keys) == len(set(keys)) and server.state.requests - before == len(keys) - 9
