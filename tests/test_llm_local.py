"""The real bundled model (SmolLM2-135M-Instruct): through the embedded ``local`` backend,
and through the ``openai`` backend against llama-cpp-python's OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_fixtures import (  # noqa: F401
    ACTION,
    EFFORT,
    llama_server_fixture,
    llm_env,
    needs_local,
    play,
)

from mesa_dilemmas.agents import Decision
from mesa_dilemmas.llm import LLMSettings, make_policy, session
from mesa_dilemmas.llm.accounting import load_calls
from mesa_dilemmas.llm.backends import local
from mesa_dilemmas.llm.checks import bundled_model_path
from mesa_dilemmas.llm.errors import LLMConfigError

pytestmark = [needs_local, pytest.mark.usefixtures("llm_env")]

SMALL = {"max_tokens": 40, "temperature": 0.7}


def test_local_native_mode_always_gives_valid_answers(tmp_path: Path) -> None:
    """JSON-schema grammar: the reply is well-formed, in range (integer ranges become enums)."""
    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    game = play(
        [make_policy("local", answer_mode="native", **SMALL) for _ in range(2)], rounds=1, phases=2
    )
    summary = session.finish_run()
    efforts, actions = game.answers
    assert all(EFFORT.validate(v) == v for v in efforts) and all(
        a in ACTION.options for a in actions
    )
    assert (
        game.broker.stats.total("fallbacks") == 0 and game.broker.stats.total("parse_failures") == 0
    )
    assert summary["provider_calls"] == 4 and summary["tokens_out"] > 0
    assert summary["by_model"]["local:SmolLM2-135M-Instruct.Q4_1.gguf"]["cost_usd"] == 0.0
    calls = list(load_calls(tmp_path / "run"))
    assert all(c["response"]["text"].lstrip().startswith("{") for c in calls)


def test_local_tags_mode_generates_and_parses_or_counts(tmp_path: Path) -> None:
    """SmolLM2-135M rarely follows the tag format (it is a 135M model); the layer must still
    get real text from it, try a corrective turn, and count every failure."""
    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    game = play(
        [make_policy("local", answer_mode="tags", answer_retries=1, **SMALL)], rounds=1, phases=2
    )
    summary = session.finish_run()
    stats = game.broker.stats
    assert stats.total("asked") == 2 == summary["decisions"]
    assert summary["fallbacks"] == stats.total("fallbacks")
    assert summary["parse_failures"] == stats.total("parse_failures")
    calls = list(load_calls(tmp_path / "run"))
    assert len(calls) == 2 + summary["retries"]
    assert all(c["response"]["text"].strip() and c["tokens_out"] > 0 for c in calls)
    for c in calls:
        if c["attempt"] == 1:  # a corrective turn carries the failed reply and the fix
            roles = [m["role"] for m in c["request"]["messages"]]
            assert roles == ["system", "user", "assistant", "user"]
            assert "could not be used" in c["request"]["messages"][-1]["content"]
    efforts, actions = game.answers
    assert EFFORT.validate(efforts[0]) == efforts[0] and actions[0] in ACTION.options


def test_local_is_deterministic_under_a_seed() -> None:
    def text(seed: int) -> str:
        pol = make_policy("local", cache=False, run_seed=seed, **SMALL)
        answer = asyncio.run(
            pol.adecide(Decision("unit.effort", EFFORT, {"stock": 40}, None, 1, 5))
        )
        return answer.raw

    first = text(1)
    assert first and text(1) == first  # same sample id, same text (no cache involved)
    assert text(2) != first  # another replication draws another sample


def test_a_shared_prompt_head_is_evaluated_once_and_the_text_does_not_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request that starts with the tokens the previous one started with reuses the context's
    evaluation of them (whole segments of ``EVAL_GRID`` tokens) -- and every text is the one the
    whole prompt evaluated at once gives, in whatever order the requests come."""
    from mesa_dilemmas.llm.request import ChatRequest, Message

    system = Message("system", "You fish a shared lake with four other villagers. " * 20)
    asks = [
        f"The lake holds {n} fish. " + "Last season the catch was poor. " * 12 + "How many now?"
        for n in (40, 35, 12)
    ]
    requests = [
        ChatRequest((system, Message("user", ask)), 0.7, 16, seed) for seed, ask in enumerate(asks)
    ]
    requests.insert(  # a corrective re-ask right after its first turn, which it repeats
        1,
        ChatRequest(
            (*requests[0].messages, Message("assistant", "Some."), Message("user", "A number.")),
            0.7,
            16,
            7,
        ),
    )
    other = ChatRequest((Message("user", "Name a fish."),), 0.7, 8, 3)
    backend = make_policy("local", cache=False).client.backend
    llm, lock, _, window = backend.sized_model([m.__dict__ for m in requests[1].messages], 16)
    key = (os.getpid(), backend.path, window, None, 512)
    reused: list[int] = []
    head = local.evaluate_prompt_head
    monkeypatch.setattr(
        local, "evaluate_prompt_head", lambda *a: (reused.append(n := head(*a)), n)[1]
    )

    def whole(request: ChatRequest) -> str:
        with lock:
            llm.reset()
            out = llm.create_chat_completion(
                messages=[m.__dict__ for m in request.messages],
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
            )
        return out["choices"][0]["message"]["content"]

    texts = [backend.complete_sync(r).text for r in requests]
    system_tokens = local.prompt_tokens(llm, [system.__dict__], key)
    assert system_tokens > local.EVAL_GRID
    assert reused[0] == 0  # the first one evaluates it all
    shared = system_tokens // local.EVAL_GRID * local.EVAL_GRID
    assert all(n >= shared for n in reused[1:])  # the system prompt is not evaluated again
    assert reused[1] > reused[2]  # the re-ask reuses the first turn's user message too
    backwards = []
    for request in reversed(requests):
        backend.complete_sync(other)
        backwards.append(backend.complete_sync(request).text)
    assert backwards[::-1] == texts
    assert [whole(r) for r in requests] == texts


