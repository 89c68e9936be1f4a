"""Regression tests for the fishery's fidelity to paper 003 (and to GovSim where the preset claims it):
the fine is charged once however many punish, mixed lakes copy what was played, GovSim's collapse
check and efficiency, text policies that state no cap, effort-based compliance."""

from __future__ import annotations

import pytest
from fishery_helpers import punishment_lake, script

from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.scenarios.config import load_raw


def two_punish_one(**params) -> FisheryModel:
    m = punishment_lake(initial_wealth=30.0, **params)
    target = str(m.villagers[2].unique_id)
    for v in m.villagers:
        script(
            m,
            v,
            **{"fishery.effort": 0.0, "fishery.punish": "none" if v is m.villagers[2] else target},
        )
    m.step()
    return m


def test_a_villager_punished_by_two_pays_beta_once():
    m = two_punish_one()
    assert m.seats.get("punished") == [0, 0, 2] and m.punishments == 2
    assert m.seats.get("wealth") == pytest.approx(
        [30 - 2, 30 - 2, 30 - 10]
    )  # P -= gamma B + beta V, V in {0, 1}


def test_fine_per_punisher_is_a_named_option():
    m = two_punish_one(fine_per_punisher=True)
    assert m.seats.get("wealth") == pytest.approx([30 - 2, 30 - 2, 30 - 20])


class Played(Policy):
    """An 'LLM' villager that always plays a fixed effort, never punishes and proposes a text."""

    name = "played"

    def __init__(self, effort: float):
        self.effort = effort

    def decide(self, decision):
        kind = decision.kind.rsplit(".", 1)[-1]
        return {
            "effort": self.effort,
            "punish": "none",
            "norms": {"personal": "Fish a little.", "community": "Fish a little."},
        }[kind]


def mixed_lake(**params) -> FisheryModel:
    m = build_model(
        FisheryModel,
        {"n_agents": 4, "llm_agents": 1, "llm": "replay", "stop_at_collapse": False, **params},
        5,
    )
    llm = next(v for v in m.villagers if v.language)
    policy = Played(0.9)
    policy.bind(llm)
    llm.policy = policy
    llm.strategy_effort = 0.05  # its drawn effort: only a fallback, never played
    return m


def test_rule_villager_imitating_an_llm_villager_copies_the_effort_it_played():
    m = mixed_lake(mutation_sd=0.0, selection_strength=0.0)
    llm = next(v for v in m.villagers if v.language)
    m.phase_harvest()
    rule = next(v for v in m.villagers if not v.language)
    assert m._strategy_view(llm)["effort"] == pytest.approx(0.9)
    m._copy_strategy(rule.slot, llm.slot)
    assert rule.strategy_effort == pytest.approx(0.9)


def test_sanction_learning_leaves_llm_villagers_fallback_alone():
    m = mixed_lake(sanction_learning=0.05, penalty=10.0)
    llm = next(v for v in m.villagers if v.language)
    rule = next(v for v in m.villagers if not v.language)
    rule.strategy_effort = 0.8
    for v in m.villagers:
        if v is not llm:
            target = str(rule.unique_id if v is not rule else llm.unique_id)
            script(m, v, **{"fishery.effort": 0.8, "fishery.punish": target})
    m.phase_harvest()
    m.phase_punish()
    assert llm.punished and rule.punished
    assert llm.strategy_effort == pytest.approx(0.05)  # untouched
    assert rule.strategy_effort == pytest.approx(0.8 * 0.5)  # the rule villager learns


def test_sanction_learning_is_off_by_default():
    assert FisheryModel(rng=1).p.sanction_learning == 0.0


def govsim(**params) -> FisheryModel:
    preset = load_raw("fishery/govsim")["params"]
    keep = (
        "n_agents",
        "capacity",
        "regrowth",
        "catchability",
        "consumption",
        "initial_wealth",
        "collapse_threshold",
        "punishment",
    )
    m = FisheryModel(
        **{k: preset[k] for k in keep}, social_learning=False, group_decision=False, rng=1, **params
    )
    return m


