"""The openai, anthropic and gemini backends through their real SDKs, against loopback
wire-format test servers (see ``tests/llm_servers/wire.py``), including injected faults."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_fixtures import ACTION, EFFORT, llm_env, play  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply, scripted_reply
from llm_servers.wire import Faults, WireServer

from mesa_dilemmas.agents import (
    ChoiceSpec,
    Decision,
    DecisionBroker,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.llm import make_policy, session
from mesa_dilemmas.llm.settings import LLMSettings

PROVIDERS = ("openai", "anthropic", "gemini")

pytestmark = pytest.mark.usefixtures("llm_env")


def spec_for(provider: str, url: str) -> str:
    return (
        f"{provider}:test-model@{url}/v1"
        if provider == "openai"
        else f"{provider}:test-model@{url}"
    )


def policies(provider: str, url: str, n: int, **settings) -> list:
    base = {"cache": False, "timeout_s": 5, **settings}
    return [make_policy(spec_for(provider, url), **base) for _ in range(n)]


def broker_answers(policy, decisions: list[Decision]) -> list:
    broker = DecisionBroker(narrator=policy)
    try:
        return broker.ask_all(decisions), broker.stats
    finally:
        broker.close()


STRUCT = StructSpec(
    {"offer": NumberSpec(0, 5, integer=True), "resource": ChoiceSpec(("science", "culture"))}
)
ALL_SPECS = [EFFORT, ACTION, STRUCT, ListSpec(NumberSpec(0, 1), max_items=3), TextSpec(300)]


@pytest.mark.parametrize("mode", ["tags", "native"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_answer_spec_in_both_modes(provider: str, mode: str) -> None:
    with WireServer() as server:
        pol = make_policy(spec_for(provider, server.url), answer_mode=mode, cache=False, run_seed=3)
        decisions = [
            Decision(f"unit.k{i}", s, {"stock": 40}, None, 1, None) for i, s in enumerate(ALL_SPECS)
        ]
        values, stats = broker_answers(pol, decisions)
        assert stats.total("fallbacks") == 0 and stats.total("parse_failures") == 0
        for spec, value in zip(ALL_SPECS, values, strict=True):
            assert spec.validate(value) == value
        # native mode on an OpenAI-compatible server: one probe of its structured output first
        probe = int(provider == "openai" and mode == "native")
        assert server.state.counts[f"api:{provider}"] == len(ALL_SPECS) + probe
        # the struct decision's request, as the SDK put it on the wire (a phase's requests
        # arrive in any order)
        (raw,) = [r.raw for r in server.state.seen if "Decision: k2." in r.last_user]
        if mode == "native":
            if provider == "openai":
                assert raw["response_format"]["type"] == "json_schema"
                assert (
                    raw["response_format"]["json_schema"]["schema"]["properties"]["answer"]
                    == STRUCT.json_schema()
                )
            elif provider == "anthropic":
                assert raw["tool_choice"] == {"type": "tool", "name": "answer"}
                assert (
                    raw["tools"][0]["input_schema"]["properties"]["answer"] == STRUCT.json_schema()
                )
            else:
                assert raw["generationConfig"]["responseMimeType"] == "application/json"
                assert (
                    raw["generationConfig"]["responseJsonSchema"]["properties"]["answer"]
                    == STRUCT.json_schema()
                )
        else:
            assert "response_format" not in raw and "tools" not in raw
            assert "responseJsonSchema" not in raw.get("generationConfig", {})
        if provider == "anthropic":
            # the system prompt in its own field, marked for Anthropic's prompt cache
            assert raw["system"][0]["text"].startswith("You are a player")
            assert raw["system"][0]["cache_control"] == {"type": "ephemeral"}
        if provider == "gemini":
            assert raw["systemInstruction"]["parts"][0]["text"].startswith("You are a player")
            assert isinstance(raw["generationConfig"]["seed"], int)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_refusals_fall_back_after_the_retry_budget(provider: str) -> None:
    with WireServer(Faults(refusal=1.0)) as server:
        pol = make_policy(spec_for(provider, server.url), cache=False, answer_retries=1)
        values, stats = broker_answers(
            pol, [Decision("unit.act", ACTION, {}, None, 1, "cooperate")]
        )
        assert values == ["cooperate"]
        rec = stats.records()[0]
        assert rec["fallbacks"] == 1 and rec["parse_failures"] == 2 and rec["retries"] == 1
        assert server.state.counts["refusal"] == 2


def correct_on_second_try(req: NormalizedRequest) -> Reply:
    """Answers without tags first; after the layer's corrective turn, answers properly."""
    if any("could not be used" in text for _, text in req.messages):
        return scripted_reply(req)
    return Reply("I have no idea what to answer.")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_invalid_answer_gets_a_corrective_turn(provider: str) -> None:
    with WireServer(responder=correct_on_second_try) as server:
        pol = make_policy(spec_for(provider, server.url), cache=False)
        values, stats = broker_answers(pol, [Decision("unit.effort", EFFORT, {}, None, 1, 5)])
        assert 0 <= values[0] <= 10
        rec = stats.records()[0]
        assert (rec["fallbacks"], rec["parse_failures"], rec["retries"]) == (0, 1, 1)
        second = server.state.seen[1].messages
        assert [r for r, _ in second] == ["user", "assistant", "user"]
        assert second[1][1] == "I have no idea what to answer."
        assert "no <answer>...</answer> tags" in second[2][1]


