"""Exact records: every call records the parameters as the server received them, the dated
snapshot the provider named, its system fingerprint and the prompt-cache reads; reasoning
models get only the parameters they take; settings a model refuses are one line before the
run.  Against the loopback wire servers, through the real SDKs."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_fixtures import llm_env  # noqa: F401  (fixture)
from llm_servers.wire import WireServer

from mesa_dilemmas.agents import Decision, NumberSpec
from mesa_dilemmas.agents.broker import DecisionBroker
from mesa_dilemmas.llm import LLMConfigError, make_policy, session
from mesa_dilemmas.llm.accounting import PriceTable, bundled_prices, load_calls, prices_checked
from mesa_dilemmas.llm.checks import check_parameters
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import parse_spec

pytestmark = pytest.mark.usefixtures("llm_env")

EFFORT = NumberSpec(0, 10, integer=True)

GEMINI_CONFIG = {  # generationConfig field (camelCase on the wire) -> the SDK's name
    "temperature": "temperature",
    "maxOutputTokens": "max_output_tokens",
    "seed": "seed",
    "candidateCount": "candidate_count",
    "topP": "top_p",
    "responseMimeType": "response_mime_type",
    "thinkingConfig": "thinking_config",
}


def _ask(spec: str, n: int = 3, run_seed: int | None = None, **settings) -> None:
    policy = make_policy(spec, run_seed=run_seed, **settings)
    broker = DecisionBroker(narrator=policy)
    try:
        broker.ask_all([Decision("unit.effort", EFFORT, {"i": i}, None, 1, 5) for i in range(n)])
    finally:
        broker.close()


def _run(tmp_path: Path, spec: str, snapshot: str | None = None, n: int = 3, **settings):
    with WireServer(snapshot=snapshot) as server:
        spec = spec.format(url=server.url)
        session.start_run(LLMSettings(cache=False, **settings), tmp_path / "run", resume=False)
        _ask(spec, n=n, cache=False, **settings)
        session.finish_run()
        seen = list(server.state.seen)
    calls = [c for c in load_calls(tmp_path / "run") if c["source"] == "provider"]
    assert len(calls) == len(seen) == n
    return calls, seen


def _by_body(calls, seen, body_key):
    """Pair each recorded call with the request the server received (same messages)."""
    out = []
    for call in calls:
        user = call["request"]["messages"][-1]["content"]
        match = [s for s in seen if s.messages[-1][1] == user]
        assert len(match) == 1
        out.append((call, match[0].raw))
    return out


@pytest.mark.parametrize("temperature", [0.3, 1.4])
def test_openai_records_the_parameters_the_server_received(tmp_path, temperature):
    calls, seen = _run(
        tmp_path, "openai:gpt-4o@{url}/v1", snapshot="gpt-4o-2024-08-06", temperature=temperature
    )
    for call, raw in _by_body(calls, seen, "messages"):
        sent = {k: v for k, v in raw.items() if k != "messages"}
        assert call["params"] == sent and sent["temperature"] == temperature
        assert call["snapshot"] == "gpt-4o-2024-08-06" and call["fingerprint"] == "fp_loopback"


def test_openai_reasoning_models_get_only_what_they_take(tmp_path):
    calls, seen = _run(tmp_path, "openai:gpt-5-mini@{url}/v1", reasoning_effort="low")
    for call, raw in _by_body(calls, seen, "messages"):
        assert "temperature" not in raw and "top_p" not in raw and "max_tokens" not in raw
        assert raw["max_completion_tokens"] == 512 and raw["reasoning_effort"] == "low"
        assert call["params"] == {k: v for k, v in raw.items() if k != "messages"}


def test_anthropic_records_what_was_sent_temperature_included(tmp_path):
    calls, seen = _run(
        tmp_path,
        "anthropic:claude-haiku-4-5@{url}",
        snapshot="claude-haiku-4-5-20251001",
        temperature=0.4,
    )
    for call, raw in _by_body(calls, seen, "messages"):
        sent = {k: v for k, v in raw.items() if k not in ("messages", "system")}
        assert call["params"] == sent and sent["temperature"] == 0.4  # sent, not dropped
        assert raw["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert call["snapshot"] == "claude-haiku-4-5-20251001"
    # the stable prefix was written to the prompt cache once, then read from it
    assert sorted(c["cache_write_tokens"] > 0 for c in calls) == [False, False, True]
    assert sum(c["cached_tokens"] > 0 for c in calls) == 2


def test_gemini_records_the_generation_config_sent(tmp_path):
    calls, seen = _run(
        tmp_path, "gemini:gemini-2.5-flash@{url}", temperature=0.9, thinking_budget=0
    )
    for call, raw in _by_body(calls, seen, "contents"):
        config = raw["generationConfig"]
        recorded = call["params"]
        for wire, name in GEMINI_CONFIG.items():
            if wire == "thinkingConfig":
                budget = config[wire].get("thinkingBudget", config[wire].get("thinking_budget"))
                assert budget == recorded[name]["thinking_budget"] == 0
            elif wire in config:
                assert config[wire] == recorded[name], wire
        assert recorded["temperature"] == 0.9 and recorded["model"] == "gemini-2.5-flash"


def test_cached_prompt_tokens_are_counted_and_priced(tmp_path):
    calls, _ = _run(tmp_path, "openai:gpt-4o-mini@{url}/v1")
    # the first request the server received wrote the prefix, every later one read it; the
    # calls may reach the server in either order, so count rather than take the first record
    cached = [c["cached_tokens"] for c in calls]
    assert sorted(n > 0 for n in cached) == [False] + [True] * (len(cached) - 1)
    entry = bundled_prices()["openai"]["gpt-4o-mini"]
    for c in calls:
        plain = c["tokens_in"] - c["cached_tokens"]
        expected = (
            plain * entry.input
            + c["cached_tokens"] * entry.cached_input
            + c["tokens_out"] * entry.output
        ) / 1e6
        assert c["cost_usd"] == pytest.approx(expected)


def test_a_cached_answer_of_an_older_snapshot_is_not_reused(tmp_path):
    spec_tpl = "openai:gpt-4o@{url}/v1"
    with WireServer(snapshot="gpt-4o-2024-08-06") as server:
        url = server.url
        _ask(spec_tpl.format(url=url), n=2, run_seed=1)
        _ask(spec_tpl.format(url=url), n=2, run_seed=1)  # from the cache
        assert server.state.requests == 2
        server.state.snapshot = "gpt-4o-2024-11-20"  # the alias now names a newer snapshot
        _ask(spec_tpl.format(url=url), n=1, run_seed=2)  # a new question: learns the snapshot
        _ask(spec_tpl.format(url=url), n=2, run_seed=1)  # the older snapshot's: asked again
        assert server.state.requests == 2 + 1 + 2
        _ask(spec_tpl.format(url=url), n=2, run_seed=1)  # the new snapshot's: from the cache
        assert server.state.requests == 5


@pytest.mark.parametrize(
    ("spec", "settings", "words"),
    [
        ("openai:o3", {"temperature": 0.2}, "llm.temperature: openai:o3 is a reasoning model"),
        ("openai:gpt-5", {"top_p": 0.9}, "llm.top_p: openai:gpt-5 is a reasoning model"),
        (
            "anthropic:claude-sonnet-4-5",
            {"thinking_budget": 2048, "temperature": 0.2},
            "llm.temperature: anthropic:claude-sonnet-4-5 with thinking",
        ),
        (
            "anthropic:claude-sonnet-4-5",
            {"thinking_budget": 2048, "answer_mode": "native"},
            "llm.answer_mode:",
        ),
        ("anthropic:claude-sonnet-4-5", {"thinking_budget": 100}, "llm.thinking_budget:"),
    ],
)
def test_settings_a_model_refuses_are_one_line(spec, settings, words):
    with pytest.raises(LLMConfigError) as err:
        check_parameters(parse_spec(spec), LLMSettings(**settings))
    assert str(err.value).startswith(words) and "\n" not in str(err.value)
    check_parameters(parse_spec(spec), LLMSettings())  # the defaults are fine


def test_the_price_table_covers_current_models_and_states_its_date():
    table = PriceTable()
    for label in [
        "openai:gpt-5",
        "openai:gpt-5-mini-2025-08-07",
        "openai:gpt-5-nano",
        "openai:gpt-4.1",
        "openai:gpt-4.1-mini",
        "openai:gpt-4.1-nano",
        "openai:gpt-4o",
        "openai:gpt-4o-mini",
        "openai:o3",
        "openai:o4-mini",
        "anthropic:claude-opus-4-1-20250805",
        "anthropic:claude-opus-4-5",
        "anthropic:claude-sonnet-4-5-20250929",
        "anthropic:claude-haiku-4-5",
        "gemini:gemini-2.5-pro",
        "gemini:gemini-2.5-flash",
        "gemini:gemini-2.5-flash-lite",
    ]:
        entry = table.price(label)
        assert entry is not None and entry.cached_input is not None, label
        assert entry.batch_input is not None and entry.batch_output is not None, label
    assert table.price("anthropic:claude-opus-4-5-20251101").input == 5.0  # not opus-4's 15
    assert table.price("gemini:gemini-2.5-flash-lite").input == 0.10
    assert len(prices_checked()) == 10 and prices_checked().startswith("20")
    assert table.cost("openai:gpt-5", 1_000_000, 0, batch=True) == pytest.approx(0.625)
    # the 2026 models have their own entries: a dated gpt-5.4-mini is not priced as gpt-5
    for label, price in [
        ("openai:gpt-5.4-mini-2026-03-17", 0.75),
        ("openai:gpt-5.5", 5.0),
        ("anthropic:claude-sonnet-5-5", 2.0),
        ("gemini:gemini-3-flash-preview", 0.5),
    ]:
        assert table.price(label).input == price, label
    assert table.cost("openai:gpt-5.4-mini", 0, 1_000_000, batch=True) == pytest.approx(2.25)


def test_an_unpriced_model_refuses_a_budgeted_run():
    from mesa_dilemmas.llm.checks import check_spec

    settings = LLMSettings(budget={"max_cost_usd": 1.0})
    with pytest.raises(LLMConfigError, match=r'\[llm.prices."openai:my-model"\]'):
        check_spec(parse_spec("openai:my-model@http://127.0.0.1:9/v1"), settings)
