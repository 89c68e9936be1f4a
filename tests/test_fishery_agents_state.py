"""The fishery's per-villager state lives on its Villager agents; the model's arrays read it."""

from __future__ import annotations

import numpy as np

from mesa_dilemmas.dilemmas.fishery.model import FisheryModel, Villager

#: the model's seat arrays and the villager attribute each one reads
COLUMNS = {
    "strategy_effort": "strategy_effort",
    "effort": "effort",
    "monitor": "monitoring",
    "punish_p": "punishing",
    "norm": "personal_norm",
    "wealth": "wealth",
    "payoff_avg": "payoff_avg",
    "round_payoff": "round_payoff",
    "harvest": "harvest",
    "alive": "alive",
    "punished": "punished",
    "language": "language",
}


def test_state_lives_on_the_agents() -> None:
    m = FisheryModel(rng=3, n_agents=6, initial_wealth=4.0, consumption=3.0, stop_at_collapse=False)
    for _ in range(6):
        m.step()
    for v in m.villagers:
        assert set(COLUMNS.values()) <= vars(v).keys()  # plain attributes, not properties
    for column, attr in COLUMNS.items():
        assert getattr(m, column).tolist() == [getattr(v, attr) for v in m.villagers]
    living = list(m.agents_by_type[Villager])
    assert living == m.living() == [v for v in m.villagers if v.alive]
    assert m.deaths == sum(not v.alive for v in m.villagers) > 0  # the starved keep their seat
    recorded = m.datacollector.get_model_vars_dataframe().iloc[-1]
    assert recorded["n_alive"] == len(living)
    assert recorded["mean_effort"] == np.mean([v.effort for v in living])


def test_model_arrays_write_through_to_the_agents() -> None:
    m = FisheryModel(rng=1, n_agents=3)
    m.monitor[:] = [0.1, 0.2, 0.3]
    m.strategy_effort[1] = 0.9
    assert [v.monitoring for v in m.villagers] == [0.1, 0.2, 0.3]
    assert m.villagers[1].strategy_effort == 0.9
    assert type(m.villagers[1].strategy_effort) is float