def test_local_calls_are_serialised() -> None:
    pols = [make_policy("local", cache=False, run_seed=9, max_tokens=8) for _ in range(3)]
    decisions = [Decision("unit.act", ACTION, {}, None, 1, "cooperate") for _ in pols]

    async def main() -> None:
        await asyncio.gather(*(p.adecide(d) for p, d in zip(pols, decisions, strict=True)))

    asyncio.run(main())
    assert pols[0].client.limiter.peak_in_flight == 1


@pytest.mark.parametrize("mode", ["native", "tags"])
def test_openai_backend_against_llama_cpp_server(
    mode: str, llama_server: str, tmp_path: Path
) -> None:
    settings = {"providers": {"openai": {"schema_format": "json_object"}}, "answer_retries": 1}
    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    pols = [
        make_policy(f"openai:smollm2@{llama_server}", answer_mode=mode, **SMALL, **settings)
        for _ in range(2)
    ]
    game = play(pols, rounds=1, phases=2)
    summary = session.finish_run()
    assert summary["failed_calls"] == 0 and summary["tokens_out"] > 0
    assert summary["by_model"]["openai:smollm2"]["provider_calls"] == summary["provider_calls"] >= 4
    by_kind = game.broker.stats.by_kind()
    if mode == "native":  # the server's grammar makes every choice valid (enum)
        assert (
            by_kind["toy.action"]["fallbacks"] == 0 and by_kind["toy.action"]["parse_failures"] == 0
        )
    assert all(0 <= v <= 10 for v in game.answers[0]) and all(
        a in ACTION.options for a in game.answers[1]
    )
    calls = list(load_calls(tmp_path / "run"))
    assert all(c["response"]["text"] for c in calls)


