"""A run held to its model's checks: ``[llm] require_persona_check`` and ``min_comprehension``
stop a run before its first call when the model has no stored result for the run's game (or
a failed / low one), say which command measures it, and let it run once the result is there.

The model is a scripted OpenAI-compatible server on loopback that counts its requests."""

from __future__ import annotations

import json

import pytest
from cli_runner import cli_in_process
from llm_servers.wire import WireServer

from mesa_dilemmas.llm.guard import persona_check_path, result_path
from mesa_dilemmas.llm.settings import LLMSettings

TINY = ["--no-progress", "--yes", "--set", "replications=1", "--set", "max_steps=1",
        "--set", "params.n_agents=3", "--set", "params.llm_agents=1",
        "--set", "grid.growth_rate=[0.6]", "--set", "grid.altruism_ratio=[1.0]"]  # fmt: skip


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MESA_DILEMMAS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _run(server: WireServer, tmp_path, *extra: str) -> tuple[int, str]:
    spec = f"openai:test-model@{server.url}/v1"
    return cli_in_process(
        [
            "run",
            "fishery/llm_societies",
            "--out",
            str(tmp_path / f"run{len(extra)}"),
            *TINY,
            "--set",
            f'grid.llm=["{spec}"]',
            *extra,
        ]  # fmt: skip
    )


def test_require_persona_check_stops_before_any_call_then_runs_once_passed(tmp_path, cache):
    with WireServer() as server:
        code, err = _run(server, tmp_path, "--set", "llm.require_persona_check=true")
        assert code == 2, err
        assert "no persona check for fishery" in err and "mesa-dilemmas personas check" in err
        assert server.state.requests == 0
        path = persona_check_path(LLMSettings(), "openai:test-model", "fishery")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"passed": False, "why": "altruistic measured proself"}))
        code, err = _run(server, tmp_path, "--set", "llm.require_persona_check=true")
        assert code == 2 and "did not pass" in err and "altruistic measured proself" in err
        assert server.state.requests == 0
        path.write_text(json.dumps({"passed": True}))
        code, err = _run(server, tmp_path, "--set", "llm.require_persona_check=true")
        assert code == 0, err
        assert server.state.requests > 0


def test_min_comprehension_stops_or_warns_and_names_the_command(tmp_path, cache):
    with WireServer() as server:
        code, err = _run(server, tmp_path, "--set", "llm.min_comprehension=0.8")
        assert code == 2, err
        assert "no comprehension result on fishery" in err
        assert "mesa-dilemmas comprehension --llm" in err
        assert server.state.requests == 0
        path = result_path(LLMSettings(), "openai:test-model", "fishery", 0)
        path.parent.mkdir(parents=True, exist_ok=True)
        low = {"accuracy": 0.5, "correct": 50, "items": 100, "ci_low": 0.4, "ci_high": 0.6}
        path.write_text(json.dumps(low))
        code, err = _run(server, tmp_path, "--set", "llm.min_comprehension=0.8")
        assert code == 2 and "50 of 100" in err and "below min_comprehension = 0.8" in err
        assert server.state.requests == 0
        code, err = _run(
            server, tmp_path, "--set", "llm.min_comprehension=0.8",
            "--set", "llm.on_low_comprehension=warn",
        )  # fmt: skip
        assert code == 0, err
        assert "warning: llm.min_comprehension" in err and server.state.requests > 0
