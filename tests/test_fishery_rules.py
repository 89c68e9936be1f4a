"""Every rule of the fishery, checked on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fishery_helpers import punishment_lake, script, scripted, set_each

from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.dilemmas.fishery.villagers import (
    TYPE_RANGES,
    draw_strategy,
    imitation_probability,
)
from mesa_dilemmas.dilemmas.metrics import gini
from mesa_dilemmas.dilemmas.voting import median_vote, plurality_vote


def test_harvest_is_alpha_effort_stock_and_stock_regrows_logistically():
    m = FisheryModel(
        n_agents=4,
        capacity=300,
        growth_rate=0.5,
        catchability=0.05,
        consumption=1.0,
        initial_stock=1.0,
        initial_wealth=20.0,
        social_learning=False,
        group_decision=False,
        rng=1,
    )
    scripted(m, **{"fishery.effort": 0.5, "fishery.punish": "none"})
    m.step()
    # h = 0.05 * 0.5 * 300 = 7.5 each, 30 in all; R+ = 270; R = 270 + 0.5 * 270 * (1 - 270/300) = 283.5
    assert m.seats.get("harvest") == pytest.approx([7.5] * 4)
    assert m.total_harvest == pytest.approx(30.0)
    assert m.stock == pytest.approx(283.5)
    # wealth = 20 + 7.5 - 1
    assert m.seats.get("wealth") == pytest.approx([26.5] * 4)
    # efficiency: 30 / (r K / 4) = 30 / 37.5
    assert m.efficiency_now == pytest.approx(0.8)


def test_regrowth_is_capped_at_capacity_and_zero_stays_zero():
    m = FisheryModel(
        n_agents=2, capacity=100, growth_rate=2.0, catchability=0.01, initial_stock=0.5, rng=1
    )
    scripted(
        m,
        **{
            "fishery.effort": 0.0,
            "fishery.punish": "none",
            "fishery.imitate": "keep",
            "fishery.propose": 5.0,
        },
    )
    m.step()
    assert m.stock == pytest.approx(100.0)  # 50 + 2*50*0.5 = 100
    m.stock = 0.0
    m.step()
    assert m.stock == 0.0


def test_punishment_accounting_penalty_and_cost():
    m = punishment_lake(initial_wealth=20.0)
    ids = [v.unique_id for v in m.villagers]
    # villager 0 punishes villager 1; the others punish no one
    for v in m.villagers:
        target = str(ids[1]) if v is m.villagers[0] else "none"
        script(m, v, **{"fishery.effort": 0.0, "fishery.punish": target})
    m.step()
    assert m.seats.get("wealth") == pytest.approx([20 - 2, 20 - 10, 20])
    assert m.seats.get("punished") == [0, 1, 0] and m.punishments == 1


def test_punishment_switched_off_from_shock_step():
    m = FisheryModel(
        n_agents=3,
        punishment_off_at=2,
        consumption=0.0,
        catchability=0.01,
        social_learning=False,
        group_decision=False,
        rng=2,
    )
    ids = [v.unique_id for v in m.villagers]
    scripted(m, **{"fishery.effort": 0.0, "fishery.punish": str(ids[1])})
    m.villagers[1].policy.answers["fishery.punish"] = str(ids[0])
    m.step()
    assert m.punishments == 3
    m.step()
    assert m.punishments == 0 and not m.punishment_active


def test_starvation_removes_the_agent_and_marks_collapse():
    m = FisheryModel(
        n_agents=3,
        consumption=5.0,
        initial_wealth=4.0,
        catchability=0.01,
        social_learning=False,
        group_decision=False,
        rng=3,
    )
    scripted(m, **{"fishery.effort": 1.0, "fishery.punish": "none"})
    m.villagers[2].policy.answers["fishery.effort"] = 0.0  # harvests nothing: 4 - 5 < 0
    m.step()
    assert m.seats.get("alive") == [True, True, False]
    assert m.villagers[2] not in m.agents
    assert m.collapsed and m.survival_time == 1 and not m.running
    assert m.deaths == 1


def test_collapse_when_stock_falls_to_threshold():
    m = FisheryModel(
        n_agents=10,
        catchability=0.1,
        collapse_threshold=100,
        consumption=0.0,
        social_learning=False,
        group_decision=False,
        rng=4,
    )
    scripted(m, **{"fishery.effort": 1.0, "fishery.punish": "none"})
    m.step()  # takes 10 * 0.1 * 300 = all 300: R = 0
    assert m.stock == 0.0 and m.collapsed and m.survival_time == 1


def test_catch_cannot_exceed_stock():
    m = FisheryModel(
        n_agents=10,
        catchability=0.5,
        consumption=0.0,
        social_learning=False,
        group_decision=False,
        rng=4,
    )
    scripted(m, **{"fishery.effort": 1.0, "fishery.punish": "none"})
    m.step()
    assert m.total_harvest == pytest.approx(300.0)
    assert m.seats.get("harvest") == pytest.approx([30.0] * 10)


def test_logit_imitation_probabilities():
    assert imitation_probability(0.0, 0.0, 1.0) == pytest.approx(0.5)
    assert imitation_probability(0.0, 2.0, 1.0) == pytest.approx(1 / (1 + math.exp(-2)))
    assert imitation_probability(2.0, 0.0, 1.0) == pytest.approx(1 / (1 + math.exp(2)))
    assert imitation_probability(0.0, 1.0, 0.0) == pytest.approx(0.5)  # no selection: coin flip
    assert imitation_probability(0.0, -1e6, 1.0) == 0.0


def test_rule_villagers_imitate_with_the_logit_frequency():
    """Empirical copy rate of the rule policy matches the logit rule."""
    m = FisheryModel(n_agents=2, selection_strength=0.5, rng=11)
    v = m.villagers[0]
    from mesa_dilemmas.agents.decisions import Decision
    from mesa_dilemmas.dilemmas.fishery.model import COPY_OR_KEEP

    obs = {"own": {"payoff": 1.0}, "model": {"payoff": 3.0}, "selection_strength": 0.5}
    copies = sum(
        v.policy.decide(Decision("fishery.imitate", COPY_OR_KEEP, obs, v)) == "copy"
        for _ in range(4000)
    )
    expected = 1 / (1 + math.exp(-0.5 * 2.0))
    assert abs(copies / 4000 - expected) < 4 * math.sqrt(expected * (1 - expected) / 4000)


def test_copy_strategy_adds_mutation_and_clips():
    m = FisheryModel(n_agents=2, mutation_sd=0.0, norm_mutation_sd=0.0, rng=5)
    set_each(m, "strategy_effort", [0.1, 0.9])
    set_each(m, "monitoring", [0.2, 0.8])
    set_each(m, "personal_norm", [3.0, 7.0])
    m._copy_strategy(0, 1)
    v = m.villagers[0]
    assert (v.strategy_effort, v.monitoring, v.personal_norm) == (0.9, 0.8, 7.0)
    m2 = FisheryModel(n_agents=2, mutation_sd=5.0, rng=5)
    v2 = m2.villagers[0]
    for _ in range(20):
        m2._copy_strategy(0, 1)
        assert (
            0.0 <= v2.strategy_effort <= 1.0
            and 0.0 <= v2.monitoring <= 1.0
            and v2.personal_norm >= 0
        )


def test_median_vote_and_plurality_ties():
    assert median_vote([3.0, 9.0, 4.0]) == 4.0
    assert median_vote([2.0, 4.0, 6.0, 100.0]) == 5.0
    with pytest.raises(ValueError):
        median_vote([])
    rng = np.random.default_rng(0)
    assert plurality_vote(["a", "b", "a"], rng) == "a"
    winners = {
        plurality_vote(["a", "b", "b", "a", "c"], np.random.default_rng(s)) for s in range(40)
    }
    assert winners == {"a", "b"}  # ties broken at random among the leaders only


def test_group_norm_is_median_of_proposals():
    m = FisheryModel(n_agents=5, social_learning=False, rng=6)
    proposals = iter([3.0, 11.0, 5.0, 8.0, 2.0])
    scripted(
        m,
        **{
            "fishery.effort": 0.1,
            "fishery.punish": "none",
            "fishery.propose": lambda d: next(proposals),
        },
    )
    m.step()
    assert m.group_norm == 5.0
    assert m.norm_history[-1] == (1, m.shared_policy) and "5.00" in m.shared_policy


def test_text_proposals_go_to_a_plurality_vote_broadcast_verbatim():
    m = FisheryModel(n_agents=3, social_learning=False, proposal_form="text", rng=6)
    proposals = iter(["Fish less than 4 fish.", "Fish more.", "Fish less than 4 fish."])
    votes = iter(["Fish more.", "Fish less than 4 fish.", "Fish less than 4 fish."])
    scripted(
        m,
        **{
            "fishery.effort": 0.1,
            "fishery.punish": "none",
            "fishery.propose": lambda d: next(proposals),
            "fishery.vote": lambda d: next(votes),
        },
    )
    m.step()
    assert m.shared_policy == "Fish less than 4 fish." and m.group_norm == 4.0


def test_rule_villagers_vote_for_the_nearest_stated_cap():
    m = FisheryModel(n_agents=3, social_learning=False, proposal_form="text", rng=6)
    set_each(m, "personal_norm", [3.0, 3.0, 9.0])  # two identical proposals, one distinct: 2 to 1
    m.step()
    assert (
        m.group_norm == 3.0
        and m.shared_policy == "Each villager should harvest at most 3.00 fish per day."
    )


def test_rule_punisher_only_punishes_observed_violations():
    m = FisheryModel(n_agents=2, rng=7)
    m.seats.set("monitoring", 1.0).set("punishing", 1.0)
    v = m.villagers[0]
    from mesa_dilemmas.agents.decisions import ChoiceSpec, Decision

    spec = ChoiceSpec((str(m.villagers[1].unique_id), "none"))
    obs = {"sampled_peer": m.villagers[1].unique_id, "sampled_peer_harvest": 6.0, "group_norm": 5.0}
    assert v.policy.decide(Decision("fishery.punish", spec, obs, v)) == str(
        m.villagers[1].unique_id
    )
    obs["sampled_peer_harvest"] = 5.0
    assert v.policy.decide(Decision("fishery.punish", spec, obs, v)) == "none"
    m.villagers[0].monitoring = 0.0
    obs["sampled_peer_harvest"] = 9.0
    assert v.policy.decide(Decision("fishery.punish", spec, obs, v)) == "none"


def test_personal_cap_limits_rule_effort():
    m = FisheryModel(n_agents=2, catchability=0.05, respect_personal_cap=True, rng=8)
    m.seats.set("strategy_effort", 1.0).set("personal_norm", 3.0)
    m.step()
    # a cap of 3 fish at R = 300 and alpha = 0.05 means effort 3 / 15 = 0.2
    assert m.seats.get("harvest") == pytest.approx([3.0, 3.0])


@pytest.mark.parametrize("disposition", ["general", "altruistic", "selfish"])
def test_initial_strategies_follow_table_3(disposition):
    rng = np.random.default_rng(0)
    draws = np.array([draw_strategy(rng, disposition) for _ in range(500)])
    ranges = TYPE_RANGES[disposition]
    for col, key in ((0, "effort"), (2, "punish"), (3, "norm")):
        lo, hi = ranges[key]
        assert draws[:, col].min() >= lo and draws[:, col].max() <= hi
        assert draws[:, col].max() - draws[:, col].min() > 0.8 * (hi - lo)


def test_cross_field_checks():
    with pytest.raises(ValueError, match="llm_agents: 4 exceeds n_agents=3"):
        FisheryModel.validate_params({"n_agents": 3, "llm_agents": 4})  # a scenario's params
    with pytest.raises(ValueError, match="llm_agents: 4 exceeds n_agents=3"):
        build_model(FisheryModel, {"n_agents": 3, "llm_agents": 4})  # checked before expanding
    with pytest.raises(
        TypeError, match="unexpected parameter .llm_agents. \\(a scenario shorthand"
    ):
        FisheryModel(llm_agents=2)  # a shorthand is the scenario's: the model takes players
    with pytest.raises(ValueError, match="monitoring_min"):
        FisheryModel(monitoring_min=0.9, monitoring_max=0.5)


def test_punisher_profile_text_swaps_punishing_ranges():
    rng = np.random.default_rng(0)
    alt = np.array([draw_strategy(rng, "altruistic", "text")[2] for _ in range(200)])
    assert alt.min() >= 0.4 and alt.max() <= 0.5


def test_gini():
    assert gini([1, 1, 1, 1]) == 0.0
    assert gini([0, 0, 0, 4]) == pytest.approx(0.75)
    assert gini([]) == 0.0


def test_typed_population_counts():
    m = FisheryModel(n_agents=10, population="typed", altruism_ratio=0.5, rng=9)
    kinds = [v.persona.disposition for v in m.villagers]
    assert kinds.count("altruistic") == 5 and kinds.count("selfish") == 5
