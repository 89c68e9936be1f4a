"""Villagers can starve as the paper describes, rule and LLM alike: with the default economics a
villager who stops fishing dies in round floor(P0 / c) + 1, well inside the LLM societies' 50
rounds, and is removed (its death ends the run when the run stops at a collapse)."""

from __future__ import annotations

import math

import pytest

from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.dilemmas.base import build_model, params_model
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

DEFAULTS = {k: f.default for k, f in params_model(FisheryModel).model_fields.items()}
#: the round a villager who never catches a fish dies in, with the default economics
STARVES_IN = math.floor(DEFAULTS["initial_wealth"] / DEFAULTS["consumption"]) + 1


class NeverFishes(Policy):
    """An LLM villager's seat answered as a model that never fishes might answer."""

    name = "never_fishes"
    strict = False

    def decide(self, decision):
        kind = decision.kind.rsplit(".", 1)[-1]
        if kind == "effort":
            return 0.0
        if kind == "punish":
            return "none"
        if kind == "norms":
            return {"personal": "I stay ashore.", "community": "Nobody fishes."}
        if kind == "vote":
            return decision.spec.options[0]
        raise AssertionError(kind)


def test_the_defaults_starve_a_villager_who_stops_fishing_within_the_llm_horizon():
    assert STARVES_IN <= 50 < 100  # the LLM societies' cap and the rule experiments' horizon


@pytest.mark.parametrize("kind", ["rule", "llm"])
def test_a_villager_who_never_fishes_starves_in_the_predicted_round(kind):
    model = build_model(
        FisheryModel,
        {
            "n_agents": 4,
            "llm_agents": 1 if kind == "llm" else 0,
            "llm": "replay",
            "punishment": False,
            "social_learning": False,
            "stop_at_collapse": False,
        },
        3,
    )
    if kind == "llm":
        (idle,) = [v for v in model.villagers if v.language]
        policy = NeverFishes()
        policy.bind(idle)
        idle.policy = policy
    else:
        idle = model.villagers[0]
        idle.strategy_effort = 0.0  # its imitable effort: it never fishes
    for _ in range(STARVES_IN - 1):
        model.step()
        assert idle in model.living(), f"died early, in round {model.round}"
        assert idle.harvest == 0.0
    model.step()
    assert idle not in model.living() and model.deaths >= 1
    assert idle.wealth < 0 <= idle.wealth + DEFAULTS["consumption"]
