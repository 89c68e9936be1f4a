"""The fishery's per-villager state lives on its Villager agents, under one vocabulary: the
model reads and writes it through its seats (``m.seats.get("wealth")``), with no second set of
names on the model."""

from __future__ import annotations

import numpy as np

from mesa_dilemmas.dilemmas.fishery.model import FisheryModel, Villager

#: each villager's state, as attributes of its agent
STATE = (
    "strategy_effort",
    "effort",
    "monitoring",
    "punishing",
    "personal_norm",
    "wealth",
    "payoff_avg",
    "round_payoff",
    "harvest",
    "alive",
    "punished",
    "language",
)
#: the names the model's seat arrays once had: the model no longer answers to them
RETIRED = ("strategy_effort", "effort", "monitor", "punish_p", "norm", "wealth", "payoff_avg")
RETIRED += ("round_payoff", "harvest", "alive", "punished", "language")


def test_state_lives_on_the_agents() -> None:
    m = FisheryModel(rng=3, n_agents=6, initial_wealth=4.0, consumption=3.0, stop_at_collapse=False)
    for _ in range(6):
        m.step()
    for v in m.villagers:
        assert set(STATE) <= vars(v).keys()  # plain attributes, not properties
    for attr in STATE:  # the seats read every seat in seat order, the starved included
        assert m.seats.get(attr) == [getattr(v, attr) for v in m.villagers]
    assert list(m.seats) == m.villagers
    living = list(m.agents_by_type[Villager])
    assert living == m.living() == [v for v in m.villagers if v.alive]
    assert m.deaths == sum(not v.alive for v in m.villagers) > 0  # the starved keep their seat
    recorded = m.datacollector.get_model_vars_dataframe().iloc[-1]
    assert recorded["n_alive"] == len(living)
    assert recorded["mean_effort"] == np.mean([v.effort for v in living])


def test_the_model_has_one_vocabulary_for_its_villagers() -> None:
    m = FisheryModel(rng=1, n_agents=3)
    for name in RETIRED:
        assert not hasattr(m, name), f"model.{name}: read the agents (m.seats.get(...))"


def test_writes_through_the_seats_reach_the_agents() -> None:
    m = FisheryModel(rng=1, n_agents=3)
    for v, x in zip(m.villagers, [0.1, 0.2, 0.3], strict=True):
        v.monitoring = x
    m.villagers[1].strategy_effort = 0.9
    m.seats.set("punishing", 1.0)
    assert m.seats.get("monitoring") == [0.1, 0.2, 0.3]
    assert [v.punishing for v in m.villagers] == [1.0] * 3
    assert m.seats.get("strategy_effort")[1] == 0.9
    assert type(m.villagers[1].strategy_effort) is float
