"""Port of Mars keeps each player's game state on its Mesa agent, and the data collector reads it."""

from __future__ import annotations

from mesa.agentset import AgentSet

from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.dilemmas.port_of_mars.model import Player, PomPlayer, PortOfMarsModel

STATE = ("role", "label", "deck", "hand", "resources", "coins", "points", "goal", "health_plan")


def test_each_seat_is_one_agent_holding_its_state():
    m = PortOfMarsModel(rng=3)
    assert PomPlayer is Player and issubclass(Player, DilemmaAgent)
    assert len(m.seats) == m.N_PLAYERS
    assert [p.seat for p in m.seats] == [p.slot for p in m.seats] == list(range(m.N_PLAYERS))
    # one object per player, one name: the seats (an AgentSet in seat order) are the model's agents
    assert isinstance(m.seats, AgentSet)
    assert list(m.seats) == list(m.agents) == list(m.agents_by_type[Player])
    assert all(m.player(p.seat) is p for p in m.seats)
    assert not hasattr(m, "crew") and not hasattr(m, "players")
    assert [p.role for p in m.seats] == m.roles
    for p in m.seats:
        assert isinstance(p, Player)
        assert set(STATE) <= set(vars(p))
        assert len(p.hand) == m.HAND_SIZE
    m.step()
    assert all(p.coins <= m.MAX_COINS for p in m.seats)
    assert m.seats.get("points") == [p.points for p in m.seats]


def test_agent_reporters_read_the_agents_own_state():
    m = PortOfMarsModel(rng=5)
    for _ in range(3):
        m.step()
    # change one agent's state behind the model's back: the next collection must show it
    agent = m.player(2)
    agent.points = 1234
    agent.resources = dict.fromkeys(agent.resources, 7)
    agent.dirty_cards_bought = 42
    m.datacollector.collect(m)
    frame = m.datacollector.get_agent_vars_dataframe()
    last = frame.xs(frame.index.get_level_values(0).max(), level=0)
    row = last.loc[agent.unique_id]
    assert row["player_points"] == 1234
    assert row["player_resources_held"] == 7 * len(agent.resources)
    assert row["player_dirty_cards"] == 42
    assert row["player_role"] == agent.role and row["player_label"] == agent.label
    for p in m.seats:
        assert last.loc[p.unique_id, "player_points"] == p.points
        assert last.loc[p.unique_id, "player_health_coins_total"] == p.health_coins_total
    # the model reporters sum the same agents
    assert m.final_metrics()["seat2_points"] == 1234
