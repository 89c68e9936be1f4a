"""Run sessions: recording, cache re-use, replay, resume, budgets, worker processes."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from pathlib import Path

import pandas as pd
import pytest
from llm_fixtures import llm_env, play  # noqa: F401
from llm_servers.wire import WireServer

from mesa_dilemmas.llm import BudgetExceeded, LLMSettings, ReplayMiss, make_policy, session
from mesa_dilemmas.llm.accounting import load_calls

pytestmark = pytest.mark.usefixtures("llm_env")


def run_game(spec: str, run_dir: Path, *, seed: int = 1, resume: bool = False, n: int = 4, **table):
    session.start_run(LLMSettings.from_table(table), run_dir, resume=resume)
    try:
        game = play([make_policy(spec) for _ in range(n)], rounds=2, phases=2, seed=seed)
    finally:
        summary = session.finish_run()
    return game.answers, summary


@pytest.fixture
def server():
    with WireServer() as srv:
        yield srv


def test_run_record_and_summary(tmp_path: Path, server: WireServer) -> None:
    answers, summary = run_game(f"openai:m@{server.url}/v1", tmp_path / "run")
    assert summary["calls"] == summary["provider_calls"] == 16 and summary["cache_hits"] == 0
    assert summary["decisions"] == 16 and summary["fallbacks"] == 0
    assert summary["tokens_in"] > 0 and summary["tokens_out"] > 0
    assert (
        summary["unpriced_calls"] == 16 and summary["cost_usd"] == 0.0
    )  # a test model has no price
    assert set(summary["by_kind"]) == {"toy.effort", "toy.action"}
    assert sum(v["calls"] for v in summary["by_agent"].values()) == 16
    assert summary["latency_s"]["p50"] is not None
    assert summary["files"] == ["llm_calls.parquet", "llm_decisions.parquet", "llm_calls.sqlite"]
    calls = pd.read_parquet(tmp_path / "run" / "llm_calls.parquet")
    assert len(calls) == 16 and calls.key.is_unique and set(calls.source) == {"provider"}
    assert set(calls.columns) >= {
        "request",
        "response",
        "tokens_in",
        "tokens_out",
        "latency_s",
        "cost_usd",
        "agent_id",
        "round",
        "kind",
        "run_seed",
    }
    assert (calls.run_seed == "1").all() and set(calls["round"]) == {1, 2}


def test_priced_model_costs_and_cost_budget(tmp_path: Path, server: WireServer) -> None:
    prices = {
        "openai:m": {"input": 1000.0, "output": 2000.0}
    }  # absurd prices make small runs expensive
    _, summary = run_game(f"openai:m@{server.url}/v1", tmp_path / "a", prices=prices)
    expected = (summary["tokens_in"] * 1000.0 + summary["tokens_out"] * 2000.0) / 1e6
    assert summary["cost_usd"] == pytest.approx(expected) and summary["unpriced_calls"] == 0
    with pytest.raises(BudgetExceeded, match="max_cost_usd"):
        run_game(
            f"openai:m@{server.url}/v1",
            tmp_path / "b",
            seed=2,
            prices=prices,
            budget={"max_cost_usd": 0.5},
        )
    spent = list(load_calls(tmp_path / "b"))
    assert 0 < len(spent) < 16


def test_second_identical_run_makes_no_calls(tmp_path: Path, server: WireServer) -> None:
    first, _ = run_game(f"openai:m@{server.url}/v1", tmp_path / "one")
    requests = server.state.requests
    second, summary = run_game(f"openai:m@{server.url}/v1", tmp_path / "two")
    assert server.state.requests == requests  # zero calls
    assert second == first
    assert summary["provider_calls"] == 0 and summary["cache_hits"] == summary["calls"] == 16
    # another replication (run seed) draws its own samples
    run_game(f"openai:m@{server.url}/v1", tmp_path / "three", seed=2)
    assert server.state.requests == requests + 16


def test_replay_reproduces_and_names_a_missing_call(tmp_path: Path) -> None:
    with WireServer() as srv:
        recorded, _ = run_game(f"openai:m@{srv.url}/v1", tmp_path / "rec")
    replayed, summary = run_game("replay:openai:m", tmp_path / "replay")  # the server is gone
    assert replayed == recorded and summary["provider_calls"] == 0 and summary["cache_hits"] == 16
    assert set(pd.read_parquet(tmp_path / "replay" / "llm_calls.parquet").source) == {"replay"}
    with pytest.raises(
        ReplayMiss,
        match=r"no recorded call for openai:m: agent \d+, round 1, decision 'toy.effort'",
    ):
        run_game("replay:openai:m", tmp_path / "miss", seed=99)


def test_resume_answers_from_the_run_record_without_the_cache(
    tmp_path: Path, server: WireServer
) -> None:
    spec = f"openai:m@{server.url}/v1"
    first, _ = run_game(spec, tmp_path / "run", cache=False)
    requests = server.state.requests
    again, summary = run_game(spec, tmp_path / "run", cache=False, resume=True)
    assert again == first and server.state.requests == requests
    assert summary["segments"] == 2 and summary["resumed"]
    assert (
        summary["provider_calls"] == 16 and summary["cache_hits"] == 16
    )  # paid once, in segment 1
    calls = pd.read_parquet(tmp_path / "run" / "llm_calls.parquet")
    assert calls[calls.source == "provider"].key.is_unique
    assert set(calls[calls.segment == 2].source) == {"run"}


def test_budget_stops_the_run_and_keeps_what_was_done(tmp_path: Path, server: WireServer) -> None:
    spec = f"openai:m@{server.url}/v1"
    with pytest.raises(BudgetExceeded, match="max_calls = 6"):
        run_game(spec, tmp_path / "run", budget={"max_calls": 6})
    calls = list(load_calls(tmp_path / "run"))
    assert len(calls) == 6 and all(c["response"] for c in calls)
    assert (tmp_path / "run" / "llm_calls.parquet").exists()
    # resuming with a larger budget pays only for what is missing
    before = server.state.requests
    answers, summary = run_game(spec, tmp_path / "run", resume=True, budget={"max_calls": 100})
    assert server.state.requests - before == 10 and summary["provider_calls"] == 16
    fresh, _ = run_game(spec, tmp_path / "fresh")
    assert answers == fresh


def _no_llm_env() -> bool:
    """No environment variable of the LLM layer names a run (nor anything else)."""
    return not [k for k in os.environ if k.startswith("MESA_DILEMMAS_LLM")]


def _worker(spec: str, seed: int, run: str) -> None:
    # a batch worker: only the session path it was handed tells it about the run
    assert _no_llm_env() and session.current() is None
    with session.use(run):
        play([make_policy(spec) for _ in range(2)], rounds=1, phases=2, seed=seed)
    assert session.current() is None


def test_session_reaches_spawned_workers(tmp_path: Path, server: WireServer) -> None:
    run = session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_worker, args=(f"openai:m@{server.url}/v1", seed, str(run)))
        for seed in (1, 2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    summary = session.finish_run()
    assert summary["provider_calls"] == 8 and summary["decisions"] == 8
    calls = pd.read_parquet(tmp_path / "run" / "llm_calls.parquet")
    assert calls.pid.nunique() == 2 and set(calls.run_seed) == {"1", "2"}


def _task(task: tuple[str, int]) -> int:
    # a task of the execution backend: it is handed nothing but the task; the backend sends
    # the driver's session path with it and runs it inside that run
    spec, seed = task
    assert _no_llm_env() and session.current() is not None
    play([make_policy(spec) for _ in range(2)], rounds=1, phases=2, seed=seed)
    return os.getpid()


def test_the_backend_hands_the_run_to_workers_without_the_environment(
    tmp_path: Path, server: WireServer
) -> None:
    from mesa_dilemmas.scenarios.execution import map_tasks

    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    assert _no_llm_env()  # the run is active here, yet no environment variable names it
    spec = f"openai:m@{server.url}/v1"
    pids = map_tasks(_task, [(spec, 1), (spec, 2)], processes=2, progress=False, desc="workers")
    assert _no_llm_env() and os.getpid() not in pids
    summary = session.finish_run()
    assert session.current() is None
    assert summary["provider_calls"] == 8 and summary["decisions"] == 8
    calls = pd.read_parquet(tmp_path / "run" / "llm_calls.parquet")
    assert set(calls.pid) == set(pids) and set(calls.run_seed) == {"1", "2"}


def test_two_runs_in_two_threads_each_see_their_own(tmp_path: Path, server: WireServer) -> None:
    spec = f"openai:m@{server.url}/v1"
    both_started = threading.Barrier(2, timeout=60)
    seen: dict[str, object] = {}
    errors: list[BaseException] = []

    def one_run(name: str, seed: int, rounds: int) -> None:
        try:
            run = session.start_run(LLMSettings(), tmp_path / name, resume=False)
            both_started.wait()  # both runs are active at once, one in each thread
            state = session.current()
            assert state is not None and state.run_dir == (tmp_path / name).resolve()
            play([make_policy(spec) for _ in range(2)], rounds=rounds, phases=2, seed=seed)
            both_started.wait()
            seen[name] = session.finish_run(run)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
            both_started.abort()

    threads = [
        threading.Thread(target=one_run, args=("a", 1, 1)),
        threading.Thread(target=one_run, args=("b", 2, 2)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert session.current() is None  # neither thread's run is active in this one
    assert seen["a"]["decisions"] == 4 and seen["b"]["decisions"] == 8  # type: ignore[index]
    for name, seed in (("a", "1"), ("b", "2")):
        calls = pd.read_parquet(tmp_path / name / "llm_calls.parquet")
        assert set(calls.run_seed) == {seed}


def test_finish_without_calls_leaves_no_files(tmp_path: Path) -> None:
    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    assert (tmp_path / "run" / "llm_session.json").exists()
    summary = session.finish_run()
    assert summary["calls"] == 0 and not any((tmp_path / "run").iterdir())
    assert session.finish_run() == {}
