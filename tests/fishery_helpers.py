"""What the fishery's rule and fidelity tests share: scripting villagers with fixed answers,
and the three-villager lake the punishment tests play."""

from __future__ import annotations

from mesa_dilemmas.agents import FixedPolicy
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel


def script(model: FisheryModel, villager, **answers) -> None:
    """Replace one villager's policy with fixed answers (same interface as any policy)."""
    policy = FixedPolicy(answers)
    policy.bind(villager)
    villager.policy = policy


def scripted(model: FisheryModel, **answers) -> None:
    """Replace every villager's policy with fixed answers (same interface as any policy)."""
    for v in model.villagers:
        script(model, v, **answers)


def set_each(model: FisheryModel, attr: str, values) -> None:
    """Give each seat's villager its own value of ``attr``, in seat order (one value for every
    seat: ``model.seats.set(attr, value)``)."""
    for v, x in zip(model.villagers, values, strict=True):
        setattr(v, attr, x)


def punishment_lake(initial_wealth: float, **params) -> FisheryModel:
    """Three villagers who catch nearly nothing and eat nothing, so wealth moves by punishment
    alone: a penalty of 10, a cost of 2 per punishment; no learning, no group decision."""
    return FisheryModel(
        n_agents=3,
        penalty=10,
        punish_cost=2,
        consumption=0.0,
        catchability=0.01,
        initial_wealth=initial_wealth,
        social_learning=False,
        group_decision=False,
        stop_at_collapse=False,
        rng=2,
        **params,
    )