def test_govsim_collapse_is_checked_before_the_lake_doubles():
    m = govsim()
    for v in m.villagers:
        script(
            m, v, **{"fishery.effort": 0.192}
        )  # 5 x 19.2% of 100 = 96: 4 fish left, which double to 8
    m.step()
    assert m.stock == pytest.approx(8.0) and m.stock_after_harvest == pytest.approx(4.0)
    assert m.collapsed and not m.running and m.survival_time == 1


def test_govsim_fisher_may_ask_for_the_whole_lake_and_catches_never_exceed_it():
    m = govsim()
    greedy = m.villagers[0]
    for v in m.villagers:
        script(m, v, **{"fishery.effort": 1.0 if v is greedy else 0.0})
    m.step()
    assert greedy.harvest == pytest.approx(100.0) and m.total_harvest == pytest.approx(100.0)
    m2 = govsim()
    for v in m2.villagers:
        script(m2, v, **{"fishery.effort": 0.6})
    m2.step()
    assert m2.total_harvest == pytest.approx(100.0)  # asks of 300 scaled down to the lake


def test_govsim_efficiency_is_one_minus_the_shortfall_from_600():
    m = govsim(stop_at_collapse=False)
    for v in m.villagers:
        script(m, v, **{"fishery.effort": 0.1})  # 50 a month: the lake doubles back to 100
    for _ in range(12):
        m.step()
    assert m.cumulative_harvest == pytest.approx(600.0) and m.govsim_efficiency == pytest.approx(
        1.0
    )
    m = govsim()
    for v in m.villagers:
        script(m, v, **{"fishery.effort": 0.04})  # 20 a month for 12 months = 240
    for _ in range(12):
        m.step()
    assert m.govsim_efficiency == pytest.approx(1 - (600 - 240) / 600)


def test_a_policy_stating_no_cap_keeps_g_and_is_counted():
    m = build_model(
        FisheryModel,
        {"n_agents": 3, "llm_agents": 3, "llm": "replay", "stop_at_collapse": False},
        3,
    )
    g0 = m.group_norm
    policies = iter(
        ["Keep effort at 0.6.", "Each villager should catch at most 4 fish.", "Fish fairly."]
    )
    for v in m.villagers:
        policy = Played(0.3)
        policy.bind(v)
        v.policy = policy
    for expected_g, unparsed in ((g0, 1), (4.0, 1), (4.0, 2)):
        text = next(policies)
        for v in m.villagers:
            v.policy.decide = lambda d, text=text: {
                "effort": 0.3,
                "punish": "none",
                "norms": {"personal": "x", "community": text},
            }[d.kind.rsplit(".", 1)[-1]]
        m.step()
        assert m.shared_policy == text and m.group_norm == expected_g and m.cap_unparsed == unparsed
    row = m.datacollector.get_model_vars_dataframe().iloc[-1]
    assert row["cap_unparsed"] == 2


def test_effort_compliance_judges_effort_against_a_full_lake():
    m = FisheryModel(
        n_agents=2,
        capacity=100,
        catchability=0.1,
        consumption=0.0,
        social_learning=False,
        group_decision=False,
        punishment=False,
        stop_at_collapse=False,
        rng=1,
    )
    m.group_norm = 5.0  # the effort meeting G in a full lake: 5 / (0.1 * 100) = 0.5
    a, b = m.villagers
    script(m, a, **{"fishery.effort": 0.5})
    script(m, b, **{"fishery.effort": 0.6})
    m.step()
    assert m.effort_compliance == 0.5 and m.compliance == 0.5
    m.stock = 40.0  # a low lake: b catches 0.1 * 0.6 * 40 = 2.4 <= G, yet fishes as hard as before
    m.step()
    assert m.compliance == 1.0 and m.effort_compliance == 0.5
