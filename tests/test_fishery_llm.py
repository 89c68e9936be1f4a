"""LLM villagers in the fishery: prompts, ablations, votes and call counts -- with a scripted
policy standing in for the model (the real local model runs in tests/test_fishery_llm_e2e.py)."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from mesa_dilemmas.agents.decisions import InvalidAnswer
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.dilemmas.base import build_model, params_model
from mesa_dilemmas.dilemmas.fishery.language import persona_bank
from mesa_dilemmas.dilemmas.fishery.model import NORMS, FisheryModel
from mesa_dilemmas.llm.answers import parse_tags
from mesa_dilemmas.llm.prompts import render

#: what an LLM villager must not be told: the catch and regrowth rules (catchability's value too)
LEAKS = (
    "catchab",
    "alpha",
    str(params_model(FisheryModel).model_fields["catchability"].default),
    "regrow",
    "logistic",
    "growth",
    "formula",
    "h =",
    "carrying",
)


class Scripted(Policy):
    """Answers like a well-behaved LLM villager and keeps every decision it was asked."""

    name = "scripted"
    strict = False

    def __init__(self, community: str = "Everyone should fish with effort 0.5 at most.", vote=None):
        self.asked = []
        self.community = community
        self.vote = vote

    def decide(self, decision):
        self.asked.append(decision)
        kind = decision.kind.rsplit(".", 1)[-1]
        if kind == "effort":
            return 0.5
        if kind == "punish":
            return "none"
        if kind == "norms":
            return {"personal": "I fish moderately.", "community": self.community}
        if kind == "vote":
            return self.vote(decision) if self.vote else decision.spec.options[0]
        raise AssertionError(kind)


def lake(n_llm: int = 4, n: int = 4, **params) -> tuple[FisheryModel, list[Scripted]]:
    model = build_model(
        FisheryModel,
        {
            "n_agents": n,
            "llm_agents": n_llm,
            "llm": "replay",
            "population": "typed",
            "altruism_ratio": 0.5,
            "stop_at_collapse": False,
            **params,
        },
        7,
    )
    scripts = []
    for v in model.villagers:
        if v.language:
            policy = Scripted()
            policy.bind(v)
            v.policy = policy
            scripts.append(policy)
    return model, scripts


def prompts_of(scripts: list[Scripted], kind: str, first_day: bool = True) -> list[str]:
    out = []
    for s in scripts:
        for d in s.asked:
            if d.kind == f"fishery.{kind}" and (first_day or d.step > 1):
                p = render(d, mode="tags", persona=d.agent.persona, round_=d.step)
                out.append(p.system + "\n" + p.user)
    return out


def test_initial_strategies_come_from_the_disposition_bank():
    model, _ = lake()
    bank = persona_bank()
    for v in model.villagers:
        assert v.norm_text in bank[v.persona.disposition]
        assert v.persona.strategy_text == v.norm_text
    assert model.shared_policy == "No shared policy has been agreed yet."


def test_prompts_carry_every_observation_field_and_no_payoff_formula():
    model, scripts = lake()
    model.step()
    model.step()
    for text in prompts_of(scripts, "effort"):  # the first day: nobody's effort is shown
        first = "Nobody has fished yet" in text
        assert first == (not re.search(r"fishing effort \d", text))
    assert sum("Nobody has fished yet" in t for t in prompts_of(scripts, "effort")) == 4
    for kind in ("effort", "punish", "norms"):
        for text in prompts_of(scripts, kind, first_day=(kind != "effort")):
            need = params_model(FisheryModel).model_fields["consumption"].default
            assert f"eat {need} units of fish per day" in text
            assert "Your personal strategy:" in text and "Shared community policy:" in text
            assert (
                all(
                    re.search(rf"villager {v.unique_id}(?: \(you\))?: fishing effort", text)
                    for v in model.villagers
                )
                or kind == "norms"
            )
            assert re.search(r"total payoff -?\d", text)
            low = text.lower()
            assert not any(leak in low for leak in LEAKS), [leak for leak in LEAKS if leak in low]
    for text in prompts_of(scripts, "punish"):
        assert "Punishing takes 10.0 from that villager's payoff and costs you 0.0" in text
    for text in prompts_of(scripts, "effort") + prompts_of(scripts, "norms"):
        assert "The lake currently holds about" in text
    # social learning in the norm update sees a sampled few peers (3 of the other 3 here)
    assert all(len(re.findall(r"- villager \d+:", t)) == 3 for t in prompts_of(scripts, "norms"))
    # after round 1 the winning proposal is the shared policy, verbatim
    assert (
        'Shared community policy: "Everyone should fish with effort 0.5 at most."'
        in prompts_of(scripts, "effort")[-1]
    )


def test_osl_has_no_shared_policy_and_no_vote():
    model, scripts = lake(group_decision=False)
    model.step()
    model.step()
    kinds = Counter(d.kind for s in scripts for d in s.asked)
    assert (
        kinds["fishery.vote"] == 0 and kinds["fishery.norms"] == 8
    )  # personal update still happens
    later = prompts_of(scripts, "effort", first_day=False)  # the first day shows no efforts
    for text in later + prompts_of(scripts, "punish") + prompts_of(scripts, "norms"):
        assert "Shared community policy" not in text and "community policy" not in text
        assert "villager" in text and "fishing effort" in text  # peers still observed


def test_ogd_sees_no_peer_outcomes_but_votes():
    """Without social learning a villager sees only itself when it fishes and updates its norms,
    but everyone when it decides whom to punish (the paper removes imitation, not that sight)."""
    model, scripts = lake(social_learning=False)
    model.villagers[0].policy.community = "A different proposal."
    model.step()
    model.step()
    everyone = {v.unique_id for v in model.villagers}
    for s in scripts:
        me = s.agent.unique_id
        for d in s.asked:
            if d.kind == "fishery.effort" and d.step == 1:
                continue  # the first day shows nobody's effort (test_each_condition...)
            if d.kind in ("fishery.effort", "fishery.punish", "fishery.norms"):
                text = render(d, mode="tags").user
                ids = {int(x) for x in re.findall(r"- villager (\d+)(?: \(you\))?:", text)}
                if d.kind == "fishery.punish":
                    assert ids == everyone, (d.kind, ids)
                else:
                    assert ids == {me}, (d.kind, ids)
                    assert "You observe your own fishing effort" in text
    assert sum(d.kind == "fishery.vote" for s in scripts for d in s.asked) == 8
    assert "Shared community policy" in prompts_of(scripts, "effort")[0]


@pytest.mark.parametrize(
    ("social_learning", "group_decision"),
    [(True, True), (True, False), (False, True), (False, False)],
    ids=["Full", "OSL", "OGD", "Neither"],
)
def test_each_condition_removes_exactly_its_channel(social_learning, group_decision):
    """What each villager can and cannot see, per condition: every prompt says which villager is
    "you"; before the first harvest no effort is shown at all (an LLM society starts from its
    norm texts alone, not from rule-drawn efforts); after it, the effort, punish and norm-update
    prompts show the villager's own recent outcome; peers' outcomes appear in the effort and
    norm-update prompts iff social learning is on and in the punish prompt always (the ablations
    remove imitation, not the sight of others' catches); the shared policy appears iff the group
    decision is on."""
    model, scripts = lake(social_learning=social_learning, group_decision=group_decision)
    for s, text in zip(
        scripts, ["Fish less.", "Fish more.", "Fish less.", "Fish more."], strict=True
    ):
        s.community = (
            text  # two distinct proposals, so a vote is held when there is a group decision
        )
    model.step()
    model.step()
    kinds = {"effort", "punish", "norms"} | ({"vote"} if group_decision else set())
    assert {d.kind.rsplit(".", 1)[-1] for s in scripts for d in s.asked} == kinds
    for s in scripts:
        me = s.agent.unique_id
        for d in s.asked:
            kind = d.kind.rsplit(".", 1)[-1]
            text = render(d, mode="tags", persona=d.agent.persona, round_=d.step).user
            assert f"You are villager {me}," in text
            assert ("Shared community policy" in text) == group_decision, kind
            if kind == "vote":
                continue
            if kind == "effort" and d.step == 1:
                assert "Nobody has fished yet" in text and "fishing effort" not in text
                continue
            own = re.findall(
                rf"- villager {me} \(you\): fishing effort (\S+), total payoff (\S+)", text
            )
            assert len(own) == 1, (kind, text)  # one's own recent outcome, always, exactly once
            assert float(own[0][0]) == pytest.approx(d.observation["own_effort"], abs=0.005)
            # rows not marked (you): other villagers, and oneself only inside the table of
            # everyone that every villager of the round reads alike (the own row follows it)
            peers = {int(x) for x in re.findall(r"- villager (\d+):", text)}
            assert bool(peers) == (social_learning or kind == "punish"), (kind, peers)
            if me in peers:
                assert "Every villager's effort and total payoff so far:" in text, (kind, text)
                assert peers == {v.unique_id for v in model.living()}, (kind, peers)


def test_vote_duplicates_collapse_and_ties_are_random_among_leaders():
    model, scripts = lake()
    proposals = ["Fish less.", "Fish less.", "Fish more.", "Fish more."]
    for s, text in zip(scripts, proposals, strict=True):
        s.community = text
        s.vote = lambda d, own=text: own  # everyone votes for their own proposal: 2-2 tie
    model.step()
    ballots = [d for s in scripts for d in s.asked if d.kind == "fishery.vote"]
    assert len(ballots) == 4 and ballots[0].spec.options == ("Fish less.", "Fish more.")
    assert model.shared_policy in ("Fish less.", "Fish more.")
    winners = set()
    for seed in range(12):
        m = build_model(
            FisheryModel,
            {"n_agents": 4, "llm_agents": 4, "llm": "replay", "stop_at_collapse": False},
            seed,
        )
        for v, text in zip(m.villagers, proposals, strict=True):
            policy = Scripted(text, vote=lambda d, own=text: own)
            policy.bind(v)
            v.policy = policy
        m.step()
        winners.add(m.shared_policy)
    assert winners == {"Fish less.", "Fish more."}


def test_unanimous_proposal_needs_no_vote_and_sets_a_stated_cap():
    model, scripts = lake()
    for s in scripts:
        s.community = "Nobody should catch more than 4 fish a day."
    model.step()
    assert not any(d.kind == "fishery.vote" for s in scripts for d in s.asked)
    assert (
        model.shared_policy == "Nobody should catch more than 4 fish a day."
        and model.group_norm == 4.0
    )


def test_at_most_four_calls_per_llm_villager_per_round():
    model, scripts = lake()
    for s, text in zip(scripts, ["a", "b", "c", "d"], strict=True):
        s.community = f"Policy {text}."
    for _ in range(3):
        model.step()
    assert model.llm_decisions_per_villager == 4.0  # the reporter agrees with the count below
    for s in scripts:
        per_round = Counter(d.step for d in s.asked)
        assert max(per_round.values()) <= 4 and set(Counter(d.kind for d in s.asked)) == {
            "fishery.effort",
            "fishery.punish",
            "fishery.norms",
            "fishery.vote",
        }


def test_rule_and_llm_villagers_share_a_lake():
    model, scripts = lake(n_llm=2, n=6)
    for _ in range(4):
        model.step()
    assert sum(model.seats.get("language")) == 2 and len(scripts) == 2
    kinds = Counter(d.kind for s in scripts for d in s.asked)
    assert kinds["fishery.effort"] == 8 and kinds["fishery.norms"] == 8
    # rule villagers propose their caps as sentences in a text society, and vote
    assert any("fish per day" in p for _, p in model.norm_history) or model.norm_history[-1][
        1
    ].startswith("Everyone")
    assert np.isfinite(model.stock)


@pytest.mark.parametrize(
    ("kind", "reply", "expected"),
    [
        ("effort", "I will fish moderately. <answer>0.4</answer>", 0.4),
        ("effort", "<answer>effort 0.75</answer>", 0.75),
        ("effort", "<answer>1.7</answer>", InvalidAnswer),
        ("effort", "I choose 0.4", InvalidAnswer),  # no tags
        ("punish", "<answer>3</answer>", "3"),
        ("punish", "<answer>Villager 3</answer>", "3"),
        ("punish", "<answer>none</answer>", "none"),
        ("punish", "<answer>9</answer>", InvalidAnswer),
        (
            "norms",
            '<answer>{"personal": "Fish less.", "community": "All fish less."}</answer>',
            {"personal": "Fish less.", "community": "All fish less."},
        ),
        (
            "norms",
            "<answer><personal>Fish less.</personal><community>All fish less.</community></answer>",
            {"personal": "Fish less.", "community": "All fish less."},
        ),
        ("norms", "<answer>Personal: fish less</answer>", InvalidAnswer),
        ("vote", "<answer>Fish less.</answer>", "Fish less."),
        ("vote", "<answer>something else</answer>", InvalidAnswer),
    ],
)
def test_parsing_each_decisions_answers(kind, reply, expected):
    from mesa_dilemmas.agents.decisions import ChoiceSpec, NumberSpec

    spec = {
        "effort": NumberSpec(0.0, 1.0),
        "punish": ChoiceSpec(("3", "5", "none")),
        "norms": NORMS,
        "vote": ChoiceSpec(("Fish less.", "Fish more.")),
    }[kind]
    if expected is InvalidAnswer:
        with pytest.raises(InvalidAnswer):
            parse_tags(reply, spec)
    else:
        assert parse_tags(reply, spec).value == expected


def test_govsim_preset_dynamics():
    m = FisheryModel(
        n_agents=5,
        capacity=100,
        regrowth="doubling",
        catchability=0.2,
        consumption=0.0,
        punishment=False,
        collapse_threshold=5,
        social_learning=False,
        group_decision=False,
        rng=1,
    )
    for v in m.villagers:
        v.strategy_effort = 0.5  # everyone takes 10% of the stock: 50 in all
    m.step()
    assert m.stock == pytest.approx(100.0)  # 50 left, doubles back to capacity
    assert m.punishments == 0 and m.h_opt == 50.0
    m.seats.set("strategy_effort", 1.0)  # everyone takes 20%: all 100 gone
    m.step()
    assert m.stock == 0.0 and m.collapsed


def test_one_punish_schema_serves_the_round_and_naming_oneself_is_asked_again():
    """Every villager of a round gets the same answer schema (all ids and "none") where the
    provider reads the schema first, so that it can open a cached prompt, and the same answer
    format in words from every provider; the allowed options still exclude the villager
    itself (the seat's own schema, a self-hosted server's grammar, excludes it too), and an
    answer naming itself is invalid (the broker asks again), never a punishment of oneself."""
    model, scripts = lake()
    model.step()
    asked = [(s, d) for s in scripts for d in s.asked if d.kind == "fishery.punish"]
    assert len(asked) == 4
    sent = [render(d, mode="native", shared_schema=True) for _, d in asked]
    schemas = {json.dumps(p.schema) for p in sent}
    assert len(schemas) == 1
    everyone = {str(v.unique_id) for v in model.villagers} | {"none"}
    for (s, d), p in zip(asked, sent, strict=True):
        me = str(s.agent.unique_id)
        assert set(p.schema["properties"]["answer"]["enum"]) == everyone
        assert d.spec.json_schema()["enum"] == list(d.spec.options)  # the seat's own
        own = render(d, mode="native").user
        assert set(d.shown.options) == everyone and d.shown.describe() in own
        assert f"You are villager {me}" in own and "you cannot punish yourself" in own
        assert me not in d.spec.options
        with pytest.raises(InvalidAnswer):
            d.spec.validate(me)
        other = next(o for o in d.spec.options if o != me)
        assert d.spec.validate(other) == other
