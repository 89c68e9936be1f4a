"""The embedded model's answer grammar: llama.cpp can build it for every decision the fishery and
the binary games ask (and for very long text fields), and it keeps numeric answers in range."""

from __future__ import annotations

import json

import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401

from mesa_dilemmas.agents.decisions import ChoiceSpec, ListSpec, NumberSpec, StructSpec, TextSpec
from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.dilemmas.binary.rules import ACTION_SPEC
from mesa_dilemmas.dilemmas.fishery import model as fishery
from mesa_dilemmas.llm.answers import native_schema
from mesa_dilemmas.llm.backends.local import GRAMMAR_MAX_REPEAT, grammar_schema


def test_ranges_become_enums_and_long_repeats_are_left_open():
    assert grammar_schema(NumberSpec(0.0, 1.0).json_schema())["enum"][:3] == [0.0, 0.01, 0.02]
    assert grammar_schema(NumberSpec(0.0, 1.0).json_schema())["enum"][-1] == 1.0
    assert grammar_schema(NumberSpec(0, 30).json_schema())["enum"][:3] == [0.0, 0.5, 1.0]
    assert grammar_schema(NumberSpec(0, 10, integer=True).json_schema()) == {
        "enum": list(range(11))
    }
    assert "enum" not in grammar_schema(
        NumberSpec(0.0, 1e6).json_schema()
    )  # too wide: validator only
    assert grammar_schema(TextSpec(max_chars=400).json_schema())["maxLength"] == 400
    assert "maxLength" not in grammar_schema(TextSpec(max_chars=20_000).json_schema())
    assert "maxItems" not in grammar_schema(
        ListSpec(ChoiceSpec(("a",)), max_items=5_000).json_schema()
    )
    assert GRAMMAR_MAX_REPEAT < 1_000


def decision_specs() -> dict[str, object]:
    """Every answer spec the fishery and the binary games ask, plus long text fields."""
    ids = tuple(str(i) for i in range(1, 11))
    proposals = (
        fishery.cap_sentence(5.0),
        "Keep effort at 0.6 or lower so the lake can regrow. " * 7,
    )
    return {
        "fishery.effort": fishery.EFFORT,
        "fishery.propose (number)": fishery.CAP,
        "fishery.propose (text)": fishery.PROPOSAL_TEXT,
        "fishery.imitate": fishery.COPY_OR_KEEP,
        "fishery.norms": fishery.NORMS,
        "fishery.punish": ChoiceSpec((*ids, fishery.NO_ONE)),
        "fishery.vote": ChoiceSpec(proposals),
        "binary.action": ACTION_SPEC,
        "long text (20,000 chars)": StructSpec(
            {"conversation": TextSpec(max_chars=20_000), "summary": TextSpec(max_chars=2_000)}
        ),
    }


@needs_local
def test_llama_cpp_builds_the_grammar_of_every_decision():
    from llama_cpp import Llama, llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

    from mesa_dilemmas.llm import bundled_model_path

    llm = Llama(model_path=str(bundled_model_path()), vocab_only=True, verbose=False)
    failed = []
    for name, spec in decision_specs().items():
        for reasoning, max_chars in ((False, 800), (True, 800), (True, 20_000)):
            schema = grammar_schema(native_schema(spec, reasoning=reasoning, max_chars=max_chars))
            grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            sampler = llama_cpp.llama_sampler_init_grammar(
                llm._model.vocab, grammar._grammar.encode(), grammar._root.encode()
            )
            if not sampler:
                failed.append((name, reasoning, max_chars))
            else:
                llama_cpp.llama_sampler_free(sampler)
    assert failed == []


@needs_local
@pytest.mark.usefixtures("llm_env")
def test_embedded_model_effort_answers_are_in_range(tmp_path):
    from mesa_dilemmas.llm import LLMSettings, make_policy, session

    session.start_run(LLMSettings(), tmp_path / "run", resume=False)
    model = build_model(
        fishery.FisheryModel,
        {"n_agents": 4, "llm_agents": 4, "llm": "replay", "population": "typed"},
        3,
    )
    for v in model.villagers:
        policy = make_policy(
            "local", answer_mode="native", reasoning=False, max_tokens=12, temperature=1.0
        )
        policy.bind(v)
        v.policy = policy
    model.phase_harvest()
    session.finish_run()
    stats = model.broker.stats
    assert stats.total("asked") == 4
    assert stats.total("fallbacks") == 0 and stats.total("parse_failures") == 0
    assert all(0.0 <= e <= 1.0 for e in model.seats.get("effort"))
