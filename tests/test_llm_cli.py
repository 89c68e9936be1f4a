"""``mesa-dilemmas llm check|cache stats|cache clear`` (through the group's ``register``)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.wire import Faults, WireServer

from mesa_dilemmas.llm.cache import ResponseCache
from mesa_dilemmas.llm.cli import register
from mesa_dilemmas.llm.request import ChatResponse

pytestmark = pytest.mark.usefixtures("llm_env")


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mesa-dilemmas")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.func(args)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_check_makes_one_call(provider: str, capsys: pytest.CaptureFixture) -> None:
    with WireServer() as server:
        url = f"{server.url}/v1" if provider == "openai" else server.url
        assert cli("llm", "check", f"{provider}:test-model", "--base-url", url) == 0
        # an OpenAI-compatible server is probed once for its structured-output support
        assert server.state.requests == (2 if provider == "openai" else 1)
    out = capsys.readouterr().out
    mode = "json_schema" if provider == "openai" else "native"
    assert f"native    {mode}" in out
    assert (
        f"{provider}:test-model  ok" in out
        and "latency" in out
        and "tokens" in out
        and "answer" in out
    )


def test_check_reports_failures_and_missing_keys(capsys: pytest.CaptureFixture) -> None:
    assert cli("llm", "check", "openai:gpt-4o") == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
    with WireServer(Faults(server_error=1.0)) as server:
        assert (
            cli("llm", "check", "openai:m", "--base-url", f"{server.url}/v1", "--retries", "0") == 1
        )
    assert "FAILED" in capsys.readouterr().err


@needs_local
def test_check_local(capsys: pytest.CaptureFixture) -> None:
    assert cli("llm", "check", "local", "--max-tokens", "4") == 0
    out = capsys.readouterr().out
    assert "local:SmolLM2-135M-Instruct.Q4_1.gguf  ok" in out


def test_cache_stats_and_clear(capsys: pytest.CaptureFixture) -> None:
    assert cli("llm", "cache", "clear") == 0  # nothing there yet
    cache_dir = Path(os.environ["MESA_DILEMMAS_CACHE_DIR"])
    cache = ResponseCache(cache_dir)
    for i, label in enumerate(["openai:a", "openai:a", "gemini:b"]):
        cache.put(f"k{i}", label, {}, ChatResponse("x"))
    capsys.readouterr()
    assert cli("llm", "cache", "stats", "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 3 and stats["by_model"] == {"gemini:b": 1, "openai:a": 2}
    assert cli("llm", "cache", "stats") == 0
    assert "openai:a  2" in capsys.readouterr().out
    assert cli("llm", "cache", "clear", "--model", "openai:a") == 0
    assert "deleted 2" in capsys.readouterr().out
    assert cli("llm", "cache", "clear", "--cache-dir", str(cache_dir)) == 0
    assert "deleted 1" in capsys.readouterr().out and cache.stats()["entries"] == 0
