"""The shared decision interface: specs, the broker, fallbacks and concurrency."""

from __future__ import annotations

import asyncio
import contextvars

import mesa
import pytest

from mesa_dilemmas.agents import (
    Answer,
    ChoiceSpec,
    Decision,
    DilemmaAgent,
    FixedPolicy,
    InvalidAnswer,
    ListSpec,
    NumberSpec,
    Persona,
    Policy,
    RulePolicy,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.dilemmas.base import DilemmaModel
from mesa_dilemmas.dilemmas.port_of_mars.persona import CrewPersona


def test_number_spec_accepts_range_and_rejects_outside():
    spec = NumberSpec(0.0, 1.0)
    assert spec.validate("0.25") == 0.25
    assert spec.validate(1) == 1.0
    for bad in (-0.01, 1.5, "abc", float("nan"), True, None):
        with pytest.raises(InvalidAnswer):
            spec.validate(bad)
    assert NumberSpec(0, 10, integer=True).validate("3") == 3
    with pytest.raises(InvalidAnswer):
        NumberSpec(0, 10, integer=True).validate(2.5)


def test_choice_spec_is_case_insensitive_but_exact_otherwise():
    spec = ChoiceSpec(("C", "D", "none"))
    assert spec.validate(" c ") == "C"
    assert spec.validate("NONE") == "none"
    with pytest.raises(InvalidAnswer, match="expected one of"):
        spec.validate("cooperate")


def test_text_struct_and_list_specs():
    offer = StructSpec(
        {
            "give": ChoiceSpec(("science", "finance")),
            "amount": NumberSpec(1, 5, integer=True),
            "note": TextSpec(max_chars=20),
        },
        optional=frozenset({"note"}),
    )
    assert offer.validate({"give": "science", "amount": 2}) == {
        "give": "science",
        "amount": 2,
        "note": None,
    }
    with pytest.raises(InvalidAnswer, match="amount"):
        offer.validate({"give": "science", "amount": 9})
    with pytest.raises(InvalidAnswer, match="unknown fields"):
        offer.validate({"give": "science", "amount": 2, "bribe": 1})
    with pytest.raises(InvalidAnswer, match="longer than"):
        TextSpec(max_chars=5).validate("too long text")
    assert ListSpec(NumberSpec(0, 1), max_items=2).validate([0.1, 0.2]) == [0.1, 0.2]
    schema = offer.json_schema()
    assert schema["required"] == ["give", "amount"] and schema["additionalProperties"] is False


class _Toy(DilemmaModel):
    PHASES = ("act",)

    def __init__(self, policies, rng=None):
        super().__init__(rng=rng)
        self.players = [DilemmaAgent(self, p, Persona()) for p in policies]
        self.answers = []

    def phase_act(self):
        self.answers = self.ask_all(
            [
                Decision("toy.move", ChoiceSpec(("C", "D")), {}, a, self.round, fallback="D")
                for a in self.players
            ]
        )


class _Rule(RulePolicy):
    def move(self, decision):
        return "C"


class _Broken(Policy):
    name = "broken"
    strict = False

    def decide(self, decision):
        return Answer("maybe", raw="maybe", retries=2, parse_failures=2)


def test_broker_routes_validates_and_counts():
    model = _Toy([_Rule(), FixedPolicy({"toy.move": "d"}), _Broken()], rng=1)
    model.step()
    assert model.answers == ["C", "D", "D"]  # the broken one got the documented fallback
    by_kind = model.broker.stats.by_kind()["toy.move"]
    assert by_kind == {"asked": 3, "parse_failures": 3, "retries": 2, "fallbacks": 1}


def test_strict_policy_with_invalid_answer_raises():
    model = _Toy([FixedPolicy({"toy.move": "X"})], rng=1)
    with pytest.raises(InvalidAnswer, match="toy.move"):
        model.step()


class _Gathered(Policy):
    """Each answer waits until every member of the phase has started: only a
    concurrent broker can finish; a sequential one would time out."""

    is_async = True
    strict = False

    def __init__(self, barrier_state):
        self.state = barrier_state

    async def adecide(self, decision):
        self.state["arrived"] += 1
        if self.state["arrived"] == self.state["expected"]:
            self.state["event"].set()
        await asyncio.wait_for(self.state["event"].wait(), timeout=2.0)
        return "C"


def test_async_policies_of_a_phase_run_concurrently():
    state = {"arrived": 0, "expected": 4, "event": None}

    class Model(_Toy):
        def phase_act(self):
            state["event"] = asyncio.Event()
            super().phase_act()

    model = Model([_Gathered(state) for _ in range(3)] + [_Rule()], rng=1)
    state["expected"] = 3
    model.step()
    assert model.answers == ["C", "C", "C", "C"]


def test_a_model_stepped_inside_a_running_event_loop_gathers_its_async_decisions():
    """A Jupyter cell runs inside the kernel's event loop: stepping a model with asynchronous
    (LLM) seats there must still gather the phase concurrently, in the caller's context."""
    state = {"arrived": 0, "expected": 3, "event": None}
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    seen: list[str] = []

    class Model(_Toy):
        def phase_act(self):
            state["event"] = asyncio.Event()
            super().phase_act()

    class _Marked(_Gathered):
        async def adecide(self, decision):
            seen.append(marker.get())
            return await super().adecide(decision)

    async def cell() -> list[str]:  # synchronous model code, called from inside a loop
        marker.set("from the cell")
        model = Model([_Marked(state) for _ in range(3)] + [_Rule()], rng=1)
        model.step()
        return model.answers

    assert asyncio.run(cell()) == ["C", "C", "C", "C"]
    assert seen == ["from the cell"] * 3


def test_model_level_decision_needs_a_narrator():
    model = _Toy([], rng=1)
    with pytest.raises(RuntimeError, match="narrator"):
        model.ask(Decision("toy.meeting", TextSpec(), {}, None))
    narrated = DilemmaModel(rng=1, narrator=FixedPolicy({"toy.meeting": "We agree to invest."}))
    assert narrated.ask(Decision("toy.meeting", TextSpec(), {}, None)) == "We agree to invest."


def test_agent_is_a_mesa_agent_with_persona():
    model = _Toy([_Rule()], rng=3)
    agent = model.players[0]
    assert isinstance(agent, mesa.Agent) and agent in model.agents
    assert agent.persona.label() == "general"
    assert CrewPersona(svo_angle=22.45).label() == "svo22.45"