def test_native_mode_probes_llama_cpp_server_and_answers(llama_server: str, tmp_path: Path) -> None:
    """No schema_format configured: the probe finds that llama-cpp-python's server rejects
    json_schema and takes json_object with the schema; the run answers, it does not fall back."""
    from mesa_dilemmas.llm.backends import openai as openai_backend

    openai_backend._PROBED.clear()
    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    pols = [
        make_policy(
            f"openai:smollm2@{llama_server}", answer_mode="native", answer_retries=1, **SMALL
        )
        for _ in range(2)
    ]
    game = play(pols, rounds=1, phases=2)
    summary = session.finish_run()
    assert openai_backend._PROBED[f"{llama_server}#smollm2"] == "json_object"
    assert summary["failed_calls"] == 0 and summary["fallbacks"] == 0, summary
    assert summary["modes"] == {"json_object": summary["attempts"]}
    assert all(0 <= v <= 10 for v in game.answers[0])
    assert all(a in ACTION.options for a in game.answers[1])
    calls = list(load_calls(tmp_path / "run"))
    assert {c["mode"] for c in calls} == {"json_object"}


# --- the probe: a crash of the native library is one line, not the end of the process ---------

SIGILL_SCRIPT = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"


@pytest.fixture
def fresh_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No probe remembered, in the process or on disk (a private cache root)."""
    monkeypatch.setattr(local, "_PROBED", set())
    monkeypatch.setattr(local, "default_cache_root", lambda: tmp_path / "user-cache")
    monkeypatch.delenv(local.PROBE_ENV, raising=False)
    return tmp_path / "user-cache" / "llama-probe"


def bundled_model() -> str:
    return str(bundled_model_path())


def test_probe_turns_a_child_killed_by_sigill_into_one_line(
    fresh_probe: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "sigill.py"
    script.write_text(SIGILL_SCRIPT + "\n")
    with pytest.raises(LLMConfigError) as caught:
        local.probe_native(bundled_model(), command=[sys.executable, str(script)])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("llm: the embedded model's native library (llama-cpp-python)")
    assert "SIGILL (illegal instruction)" in message and "AMX/AVX-512" in message
    assert "scripts/build_llama.sh" in message and '"-DGGML_NATIVE=OFF"' in message
    assert not fresh_probe.exists()  # a failed probe is not remembered

    with pytest.raises(LLMConfigError, match=r"SIGSEGV \(segmentation fault\)") as caught:
        local.probe_native(bundled_model(), command=["sh", "-c", "kill -SEGV $$"])
    assert "\n" not in str(caught.value)

    # through load_model: the probe runs before the first in-process load, which never happens
    monkeypatch.setattr(local, "PROBE_SCRIPT", SIGILL_SCRIPT)
    key = (os.getpid(), bundled_model(), 96, 1, 24)
    with pytest.raises(LLMConfigError, match="SIGILL"):
        local.load_model(bundled_model(), 96, 1, 24)
    assert key not in local._MODELS

    monkeypatch.setenv(local.PROBE_ENV, "0")  # the researcher's way out: no probe
    local.probe_native(bundled_model(), command=[sys.executable, str(script)])


def test_probe_passes_a_healthy_build_for_real_and_is_remembered(
    fresh_probe: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = bundled_model()
    local.probe_native(model)  # the real child: loads SmolLM2 and evaluates a few tokens
    stamps = list(fresh_probe.glob("*.ok"))
    assert len(stamps) == 1 and stamps[0].stem == local.probe_key(model)

    monkeypatch.setattr(local, "PROBE_SCRIPT", SIGILL_SCRIPT)  # would fail, if it ran again
    local.probe_native(model)  # remembered in the process
    local._PROBED.clear()
    local.probe_native(model)  # remembered on disk
    local._PROBED.clear()
    stamps[0].unlink()
    with pytest.raises(LLMConfigError, match="SIGILL"):
        local.probe_native(model)


def test_cli_reports_a_crashing_native_library_in_one_line(tmp_path: Path) -> None:
    """`llm check local` against a llama_cpp that dies of SIGILL as soon as it is imported (as a
    native build for a forbidden CPU feature can): exit 2 and one line, not a killed process."""
    fake = tmp_path / "site" / "llama_cpp"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(SIGILL_SCRIPT + "\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(fake.parent), os.environ.get("PYTHONPATH")])
        ),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    env.pop("MESA_DILEMMAS_LLAMA_PROBE", None)
    result = subprocess.run(
        [sys.executable, "-m", "mesa_dilemmas.cli", "llm", "check", "local"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert (
        lines[0].startswith("error: llm: the embedded model's native library")
        and "SIGILL" in lines[0]
    )
