"""LLM failures on the record, through ``python -m mesa_dilemmas run`` against the loopback
OpenAI-wire test server: rejected keys, unknown models, unreachable endpoints and malformed
requests stop the run (exit 3, one line, the record saved); keys never reach disk or the
terminal; fallback rates are printed and a run that is mostly fallbacks stops."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_runner import child_env
from llm_fixtures import free_port
from llm_servers.wire import Faults, WireServer
from test_llm_e2e import write_scenario

from mesa_dilemmas.llm.backends import status_error
from mesa_dilemmas.llm.errors import CallFailed, ProviderRejected, TransientCallError

KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"


def run(args: list[str], tmp_path: Path, *, key: bool = True, command: str = "run"):
    import subprocess

    env = child_env(tmp_path / "cache")
    env.pop("OPENAI_API_KEY", None)
    if key:
        env["OPENAI_API_KEY"] = KEY
    extra = ["--no-progress"] if command == "run" else []
    return subprocess.run(
        [sys.executable, "-m", "mesa_dilemmas", *command.split(), *args, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_no_key_anywhere(run_dir: Path, *texts: str) -> None:
    for text in texts:
        assert KEY not in text
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def stopped_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("stopped: ")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("fault", "status", "words"),
    [
        ("unauthorized", 401, "API key was rejected"),
        ("forbidden", 403, "lacks permission"),
        ("unknown_model", 404, "unknown model"),
    ],
)
def test_rejections_stop_the_run_at_the_first_one(tmp_path, fault, status, words):
    with WireServer(Faults(always=fault)) as server:
        scenario = write_scenario(tmp_path, server.url)
        run_dir = tmp_path / "run"
        out = run([str(scenario), "--out", str(run_dir)], tmp_path)
        assert out.returncode == 3, out.stderr
        line = stopped_line(out.stderr)
        assert f"HTTP {status}" in line and words in line and str(run_dir) in line
        assert server.state.requests <= 2  # no retries: the first rejection stops the run
    calls = pd.read_parquet(run_dir / "llm_calls.parquet")  # everything so far saved
    assert len(calls) == server.state.requests and (calls.http_status == status).all()
    assert_no_key_anywhere(run_dir, out.stdout, out.stderr)


def test_llm_check_reports_a_rejected_key(tmp_path):
    with WireServer(Faults(always="unauthorized")) as server:
        out = run([f"openai:test-model@{server.url}/v1"], tmp_path, command="llm check")
    assert out.returncode == 3
    assert "FAILED" in out.stderr and "HTTP 401" in out.stderr and KEY not in out.stderr
    assert "[redacted]" in out.stderr  # the server echoed the key; we did not


def test_unreachable_endpoint_stops_the_run(tmp_path):
    scenario = write_scenario(tmp_path, f"http://127.0.0.1:{free_port()}")
    run_dir = tmp_path / "run"
    out = run([str(scenario), "--out", str(run_dir), "--set", "llm.max_retries=1"], tmp_path)
    assert out.returncode == 3, out.stderr
    assert "endpoint unreachable" in stopped_line(out.stderr)
    calls = pd.read_parquet(run_dir / "llm_calls.parquet")
    assert calls.error.notna().all() and calls.error.str.contains("cannot connect").all()
    for _, attempts in calls.groupby("agent_id"):  # each call: one retry, then it gave up
        assert attempts.retried.tolist() == [1, 0]


def test_a_malformed_request_rejection_stops_the_run(tmp_path):
    with WireServer(Faults(always="bad_request")) as server:
        scenario = write_scenario(tmp_path, server.url)
        run_dir = tmp_path / "run"
        out = run([str(scenario), "--out", str(run_dir)], tmp_path)
    assert out.returncode == 3, out.stderr
    line = stopped_line(out.stderr)
    assert "rejected as malformed" in line and "HTTP 400" in line
    assert server.state.requests <= 2  # two agents ask at once: one may be in flight


def test_every_attempt_recorded_key_redacted_and_by_model_decisions(tmp_path):
    """A 500 that echoes the key, then answers: the failed attempt is on the record, redacted."""
    with WireServer(Faults(script=["echo_500", "echo_500", "rate_limit"], retry_after="0")) as srv:
        scenario = write_scenario(tmp_path, srv.url)
        run_dir = tmp_path / "run"
        out = run([str(scenario), "--out", str(run_dir)], tmp_path)
        requests = srv.state.requests
    assert out.returncode == 0, out.stderr
    calls = pd.read_parquet(run_dir / "llm_calls.parquet")
    assert len(calls) == requests
    failed = calls[calls.error.notna()]
    assert failed.http_status.tolist() == [500, 500, 429] and failed.retried.eq(1).all()
    assert failed.error.str.contains("[redacted]", regex=False).sum() == 2
    assert_no_key_anywhere(run_dir, out.stdout, out.stderr)
    llm = json.loads((run_dir / "summary.json").read_text())["llm"]
    assert llm["attempts"] == requests and llm["failed_attempts"] == llm["retried_attempts"] == 3
    assert llm["errors_by_status"] == {"500": 2, "429": 1}
    ((label, model),) = llm["by_model"].items()
    assert model["decisions"] == llm["decisions"] > 0 and model["attempts"] == requests
    assert f"llm {label}: 0/{llm['decisions']} decisions fell back (0.0%)" in out.stderr


def test_a_run_of_fallbacks_stops(tmp_path):
    """Every answer invalid: the fallback rate is printed and the run stops (exit 3)."""
    with WireServer(Faults(invalid=1.0)) as server:
        scenario = write_scenario(tmp_path, server.url)
        run_dir = tmp_path / "run"
        out = run([str(scenario), "--out", str(run_dir)], tmp_path)
    assert out.returncode == 3, out.stderr
    line = stopped_line(out.stderr)
    # a self-hosted server: the self-hosted default limit
    assert "decisions fell back to the rule" in line and "max_fallback_rate 0.5" in line
    decisions = pd.read_parquet(run_dir / "llm_decisions.parquet")
    assert decisions.fell_back.all() and len(decisions) >= 10


def test_fallback_rate_is_printed_with_a_warning(tmp_path):
    with WireServer(Faults(invalid=1.0)) as server:
        scenario = write_scenario(tmp_path, server.url)
        run_dir = tmp_path / "run"
        out = run(
            [str(scenario), "--out", str(run_dir), "--set", "llm.max_fallback_rate=1"], tmp_path
        )
    assert out.returncode == 0, out.stderr
    assert "decisions fell back (100.0%)  WARNING: above 10%" in out.stderr


def test_status_classification():
    assert isinstance(status_error("openai", 401, "bad key"), ProviderRejected)
    assert isinstance(
        status_error("openai", 429, "slow down", {"retry-after": "2"}), TransientCallError
    )
    assert status_error("openai", 429, "x", {"retry-after": "2"}).retry_after == 2.0
    err = status_error("openai", 500, "response_format.type should be 'text' or 'json_object'")
    assert isinstance(err, CallFailed) and err.malformed_request
    assert isinstance(status_error("openai", 500, "The server had an error"), TransientCallError)
    assert isinstance(status_error("openai", 422, "Unprocessable"), CallFailed)


def test_two_processes_sharing_a_cache_pay_once_per_request(tmp_path):
    """Two identical runs at the same moment, one cache: every request is paid for once."""
    import subprocess

    from test_llm_e2e import provider_keys, results

    with WireServer(latency_s=0.2) as server:
        scenario = write_scenario(tmp_path, server.url, replications=1, steps=3)
        env = child_env(tmp_path / "cache")
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mesa_dilemmas",
                    "run",
                    str(scenario),
                    "--out",
                    str(tmp_path / name),
                    "--no-progress",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name in ("a", "b")
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        paid = provider_keys(tmp_path / "a") + provider_keys(tmp_path / "b")
        assert len(paid) == len(set(paid)) == server.state.requests > 0
    pd.testing.assert_frame_equal(results(tmp_path / "a"), results(tmp_path / "b"))


STORM = ["rate_limit", "server_error"] * 6  # 12 failed requests in a row, then answers
#: the same length of storm, every failure a 429 whose Retry-After says 0 s: waiting through it
#: takes no time (a 500 carries no Retry-After, and 12 backoffs of up to 60 s took 43 s)
STORM_429 = ["rate_limit"] * len(STORM)


def _no_rule_answers(run_dir: Path) -> pd.DataFrame:
    decisions = pd.read_parquet(run_dir / "llm_decisions.parquet")
    assert not decisions.fell_back.any() and decisions.fallback.isna().all()
    return decisions


def test_a_provider_storm_stops_the_run_resumably_with_no_rule_answers(tmp_path):
    """429/500 on every attempt of the first calls: the run stops (exit 3) at the first call
    that fails after its retries -- no decision becomes the rule's answer -- and says how to
    resume; ``--resume`` after the storm completes it, still without a fallback."""
    with WireServer(Faults(script=list(STORM), retry_after="0")) as server:
        scenario = write_scenario(tmp_path, server.url, replications=1, steps=3)
        run_dir = tmp_path / "run"
        args = [str(scenario), "--out", str(run_dir), "--set", "llm.max_retries=2"]
        out = run(args, tmp_path)
        assert out.returncode == 3, out.stderr
        line = stopped_line(out.stderr)
        assert f"continue with --resume {run_dir}" in line and "gave up after 3 attempts" in line
        assert "HTTP 429" in line or "HTTP 500" in line
        assert 'on_provider_error = "wait"' in line
        calls = pd.read_parquet(run_dir / "llm_calls.parquet")
        assert calls.error.notna().all()  # only failed attempts so far
        if (run_dir / "llm_decisions.parquet").exists():
            _no_rule_answers(run_dir)
        server.state.faults.script = list(STORM[: server.state.requests])  # the storm is over
        resumed = run(
            [str(scenario), "--resume", str(run_dir), "--set", "llm.max_retries=2"], tmp_path
        )
        assert resumed.returncode == 0, resumed.stderr
    decisions = _no_rule_answers(run_dir)
    assert len(decisions) > 0
    llm = json.loads((run_dir / "summary.json").read_text())["llm"]
    assert llm["fallbacks"] == 0 and llm["fallbacks_by_kind"] == {}


def test_on_provider_error_wait_rides_out_the_storm(tmp_path):
    with WireServer(Faults(script=list(STORM_429), retry_after="0")) as server:
        scenario = write_scenario(tmp_path, server.url, replications=1, steps=3)
        run_dir = tmp_path / "run"
        out = run(
            [
                str(scenario),
                "--out",
                str(run_dir),
                "--set",
                "llm.max_retries=1",
                "--set",
                'llm.on_provider_error="wait"',
            ],
            tmp_path,
        )
        assert out.returncode == 0, out.stderr
        assert "waiting and trying again" in out.stderr
        requests = server.state.requests
    _no_rule_answers(run_dir)
    llm = json.loads((run_dir / "summary.json").read_text())["llm"]
    assert llm["failed_attempts"] == len(STORM_429) and llm["failed_calls"] == 0
    assert llm["attempts"] == requests and llm["fallbacks"] == 0


def test_fallbacks_are_flagged_by_kind_and_the_paid_default_is_strict():
    from mesa_dilemmas.llm.checks import fallback_limits
    from mesa_dilemmas.llm.settings import (
        PAID_FALLBACK_RATE,
        SELF_HOSTED_FALLBACK_RATE,
        LLMSettings,
    )

    settings = LLMSettings()
    limits = fallback_limits(["openai:gpt-4o", "openai:m@http://127.0.0.1:1/v1"], settings)
    assert limits == {"openai:gpt-4o": PAID_FALLBACK_RATE, "openai:m": SELF_HOSTED_FALLBACK_RATE}
    assert LLMSettings(max_fallback_rate=0.2).fallback_limit(True) == 0.2


def test_a_stop_while_the_server_is_described_sends_nothing_off_the_record(tmp_path):
    """The server is slow to say how it serves (the client asks once, before the first call):
    every call waits for that answer (none is sent while it is asked), and once the first
    rejection stops the run no call is sent that the record does not hold."""
    with WireServer(Faults(always="unknown_model", probe_s=0.5)) as server:
        scenario = write_scenario(tmp_path, server.url)
        run_dir = tmp_path / "run"
        out = run([str(scenario), "--out", str(run_dir)], tmp_path)
        assert out.returncode == 3, out.stderr
        assert "HTTP 404" in stopped_line(out.stderr)
        sent = server.state.requests
        assert server.state.sent_while_probed == 0
    calls = pd.read_parquet(run_dir / "llm_calls.parquet")
    assert sent >= 1 and len(calls) == sent and (calls.http_status == 404).all()
