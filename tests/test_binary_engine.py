"""The fast batch engine against the Mesa models, the history object, seeding and errors."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mesa_dilemmas.agents.decisions import InvalidAnswer
from mesa_dilemmas.agents.policy import FixedPolicy
from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.binary.game import BinaryDilemmaModel, play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import C, D, Strategy, StrategyEntry, StrategyPolicy

MIX = (
    "tft(0.5)",
    "rnd(0.4)",
    "gtft(0.5, 0.3)",
    "ptft",
    "grim(0.34)",
    "cd(1)",
    "all_c",
    "tft_endgame(0.5, 3)",
)
GAMES = ("public_goods", "collective_risk", "common_pool")


def entries(specs=MIX) -> list[StrategyEntry]:
    return [StrategyEntry.reference(s) for s in specs]


def run_model(game: str, n: int, seed: int, specs=MIX, **params) -> BinaryDilemmaModel:
    model = game_model(game)(n_players=n, strategies=specs, rng=seed, **params)
    while model.running:
        model.step()
    return model


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("seed", [0, 7])
def test_mesa_model_and_engine_are_identical(game: str, seed: int) -> None:
    n = 8
    model = run_model(game, n, seed)
    assert model.store.round == 20
    lineup = [entries()[i % len(MIX)] for i in range(n)]
    result = play_batch(
        make_game(game, n, 20), [lineup], [model.strategy_entropy], keep_history=True
    )
    assert result.store is not None
    np.testing.assert_array_equal(result.store.actions[0], model.store.actions[0])
    np.testing.assert_array_equal(result.store.payoffs[0], model.store.payoffs[0])
    np.testing.assert_array_equal(result.totals[0], model.total_payoffs())
    if game == "common_pool":
        np.testing.assert_array_equal(result.stock[0], model.store.stock[0])
    # the stochastic strategies did draw: the comparison covers seeding too
    assert result.used_rng is not None and result.used_rng[0, 1]


def test_match_does_not_depend_on_its_batch() -> None:
    game = make_game("public_goods", 6, 20)
    rng = np.random.default_rng(3)
    pool = entries()
    lineups = [[pool[j] for j in rng.integers(0, len(pool), 6)] for _ in range(5)]
    together = play_batch(game, lineups, [11, 12, 13, 14, 15])
    alone = play_batch(game, lineups[2:3], [13])
    np.testing.assert_array_equal(together.totals[2], alone.totals[0])


def test_seeds_change_stochastic_outcomes_only() -> None:
    game = make_game("public_goods", 4, 20)
    rnd = [StrategyEntry.reference("rnd(0.5)")] * 4
    det = [StrategyEntry.reference("tft(0.5)")] * 4
    a = play_batch(game, [rnd, det], [1, 1])
    b = play_batch(game, [rnd, det], [1, 1])
    c = play_batch(game, [rnd, det], [2, 2])
    np.testing.assert_array_equal(a.totals, b.totals)
    assert not np.array_equal(a.totals[0], c.totals[0])
    np.testing.assert_array_equal(a.totals[1], c.totals[1])


def test_engine_leaves_global_random_state_alone() -> None:
    py, npy = random.getstate(), np.random.get_state()[1].copy()
    play_batch(make_game("common_pool", 16, 20), [[e for e in entries() for _ in range(2)]], [5])
    assert random.getstate() == py
    np.testing.assert_array_equal(np.random.get_state()[1], npy)


class Recorder(Strategy):
    """Checks, every round, that the cheap views agree with the full matrices."""

    seen: list = []

    def act(self, history):
        t = history.round_number
        assert history.my_actions.shape == (t,)
        assert history.opponent_actions.shape == (t, history.n_players - 1)
        mine = history.actions[:, history.me]
        np.testing.assert_array_equal(mine, history.my_actions)
        np.testing.assert_array_equal(
            history.opponent_actions.sum(axis=1), history.opponent_cooperators
        )
        np.testing.assert_array_equal(
            history.cooperators, history.opponent_cooperators + history.my_actions
        )
        np.testing.assert_array_equal(history.payoffs[:, history.me], history.my_payoffs)
        if t:
            assert history.last_opponent_cooperators == int(history.opponent_cooperators[-1])
            assert history.last_my_action == bool(history.my_actions[-1])
            with pytest.raises(ValueError):
                history.my_actions[0] = not history.my_actions[0]
        else:
            assert history.last_opponent_cooperators is None and history.is_first_round
        Recorder.seen.append((history.match, history.me, t, history.stock))
        return C if self.rng.random() < 0.5 else D


def test_history_views_are_consistent_and_read_only() -> None:
    Recorder.seen = []
    rec = StrategyEntry(name="rec", cls=Recorder)
    game = make_game("common_pool", 5, 6)
    result = play_batch(game, [[rec] * 5, [rec] * 5], [1, 2], keep_history=True)
    assert len(Recorder.seen) == 2 * 5 * 6
    # the stock a strategy sees is the stock at the start of its round
    stocks = {(b, me, t): s for b, me, t, s in Recorder.seen}
    assert stocks[(0, 0, 0)] == 20.0
    for b in (0, 1):
        for t in range(6):
            assert stocks[(b, 3, t)] == pytest.approx(result.stock[b, t])


class Broken(Strategy):
    def act(self, history):
        return "cooperate"


class Crashing(Strategy):
    def act(self, history):
        if history.round_number == 2:
            raise ZeroDivisionError("boom")
        return C


def test_invalid_answers_and_crashes_name_the_strategy() -> None:
    game = make_game("public_goods", 3, 5)
    good = StrategyEntry.reference("all_c")
    with pytest.raises(InvalidAnswer) as info:
        play_batch(game, [[good, StrategyEntry(name="b", cls=Broken), good]], [0])
    assert "Broken" in "\n".join(info.value.__notes__) and "seat 1" in "\n".join(
        info.value.__notes__
    )
    with pytest.raises(ZeroDivisionError) as info2:
        play_batch(game, [[good, good, StrategyEntry(name="c", cls=Crashing)]], [0])
    assert "round 3" in "\n".join(info2.value.__notes__)


@pytest.mark.parametrize("n", [2, 1024])
def test_group_size_extremes(n: int) -> None:
    params = {"k": 1.5} if n == 2 else {}
    game = make_game("public_goods", n, 3, **params)
    lineup = [entries()[i % len(MIX)] for i in range(n)]
    result = play_batch(game, [lineup], [0])
    assert result.totals.shape == (1, n)
    model = run_model("common_pool", n, 0, rounds=3)
    assert model.store.round == 3


def test_mesa_model_datacollector_and_metrics() -> None:
    model = run_model("common_pool", 6, 1)
    df = model.datacollector.get_model_vars_dataframe()
    assert list(df.columns) == ["cooperation_rate", "mean_payoff", "normalised_payoff", "stock"]
    assert len(df) == 20
    assert df["cooperation_rate"].between(0, 1).all()
    metrics = model.final_metrics()
    assert df["normalised_payoff"].iloc[-1] == pytest.approx(metrics["normalised_payoff"])
    assert df["mean_payoff"].mean() == pytest.approx(metrics["normalised_payoff"])
    assert df["stock"].iloc[-1] == metrics["final_stock"]
    low, high = model.rules.welfare_bounds()
    assert low <= metrics["normalised_payoff"] <= high
    assert model.running is False
    model.step()  # a finished match ignores further steps
    assert model.store.round == 20


def always_cooperate(**_: object) -> FixedPolicy:
    """A factory's policy (``factory = "tests.test_binary_engine:always_cooperate"``)."""
    return FixedPolicy({"public_goods.action": "C"})