def _gaps(server: WireServer) -> list[tuple[str, int, float]]:
    """(fault, status of the next attempt of the same body, seconds between them)."""
    log = server.state.log
    out = []
    for i, entry in enumerate(log):
        later = [e for e in log[i + 1 :] if e.body_hash == entry.body_hash]
        if entry.fault and later:
            out.append((entry.fault, later[0].status, later[0].t - entry.t))
    return out


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_waits_for_retry_after(provider: str) -> None:
    with WireServer(Faults(script=["rate_limit", "rate_limit"], retry_after="1")) as server:
        pol = make_policy(spec_for(provider, server.url), cache=False)
        values, stats = broker_answers(pol, [Decision("unit.effort", EFFORT, {}, None, 1, 5)])
        assert stats.total("fallbacks") == 0
        gaps = _gaps(server)
        assert [g[0] for g in gaps] == ["rate_limit", "rate_limit"]
        assert all(gap >= 0.95 for _, _, gap in gaps), gaps  # Retry-After: 1 honoured
        assert [e.status for e in server.state.log] == [429, 429, 200]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_5xx_timeouts_and_truncated_bodies_are_retried(provider: str) -> None:
    faults = Faults(script=["server_error", "slow", "truncated"], slow_s=2.0)
    with WireServer(faults) as server:
        pol = make_policy(spec_for(provider, server.url), cache=False, timeout_s=0.5, max_retries=4)
        values, stats = broker_answers(pol, [Decision("unit.effort", EFFORT, {}, None, 1, 5)])
        assert stats.total("fallbacks") == 0 and 0 <= values[0] <= 10
        assert server.state.counts["server_error"] == 1
        assert server.state.counts["slow"] == 1 and server.state.counts["truncated"] == 1
        assert server.state.requests == 4  # three faults, then the answer


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_failure_stops_instead_of_falling_back(provider: str, tmp_path: Path) -> None:
    """A call that fails after its retries is not answered by the rule: ProviderFailed."""
    from mesa_dilemmas.llm.errors import ProviderFailed

    with WireServer(Faults(server_error=1.0)) as server:
        session.start_run(LLMSettings(cache=False), tmp_path / "run", resume=False)
        pol = make_policy(spec_for(provider, server.url), max_retries=1)
        with pytest.raises(ProviderFailed, match="gave up after 2 attempts"):
            broker_answers(pol, [Decision("unit.effort", EFFORT, {}, None, 1, 5)])
        summary = session.finish_run()
    assert summary["provider_calls"] == 1 and summary["failed_calls"] == 1
    assert summary["decisions"] == 0 and summary["fallbacks"] == 0
    assert server.state.requests == 2  # the first attempt and one retry


@pytest.mark.parametrize("provider", PROVIDERS)
def test_random_faults_run_completes_and_everything_is_counted(
    provider: str, tmp_path: Path
) -> None:
    faults = Faults(
        rate_limit=0.06,
        server_error=0.08,
        slow=0.04,
        truncated=0.06,
        refusal=0.06,
        invalid=0.08,
        retry_after="1",
        slow_s=4.0,
        seed=11,
    )
    run_dir = tmp_path / "run"
    # the client's timeout is far above a loopback answer even on a loaded machine (a request
    # that never reaches the server would break the count below) and far below a slow fault
    with WireServer(faults) as server:
        session.start_run(
            LLMSettings(cache=False, timeout_s=2.0, max_retries=3), run_dir, resume=False
        )
        game = play(
            policies(provider, server.url, 10, timeout_s=2.0, max_retries=3),
            rounds=2,
            phases=2,
            seed=5,
        )
        summary = session.finish_run()
    counts = server.state.counts
    assert not server.state.errors
    injected = {
        k: counts[k]
        for k in ("rate_limit", "server_error", "slow", "truncated", "refusal", "invalid")
    }
    assert sum(injected.values()) >= 5, injected
    # the run completed: every phase of every round got one valid answer per agent
    assert len(game.answers) == 4 and all(len(a) == 10 for a in game.answers)
    for k, answers in enumerate(game.answers):
        spec = EFFORT if k % 2 == 0 else ACTION
        assert all(spec.validate(v) == v for v in answers)
    # nothing lost: every decision and every call is in the run record
    stats = game.broker.stats
    assert summary["decisions"] == stats.total("asked") == 40
    assert summary["fallbacks"] == stats.total("fallbacks")
    assert summary["parse_failures"] == stats.total("parse_failures")
    assert summary["retries"] == stats.total("retries")
    assert summary["parse_failures"] >= 1  # refusals and invalid answers were caught
    assert summary["provider_calls"] == summary["calls"] == 40 + summary["retries"]
    ok_answers = sum(
        1 for e in server.state.log if e.status == 200 and e.fault not in ("truncated", "slow")
    )
    assert summary["provider_calls"] - summary["failed_calls"] <= ok_answers
    import pandas as pd

    calls = pd.read_parquet(run_dir / "llm_calls.parquet")
    decisions = pd.read_parquet(run_dir / "llm_decisions.parquet")
    assert len(decisions) == 40
    # every attempt is on the record: each request the server saw is one row, each injected
    # transport fault one failed attempt, and a call's retried attempts are marked
    transport_faults = sum(injected[k] for k in ("rate_limit", "server_error", "slow", "truncated"))
    assert len(calls) == summary["attempts"] == server.state.requests
    assert summary["failed_attempts"] == int(calls.error.notna().sum()) == transport_faults
    assert int((calls.retried == 0).sum()) == summary["provider_calls"]
    assert (
        summary["retried_attempts"]
        == int(calls.retried.sum())
        >= transport_faults - summary["failed_calls"]
    )
    by_model = next(iter(summary["by_model"].values()))
    assert by_model["decisions"] == 40 and by_model["attempts"] == len(calls)
    assert set(calls.agent_id) == {a.unique_id for a in game.players}
    assert calls.tokens_in[calls.error.isna()].gt(0).all()
