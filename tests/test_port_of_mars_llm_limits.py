"""Port of Mars LLM replies within their limits, reasoning by model, a neutral meeting writer.

- Every decision kind (every prompt file in ``dilemmas/port_of_mars/prompts/``, its spec from
  rule games and the LLM writer's meeting spec) fits its reply's token limit: the longest valid
  answer, with the reasoning field at the length the schema allows when reasoning is on, in
  both answer modes, at the bundled scenarios' settings and at the model's longest meeting and
  note lengths.  Counted with the conservative characters-per-token bound, and with the
  embedded model's own tokenizer when it is installed.
- ``[llm] reasoning = "auto"`` is on for the providers' APIs and OpenAI-compatible servers and
  the measured default on the embedded model; the record says which each decision used.
- The LLM meeting writer is told nothing about coins, port health spending or pledges, and its
  answer has no pledge field; corrections name only the fields the schema has.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from llm_fixtures import LOCAL_MISSING, llm_env  # noqa: F401  (fixture)
from test_port_of_mars_llm import TAGS, collected_decisions

from mesa_dilemmas.agents.decisions import Decision, InvalidAnswer, StructSpec, TextSpec
from mesa_dilemmas.dilemmas.port_of_mars.meeting import (
    meeting_spec,
    summaries_spec,
    writer_observation,
)
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.llm import make_policy, prompts, session
from mesa_dilemmas.llm.answers import (
    MIN_REASONING_CHARS,
    corrective_message,
    largest_answer,
    parse_native,
    reply_token_bound,
)
from mesa_dilemmas.llm.population import register_game_prompts
from mesa_dilemmas.llm.request import ChatResponse
from mesa_dilemmas.llm.settings import LOCAL_REASONING, LLMSettings
from mesa_dilemmas.llm.specs import parse_spec

PACKAGE = Path(__file__).resolve().parents[1] / "mesa_dilemmas" / "dilemmas" / "port_of_mars"
SCENARIOS = sorted((PACKAGE / "scenarios").glob("llm_*.toml"))
PROMPT_KINDS = {f"port_of_mars.{p.stem}" for p in (PACKAGE / "prompts").glob("*.toml")}

#: our own words, to stand in for a model's reasoning and free text when counting real tokens
PROSE = (
    "The port lost health to wear again, and two events could come next round. "
    "I want points, but a collapse leaves everyone with nothing, so I weigh both. "
)


def _scenario_llm(path: Path) -> dict:
    return tomllib.loads(path.read_text())["llm"]


@pytest.fixture(scope="module")
def by_kind() -> dict[str, list[Decision]]:
    """Every kind's decisions from rule games, plus the LLM writer's meeting (its spec has the
    conversation only) at the default and the longest meeting and note lengths."""
    register_game_prompts(PortOfMarsModel)
    out = collected_decisions(seeds=range(4), rounds=4)
    out["port_of_mars.meeting"] = []  # the rule writer's spec (pledges, market) is not an LLM's
    for chars, notes in ((900, 240), (1000, 400)):  # the defaults, the parameters' maxima
        m = PortOfMarsModel(rng=1, meeting_chars=chars, summary_chars=notes)
        m.meeting_market = False  # what an LLM writer gets
        obs = writer_observation(m)
        out["port_of_mars.meeting"].append(Decision("port_of_mars.meeting", meeting_spec(m), obs))
        notes_obs = {
            "round": 1,
            "conversation": "Curator: hello.",
            "roles_text": ", ".join(m.roles),
            "summary_chars": notes,
        }
        out["port_of_mars.meeting_summaries"].append(
            Decision("port_of_mars.meeting_summaries", summaries_spec(m), notes_obs)
        )
    return out


def _largest_per_kind(by_kind: dict[str, list[Decision]]) -> dict[str, Decision]:
    return {k: max(ds, key=lambda d: reply_token_bound(d.spec)) for k, ds in by_kind.items()}


def test_the_collection_covers_every_prompt_file(by_kind):
    assert set(by_kind) == PROMPT_KINDS == set(TAGS)


@pytest.mark.parametrize("reasoning", [True, False])
@pytest.mark.parametrize("mode", ["native", "tags"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_every_decision_reply_fits_its_token_limit(by_kind, scenario, mode, reasoning):
    table = {**_scenario_llm(scenario), "reasoning": reasoning}
    table.pop("answer_mode", None)
    settings = LLMSettings.from_table(table)
    for kind, decisions in by_kind.items():
        for d in decisions:
            p = prompts.render(
                d,
                mode=mode,
                persona=getattr(d.agent, "persona", None),
                round_=1,
                reasoning=reasoning,
                reasoning_max_chars=settings.reasoning_max_chars,
                max_tokens=settings.max_tokens,
            )
            assert p.max_tokens is not None and p.max_tokens >= settings.max_tokens
            asks = reasoning or mode == "tags"  # tags mode always reasons in prose
            assert p.reasoning == asks
            shortest = min(MIN_REASONING_CHARS, settings.reasoning_max_chars)
            if mode == "native":
                field = p.schema["properties"].get("reasoning")
                expected = ["reasoning", "answer"] if reasoning else ["answer"]
                assert list(p.schema["properties"]) == expected, kind
                chars = field["maxLength"] if field else 0
            else:  # prose before the tagged answer: room for at least a short reasoning
                chars = shortest
            if asks:
                assert chars >= shortest, kind
            bound = reply_token_bound(d.spec, chars)
            assert bound <= p.max_tokens, (kind, bound, p.max_tokens)
            if kind not in ("port_of_mars.meeting", "port_of_mars.meeting_summaries"):
                # a player's decision keeps the scenario's limit and nearly all its reasoning
                # (the largest trade offer leaves 777 of 800 characters)
                assert p.max_tokens == settings.max_tokens, kind
                if mode == "native" and reasoning:
                    assert chars >= 0.9 * settings.reasoning_max_chars, kind


def test_only_the_writer_needs_more_than_the_scenarios_limit(by_kind):
    """At max_tokens = 400 the notes of five players (5 x 240 characters) need more; the
    conversation alone fits, and reasoning shrinks to what it leaves."""
    largest = _largest_per_kind(by_kind)
    needs = {kind: reply_token_bound(d.spec) for kind, d in largest.items()}
    assert {k for k, n in needs.items() if n > 400} == {"port_of_mars.meeting_summaries"}
    default = next(
        d for d in by_kind["port_of_mars.meeting"] if set(d.spec.fields) == {"conversation"}
    )
    p = prompts.render(default, mode="native", reasoning=True, max_tokens=400)
    assert p.max_tokens == 400
    assert MIN_REASONING_CHARS <= p.schema["properties"]["reasoning"]["maxLength"] < 800


def _realistic(value):
    """The largest answer with its free text as English prose rather than one letter."""
    if isinstance(value, str) and value and set(value) == {"x"}:
        return (PROSE * (len(value) // len(PROSE) + 1))[: len(value)]
    if isinstance(value, dict):
        return {k: _realistic(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_realistic(v) for v in value]
    return value


@pytest.mark.skipif(LOCAL_MISSING is not None, reason=LOCAL_MISSING or "")
@pytest.mark.parametrize("reasoning", [True, False])
def test_the_bound_holds_for_the_embedded_models_tokenizer(by_kind, reasoning):
    from llama_cpp import Llama

    from mesa_dilemmas.llm import bundled_model_path

    vocab = Llama(model_path=str(bundled_model_path()), vocab_only=True, verbose=False)
    for kind, d in _largest_per_kind(by_kind).items():
        p = prompts.render(d, mode="native", reasoning=reasoning, max_tokens=400)
        field = p.schema["properties"].get("reasoning")
        reply: dict = {"reasoning": "x" * field["maxLength"]} if field else {}
        reply["answer"] = largest_answer(d.spec)
        text = json.dumps(_realistic(reply))
        tokens = len(vocab.tokenize(text.encode(), add_bos=False, special=False))
        assert tokens <= reply_token_bound(d.spec, field["maxLength"] if field else 0), kind
        assert tokens <= p.max_tokens, (kind, tokens, p.max_tokens)


def test_largest_answers_are_valid_but_for_cross_field_rules(by_kind):
    for kind, d in _largest_per_kind(by_kind).items():
        value = largest_answer(d.spec)
        try:
            assert d.spec.validate(value) is not None
        except InvalidAnswer as exc:  # a budget or "one side of an offer": only shorter
            assert any(s in str(exc) for s in ("you spent", "you kept", "both sides")), kind


# -- reasoning by model ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("openai:gpt-4o", True),
        ("openai:qwen@http://127.0.0.1:8000/v1", True),
        ("anthropic", True),
        ("gemini:gemini-2.5-flash", True),
        ("replay:openai:gpt-4o", True),
        ("local", LOCAL_REASONING),
        ("replay", LOCAL_REASONING),
        ("local:/models/x.gguf", LOCAL_REASONING),
    ],
)
def test_reasoning_auto_depends_on_the_model(spec, expected):
    settings = LLMSettings()
    assert settings.reasoning == "auto"
    assert settings.reasoning_for(parse_spec(spec)) is expected
    for explicit in (True, False):
        assert LLMSettings(reasoning=explicit).reasoning_for(parse_spec(spec)) is explicit


def test_the_port_of_mars_scenarios_leave_reasoning_to_the_model():
    for path in SCENARIOS:
        table = _scenario_llm(path)
        assert "reasoning" not in table, path.name
        settings = LLMSettings.from_table(table)
        assert settings.reasoning_for(parse_spec("openai:gpt-4o")) is True
        assert settings.reasoning_for(parse_spec("local")) is LOCAL_REASONING


@pytest.mark.usefixtures("llm_env")
def test_the_record_says_whether_each_decision_reasoned(tmp_path, by_kind):
    d = by_kind["port_of_mars.health_plan"][0]
    settings = LLMSettings(answer_mode="native", dry_run=True, max_tokens=400)
    session.start_run(settings, tmp_path / "run", resume=False)
    for spec in ("openai:gpt-4o", "local"):
        policy = make_policy(spec, settings=settings)
        answer = policy.decide(Decision(d.kind, d.spec, d.observation, None, 1, d.fallback))
        assert not answer.fell_back
    summary = session.finish_run()
    import pandas as pd

    decisions = pd.read_parquet(tmp_path / "run" / "llm_decisions.parquet")
    calls = pd.read_parquet(tmp_path / "run" / "llm_calls.parquet")
    used = dict(zip(decisions.policy, decisions.reasoning, strict=True))
    assert used["llm:openai:gpt-4o"] == 1
    assert used["llm:local:SmolLM2-135M-Instruct.Q4_1.gguf"] == int(LOCAL_REASONING)
    assert sorted(calls.reasoning) == sorted(decisions.reasoning)
    on = 1 + int(LOCAL_REASONING)
    assert summary["reasoning"] == {k: v for k, v in (("on", on), ("off", 2 - on)) if v}
    assert summary["by_model"]["openai:gpt-4o"]["reasoning"] == {"on": 1}
    for _, call in calls.iterrows():
        schema = json.loads(call.request)["schema"]
        assert ("reasoning" in schema["properties"]) == bool(call.reasoning)


# -- the meeting writer ----------------------------------------------------------------------


def test_the_llm_meeting_writer_is_told_nothing_that_steers(by_kind):
    template = tomllib.loads((PACKAGE / "prompts" / "meeting.toml").read_text())
    for words in ("pledge", "coin", "port health this round", "resources they need", "alive"):
        assert words not in template["user"].lower(), words
    d = next(d for d in by_kind["port_of_mars.meeting"] if set(d.spec.fields) == {"conversation"})
    for mode in ("native", "tags"):
        p = prompts.render(d, mode=mode, reasoning=False, max_tokens=400)
        asked = p.user.split(d.observation["meeting_brief"], 1)[1].lower()
        assert "pledge" not in asked and "coin" not in asked, asked
        assert "whatever they choose" in asked
    assert isinstance(d.spec, StructSpec) and set(d.spec.fields) == {"conversation"}
    assert isinstance(d.spec.fields["conversation"], TextSpec)


def test_the_rule_writer_still_records_pledges_and_the_market():
    m = PortOfMarsModel(rng=3, n_rounds=1)
    m.step()
    assert m.meeting_market and set(meeting_spec(m).fields) == {
        "conversation",
        "pledges",
        "offers",
        "needs",
    }
    assert m.pledges  # the rule narrator's pledges still drive the rule players


def test_corrections_name_only_the_fields_the_schema_has(by_kind):
    d = by_kind["port_of_mars.meeting"][-1]
    for reasoning in (True, False):
        p = prompts.render(d, mode="native", reasoning=reasoning, max_tokens=400)
        fix = corrective_message("no answer", d.spec, "native", p.tag, p.schema)
        assert ("reasoning" in fix) is reasoning, fix
        assert '"answer"' in fix
        cut = ChatResponse(text='{"answer": {"conversation": "Curator: we', finish_reason="length")
        with pytest.raises(InvalidAnswer) as err:
            parse_native(cut, d.spec, reasoning=reasoning)
        assert ("reasoning" in str(err.value)) is reasoning, str(err.value)