def test_any_policy_can_play_through_the_same_interface() -> None:
    """A non-strategy policy (fixed answers) and strategy policies share one model, seated
    through the population as in every game."""
    players = {
        "groups": [
            {"factory": f"{__name__}:always_cooperate", "seats": [0]},
            {"strategy": "all_d", "seats": [1]},
            {"strategy": "tft(0.5)", "seats": [2]},
        ]
    }
    model = game_model("public_goods")(n_players=3, rounds=4, players=players, rng=0)
    while model.running:
        model.step()
    assert model.actions[:, 0].all() and not model.actions[:, 1].any()
    # tft(0.5) needs one of its two opponents: the fixed cooperator is enough
    assert model.actions[:, 2].all()
    assert model.broker.stats.total("asked") == 12


def test_model_parameter_schema_is_plain_data() -> None:
    from mesa_dilemmas.dilemmas.base import params_model

    for game in GAMES:
        schema = params_model(game_model(game)).model_json_schema()
        assert {"n_players", "rounds", "strategies"} <= set(schema["properties"])
        assert "policies" not in schema["properties"]
    with pytest.raises(TypeError, match="unexpected parameter 'n_player'"):
        game_model("public_goods")(n_player=4)


def test_model_params_are_validated() -> None:
    with pytest.raises(ValueError, match="^k: "):
        game_model("public_goods")(n_players=4, k=4.0)
    with pytest.raises(TypeError, match="unexpected parameter 'policies'"):
        game_model("public_goods")(n_players=4, policies=[StrategyPolicy("all_c")])
