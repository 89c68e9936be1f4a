"""Every registered game as a PettingZoo environment (mesa_dilemmas.pettingzoo): PettingZoo's own
conformance tests for each game the registry lists (the installed example ``stag_hunt``
included), and the env's promises: rewards are the game's own payoffs, rule and strategy seats
fill the seats the RL side does not play, a seed fixes the episode, a wrong action is refused."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

from mesa_dilemmas.agents.decisions import Decision  # noqa: E402
from mesa_dilemmas.agents.policy import Policy  # noqa: E402
from mesa_dilemmas.agents.population import load_object  # noqa: E402
from mesa_dilemmas.dilemmas.base import params_model  # noqa: E402
from mesa_dilemmas.dilemmas.registry import game_model, games  # noqa: E402
from mesa_dilemmas.pettingzoo import env, parallel_env, seat_score  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GAMES = sorted(games())
#: a small game: few players where a game has a size with another default, few rounds
SMALL_SIZES = {"n_agents": 4, "n_hunters": 4}
ROUNDS = 3


def small(game: str) -> dict[str, Any]:
    """Small parameters for any registered game, read from its parameter schema: a round
    parameter set to :data:`ROUNDS` (so the game ends itself), else the env's ``max_rounds``
    (the episode is truncated)."""
    fields = params_model(game_model(game)).model_fields
    out: dict[str, Any] = {k: v for k, v in SMALL_SIZES.items() if k in fields}
    if "threshold" in fields and "n_hunters" in out:
        out["threshold"] = 2
    rounds = [k for k in ("rounds", "n_rounds") if k in fields]
    if rounds:
        out[rounds[0]] = ROUNDS
    else:
        out["max_rounds"] = ROUNDS
    return out


def test_every_registered_game_and_the_example_are_covered():
    assert {
        "fishery",
        "public_goods",
        "collective_risk",
        "common_pool",
        "port_of_mars",
        "stag_hunt",
    } <= set(GAMES)


@pytest.mark.parametrize("game", GAMES)
def test_pettingzoo_conformance(game: str) -> None:
    params = small(game)
    with warnings.catch_warnings():
        # PettingZoo's advice (unbounded observation values, Dict action spaces) is not a failure
        warnings.simplefilter("ignore", UserWarning)
        parallel_api_test(parallel_env(game, **params), num_cycles=200)
        api_test(env(game, **params), num_cycles=200)
        parallel_seed_test(lambda: parallel_env(game, **params), num_cycles=200)
        seed_test(lambda: env(game, **params), num_cycles=200)


def play(penv: Any, seed: int, policy: Any = None) -> dict[str, Any]:
    """One episode with sampled actions (``policy(agent, step)`` when given); what happened."""
    for i, agent in enumerate(penv.possible_agents):
        penv.action_space(agent).seed(seed + i)
    observations, infos = penv.reset(seed=seed)
    trace: dict[str, Any] = {
        "observations": [observations],
        "rewards": [],
        "infos": [infos],
        "totals": dict.fromkeys(penv.possible_agents, 0.0),
        "start": {a: penv.score_of(a) for a in penv.possible_agents},
    }
    step = 0
    while penv.agents:
        actions = {
            a: penv.action_space(a).sample() if policy is None else policy(a, step)
            for a in penv.agents
        }
        observations, rewards, terminations, truncations, infos = penv.step(actions)
        trace["observations"].append(observations)
        trace["rewards"].append(rewards)
        trace["infos"].append(infos)
        for a, r in rewards.items():
            trace["totals"][a] += r
        trace["terminations"], trace["truncations"] = terminations, truncations
        step += 1
    return trace


def test_public_goods_rewards_are_the_games_payoffs():
    penv = parallel_env("public_goods", rl_seats=[0, 2], rounds=5)
    trace = play(penv, seed=3)
    table = penv.model.payoffs  # (rounds, players): the game's own payoff of every seat
    assert table.shape == (5, 4)
    for agent, seat in (("seat_0", 0), ("seat_2", 2)):
        per_round = [r[agent] for r in trace["rewards"]]
        assert per_round == pytest.approx(table[:, seat].tolist())
        assert trace["totals"][agent] == pytest.approx(float(penv.model.total_payoffs()[seat]))
    assert all(trace["terminations"].values()) and not any(trace["truncations"].values())


def test_the_example_games_rewards_are_its_hunters_wealth():
    penv = parallel_env("stag_hunt", rl_seats=2, rounds=6, n_hunters=5, threshold=2)
    trace = play(penv, seed=4)
    wealth = penv.model.datacollector.get_agent_vars_dataframe()["wealth"]
    last = wealth.xs(int(wealth.index.get_level_values(0).max()), level=0)
    by_slot = {a.slot: a.unique_id for a in penv.model.agents}
    for agent, seat in (("seat_0", 0), ("seat_1", 1)):
        assert trace["totals"][agent] == pytest.approx(float(last[by_slot[seat]]))
        assert trace["totals"][agent] > 0


@pytest.mark.parametrize("game", GAMES)
def test_rewards_add_up_to_the_seats_score(game: str) -> None:
    penv = parallel_env(game, rl_seats=1, **small(game))
    trace = play(penv, seed=5)
    agent = penv.possible_agents[0]
    final = seat_score(penv.model, penv.seat_agent(agent))
    assert trace["totals"][agent] == pytest.approx(final - trace["start"][agent])


def test_port_of_mars_rewards_are_points_and_answers_come_in_turn():
    penv = parallel_env("port_of_mars", rl_seats=[0, 1, 2, 3, 4])
    totals: dict[str, float] = {}
    turn_steps = 0
    for seed in (1, 2):
        trace = play(penv, seed=seed)
        for infos in trace["infos"]:
            asked = {a: i["decision"] for a, i in infos.items() if i["decision"]}
            if "port_of_mars.trade_accept" in asked.values():
                assert len(asked) == 1  # one recipient answers one offer, then the next
                turn_steps += 1
        for a in penv.possible_agents:
            points = penv.seat_agent(a).points
            assert trace["totals"][a] == pytest.approx(points)
            totals[a] = totals.get(a, 0.0) + points
    assert turn_steps > 0
    assert sum(totals.values()) > 0


def test_rule_and_strategy_seats_fill_the_rest():
    penv = parallel_env(
        "public_goods",
        rl_seats=[1],
        rounds=4,
        players={"groups": [{"strategy": "all_c", "count": 3}]},
    )
    trace = play(penv, seed=1, policy=lambda agent, step: 1)  # the RL seat always defects
    policies = {a.slot: a.policy.name for a in penv.model.agents}
    assert policies[1] == "external"
    assert [policies[s] for s in (0, 2, 3)] == ["strategy:all_c"] * 3
    actions = penv.model.actions  # (rounds, players), True = cooperated
    assert actions[:, [0, 2, 3]].all() and not actions[:, 1].any()
    assert [r["seat_1"] for r in trace["rewards"]] == pytest.approx([1 + 2 * 3 / 4] * 4)

    # a game with rule players: the rule player sits at every other seat, and answers the
    # decisions an RL seat does not control (the fishery's punishments)
    # (whom to punish: each seat's options differ -- anyone but itself)
    fishery = parallel_env("fishery", rl_seats=[1, 2], n_agents=4, max_rounds=3)
    assert "fishery.punish" in fishery.interface.uncontrolled
    assert "fishery.effort" in fishery.controls()
    play(fishery, seed=2)
    seated = sorted((a.slot, a.policy.name) for a in fishery.model.villagers)
    assert seated == [(0, "rule"), (1, "external"), (2, "external"), (3, "rule")]
    assert not fishery.model.villagers[2].language  # seated as a rule villager, not an LLM one
    assert fishery.model.villagers[1].policy.delegate.name == "rule"


def test_the_same_seed_gives_the_same_episode():
    def episode(seed: int) -> tuple[list[Any], list[Any], list[float]]:
        penv = parallel_env("stag_hunt", rl_seats=[0], rounds=8, n_hunters=6, threshold=5)
        trace = play(penv, seed=seed, policy=lambda agent, step: step % 2)
        shares = penv.model.datacollector.get_model_vars_dataframe()["stag_share"].tolist()
        penv.close()
        observations = [o["seat_0"].tolist() for o in trace["observations"]]
        return observations, [r["seat_0"] for r in trace["rewards"]], shares

    first, again, other = episode(11), episode(11), episode(12)
    assert first == again
    assert first != other  # the rule hunters draw from the seed


def test_an_invalid_action_is_refused_with_a_clear_error():
    penv = parallel_env("public_goods", rl_seats=2, rounds=3)
    penv.reset(seed=0)
    with pytest.raises(
        ValueError, match=r"seat_0: action 2 is not in its action space Discrete\(2\)"
    ):
        penv.step({"seat_0": 2, "seat_1": 0})
    with pytest.raises(ValueError, match="seat_1 was asked 'public_goods.action'"):
        penv.step({"seat_0": 0})
    with pytest.raises(ValueError, match=r"not in play: \['seat_7'\]"):
        penv.step({"seat_0": 0, "seat_1": 0, "seat_7": 0})
    # nothing was answered: the episode goes on from where it was
    _, rewards, *_ = penv.step({"seat_0": 0, "seat_1": 0})
    assert set(rewards) == {"seat_0", "seat_1"}
    assert penv.model.round == 2 and penv.model.actions.shape == (1, 4)

    mars = parallel_env("port_of_mars", rl_seats=1, n_rounds=2)
    observations, infos = mars.reset(seed=0)
    kind = infos["seat_0"]["decision"]
    with pytest.raises(ValueError, match="unknown decision kind 'port_of_mars.speak'"):
        mars.step({"seat_0": {"port_of_mars.speak": 0}})
    with pytest.raises(ValueError, match=f"seat_0 was asked {kind!r}: its action needs that key"):
        other = next(k for k in mars.kinds if k != kind)
        mars.step({"seat_0": {other: mars.action_space("seat_0")[other].sample()}})
    with pytest.raises(ValueError, match="is not in its action space"):
        mars.step({"seat_0": {"port_of_mars.invest": np.full(6, 2.0, dtype=np.float32)}})
    mars.close()


#: whether :class:`BrokenSeat` breaks (not while the env probes the game)
BREAK = {"on": False}


class BrokenSeat(Policy):
    """A seat whose policy fails in the second round (a bug in a player, not in the env)."""

    def decide(self, decision: Decision) -> Any:
        if BREAK["on"] and decision.step >= 2:
            raise ZeroDivisionError("a broken player")
        return "C"


def broken_seat(*, model: Any, seat: int | None, persona: Any) -> Policy:
    return BrokenSeat()


def test_an_error_in_the_game_reaches_step_and_reset_starts_again():
    penv = parallel_env(
        "public_goods",
        rl_seats=[0],
        rounds=3,
        players={"groups": [{"factory": "tests.test_pettingzoo:broken_seat", "seats": [1]}]},
    )
    # the switch of the module the population imported (pytest may import this file under
    # another name)
    switch = load_object("tests.test_pettingzoo:BREAK")
    switch["on"] = True
    try:
        penv.reset(seed=0)
        with pytest.raises(RuntimeError, match="the game failed: ZeroDivisionError"):
            penv.step({"seat_0": 0})
    finally:
        switch["on"] = False
    observations, infos = penv.reset(seed=1)
    assert infos["seat_0"]["decision"] == "public_goods.action"


def test_a_closed_env_refuses_steps_and_reset_starts_again():
    penv = parallel_env("public_goods", rl_seats=1, rounds=3)
    penv.reset(seed=0)
    penv.close()
    with pytest.raises(RuntimeError, match="call reset"):
        penv.step({"seat_0": 0})
    observations, _ = penv.reset(seed=0)
    assert penv.observation_space("seat_0").contains(observations["seat_0"])


def test_the_q_learning_example_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "pettingzoo_q_learning.py"), "--episodes", "12"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    lines = [line.split() for line in out.splitlines()]
    rows = [row for row in lines if row and row[0].isdigit()]
    assert [int(r[0]) for r in rows][-1] == 12
    for row in rows:
        assert 0.0 <= float(row[1]) <= 1.0 and float(row[2]) > 0
    assert "learned (greedy)" in out and "always defect" in out
