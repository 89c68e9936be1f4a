"""The context window: a prompt is counted with the model's own tokenizer before the call;
it either fits (a window sized for it with n_ctx = "auto") or the run stops with one clear
ContextOverflow before anything is generated.  Corrective re-asks stay bounded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llm_fixtures import EFFORT, llm_env, needs_local  # noqa: F401
from llm_servers.responder import Reply
from llm_servers.wire import Faults, WireServer

from mesa_dilemmas.agents import Decision
from mesa_dilemmas.llm import ContextOverflow, LLMSettings, ProviderRejected, make_policy, session
from mesa_dilemmas.llm.accounting import load_calls
from mesa_dilemmas.llm.backends import local as local_backend
from mesa_dilemmas.llm.request import ChatRequest, Message

pytestmark = pytest.mark.usefixtures("llm_env")

#: ~1,100 tokens of SmolLM2's tokenizer
LONG = "The harbour master counts the boats that come in at dawn and writes them down. " * 70


def _decision(kind: str = "test.effort") -> Decision:
    return Decision(kind, EFFORT, {"fish_in_lake": 40}, None, 1, 5)


def _client(**local):
    policy = make_policy(
        "local",
        answer_mode="native",
        reasoning=False,
        max_tokens=32,
        temperature=0.0,
        local=local,
        run_seed=1,
    )
    return policy, policy.client


@needs_local
def test_prompt_tokens_match_what_llama_cpp_feeds() -> None:
    """The count before the call is exactly the prompt llama.cpp then reports using."""
    _, client = _client(n_ctx=2048)
    request = ChatRequest(
        (Message("system", "You count boats. " + LONG[:400]), Message("user", "How many?")),
        temperature=0.0,
        max_tokens=8,
        seed=3,
    )
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    _, _, counted, window = client.backend.sized_model(messages, request.max_tokens)
    response = client.backend.complete_sync(request)
    assert window == 2048
    assert counted == response.tokens_in > 50


@needs_local
def test_a_prompt_that_does_not_fit_stops_before_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """n_ctx = 512 and a ~1,100-token system text: ContextOverflow (a ProviderRejected, so the
    run stops with exit 3), naming the decision, the counts and the fix; nothing generated."""
    generated = []
    from llama_cpp import Llama

    original = Llama.create_chat_completion

    def spy(self, *args, **kwargs):
        generated.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Llama, "create_chat_completion", spy)
    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    policy = make_policy(
        "local", answer_mode="native", max_tokens=32, local={"n_ctx": 512}, system_prompt=LONG
    )
    with pytest.raises(ContextOverflow) as caught:
        asyncio.run(policy.adecide(_decision("test.effort")))
    session.finish_run()
    message = str(caught.value)
    assert isinstance(caught.value, ProviderRejected)
    assert "'test.effort'" in message and "n_ctx = 512" in message
    assert "set [llm.local] n_ctx = 2048" in message  # the fix: the window that would fit
    assert caught.value.window == 512 and caught.value.tokens > 1000
    assert "\n" not in message
    assert generated == []
    calls = list(load_calls(tmp_path / "run"))
    assert len(calls) == 1 and calls[0]["response"] is None and "n_ctx" in calls[0]["error"]


@needs_local
def test_auto_sizing_picks_the_smallest_window_that_fits() -> None:
    """n_ctx = "auto": a short prompt gets the minimum window, a ~1,900-token one a 4,096
    window (prompt + reply + room for a re-ask), one beyond the trained 8,192 a clear error."""
    local_backend._AUTO_WINDOWS.clear()
    local_backend.close_models()
    policy, client = _client(n_ctx="auto")
    backend = client.backend

    def size(text: str, max_tokens: int = 32) -> tuple[int, int, int]:
        messages = [{"role": "system", "content": text}, {"role": "user", "content": "Go."}]
        llm, _, tokens, window = backend.sized_model(messages, max_tokens)
        return tokens, window, llm.n_ctx()

    tokens, window, loaded = size("Short.")
    assert (window, loaded) == (2048, 2048) and tokens < 50
    probe = ChatRequest((Message("user", "Name three fruits."),), 0.7, 24, seed=11)
    text_small_window = backend.complete_sync(probe).text
    # ~1,340 tokens: prompt + reply + a re-ask's room (32 + 256) still fit 2,048
    tokens, window, loaded = size(LONG + LONG[:1000])
    assert 1300 < tokens < 2048 - 32 - 32 - 256 and window == loaded == 2048
    # ~1,900 tokens: the prompt and its reply fit 2,048, but not the room for a re-ask
    tokens, window, loaded = size(LONG + LONG[:3800])
    assert 2048 - 32 - 32 - 256 < tokens < 2048 - 32 and window == loaded == 4096
    # the window only grows: a short prompt later keeps the loaded model
    assert size("Short.")[1:] == (4096, 4096)
    # and the window does not change the text: same request, same answer
    assert backend.complete_sync(probe).text == text_small_window != ""
    # a real call through the layer answers in the grown window
    answer = asyncio.run(policy.adecide(_decision()))
    assert not answer.fell_back
    with pytest.raises(ContextOverflow, match=r"8192, the context this model was trained on"):
        size(LONG * 8)
    local_backend._AUTO_WINDOWS.clear()
    local_backend.close_models()


def test_reasks_keep_only_the_last_failed_attempt(tmp_path: Path) -> None:
    """Every answer is out of range: each re-ask has system, prompt, the last reply and its
    correction -- four messages, never more -- and the decision falls back after them."""
    with WireServer(responder=lambda req: Reply("<answer>99</answer>")) as server:
        session.start_run(LLMSettings(), tmp_path / "run", resume=False)
        policy = make_policy(
            f"openai:m@{server.url}/v1", answer_mode="tags", answer_retries=3, max_tokens=32
        )
        answer = asyncio.run(policy.adecide(_decision()))
        session.finish_run()
        sizes = [len(req.raw["messages"]) for req in server.state.seen]
    assert answer.fell_back and answer.parse_failures == 4
    calls = list(load_calls(tmp_path / "run"))
    assert [len(c["request"]["messages"]) for c in calls] == [2, 4, 4, 4]
    assert sizes == [2, 4, 4, 4]


@needs_local
def test_a_run_whose_prompt_does_not_fit_exits_3_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI: a bundled LLM scenario with a 512-token window stops at its first call."""
    from mesa_dilemmas.cli import main

    code = main(
        [
            "run",
            "port_of_mars/llm_svo",
            "--set",
            "replications=1",
            "--set",
            "params.n_rounds=1",
            "--set",
            "params.llm_players=1",
            "--set",
            "llm.local.n_ctx=512",
            "--out",
            str(tmp_path / "run"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3
    assert err.startswith("stopped: local:SmolLM2") and "n_ctx = 512" in err
    assert "set [llm.local] n_ctx = 2048" in err


def test_a_remote_context_rejection_stops_the_run_naming_the_decision(tmp_path: Path) -> None:
    """Remote prompts are counted by the provider: its "maximum context length" 400 is a
    ContextOverflow (the run stops), not a malformed request the decision falls back from."""
    with WireServer(Faults(always="context_400")) as server:
        session.start_run(LLMSettings(), tmp_path / "run", resume=False)
        policy = make_policy(f"openai:m@{server.url}/v1", answer_mode="tags", max_retries=0)
        with pytest.raises(ContextOverflow) as caught:
            asyncio.run(policy.adecide(_decision("test.effort")))
        session.finish_run()
        assert server.state.requests == 1  # no retry, no re-ask
    message = str(caught.value)
    assert "'test.effort'" in message and "HTTP 400" in message
    assert "maximum context length is 8192" in message and "\n" not in message
