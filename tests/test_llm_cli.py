"""``mesa-dilemmas llm check|cache stats|cache clear`` through the command line's ``main``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.responder import Reply
from llm_servers.wire import Faults, WireServer

from mesa_dilemmas.cli import main
from mesa_dilemmas.llm.request import ChatResponse
from mesa_dilemmas.llm.stores.cache import ResponseCache

pytestmark = pytest.mark.usefixtures("llm_env")


def cli(*argv: str) -> int:
    return main(list(argv))


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
    # the scripted server answers with a sentence, not the word asked for: reachable, and said
    assert (
        f"{provider}:test-model  reachable, but the answer is not the expected 'OK'" in out
        and "latency" in out
        and "tokens" in out
        and "answer" in out
        and "expected  no" in out
    )


@pytest.mark.parametrize(
    ("reply", "finish", "status", "expected"),
    [
        ("OK.", "stop", "ok", "yes"),
        ("I'm sorry for your loss, and", "length", "reachable, but the answer is not", "no"),
    ],
)
def test_check_says_whether_the_answer_was_the_expected_one(
    reply: str, finish: str, status: str, expected: str, capsys: pytest.CaptureFixture
) -> None:
    """One server answers OK, one answers something else and is cut off at the length limit:
    the check says which, with the finish reason and the prompt's token count."""
    with WireServer(responder=lambda req: Reply(reply, finish_reason=finish)) as server:
        assert cli("llm", "check", "openai:m", "--base-url", f"{server.url}/v1") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"openai:m  {status}")
    assert f"expected  {expected}  ('Reply with the single word OK.')" in out
    assert f"finish    {finish}" in out
    if finish == "length":
        assert "cut off at --max-tokens 16" in out
    tokens_in = int(out.split("tokens    ")[1].split(" in")[0])
    assert tokens_in > 0
    assert f"window not known tokens; the check prompt is {tokens_in} tokens" in out


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
    assert out.startswith("local:SmolLM2-135M-Instruct.Q4_1.gguf  ")
    answer = out.split("answer    ")[1].splitlines()[0]
    said_ok = answer.strip("'\" .").lower() == "ok"
    assert f"expected  {'yes' if said_ok else 'no'}" in out
    # the local backend counts the prompt with the model's tokenizer: the same as it used
    tokens_in = int(out.split("tokens    ")[1].split(" in")[0])
    assert f"window 2048 tokens; the check prompt is {tokens_in} tokens" in out


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
