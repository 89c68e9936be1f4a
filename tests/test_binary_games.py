"""Payoff rules and stock dynamics of the three binary-action games, against hand-computed cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.collective_risk.model import CollectiveRiskGame, default_threshold
from mesa_dilemmas.dilemmas.common_pool.model import CommonPoolGame
from mesa_dilemmas.dilemmas.public_goods.model import PublicGoodsGame


def row(*actions: str) -> np.ndarray:
    return np.array([[a == "C" for a in actions]])


# -- Public Goods ------------------------------------------------------------------


def test_public_goods_paper_examples_n6_k2() -> None:
    """Appendix A.1's worked examples (n = 6, k = 2)."""
    game = PublicGoodsGame(6, k=2.0)
    pay, _ = game.payoffs(row(*"DDDDDD"), None)
    assert pay.tolist() == [[1.0] * 6]
    pay, _ = game.payoffs(row(*"CCCCCC"), None)
    assert pay.tolist() == [[2.0] * 6]
    pay, _ = game.payoffs(row(*"CCCDDD"), None)
    assert pay[0, :3].tolist() == [1.0, 1.0, 1.0]
    assert pay[0, 3:].tolist() == [2.0, 2.0, 2.0]


def test_public_goods_batch_rows_are_independent() -> None:
    game = PublicGoodsGame(4, k=3.0)
    pay, _ = game.payoffs(np.array([[True, False, False, False], [True, True, True, True]]), None)
    np.testing.assert_allclose(pay[0], [0.75, 1.75, 1.75, 1.75])
    np.testing.assert_allclose(pay[1], [3.0] * 4)


@pytest.mark.parametrize(("n", "k"), [(4, 1.0), (4, 4.0), (4, 5.0), (2, 2.0)])
def test_public_goods_requires_1_lt_k_lt_n(n: int, k: float) -> None:
    with pytest.raises(ValueError, match=r"^k: .*1 < k < n_players"):
        PublicGoodsGame(n, k=k)


def test_public_goods_two_players_with_small_k() -> None:
    pay, _ = PublicGoodsGame(2, k=1.5).payoffs(row("C", "D"), None)
    np.testing.assert_allclose(pay, [[0.75, 1.75]])


# -- Collective Risk ------------------------------------------------------------------


def test_collective_risk_threshold_met_and_missed() -> None:
    game = CollectiveRiskGame(4, k=2.0)
    assert game.m == 2
    pay, _ = game.payoffs(row(*"CCDD"), None)  # threshold met: C gets k, D gets k + 1
    assert pay.tolist() == [[2.0, 2.0, 3.0, 3.0]]
    pay, _ = game.payoffs(row(*"CDDD"), None)  # missed: C gets 0, D keeps 1
    assert pay.tolist() == [[0.0, 1.0, 1.0, 1.0]]
    pay, _ = game.payoffs(row(*"CCCC"), None)
    assert pay.tolist() == [[2.0] * 4]


@pytest.mark.parametrize(
    ("n", "m"), [(2, 2), (3, 2), (4, 2), (5, 3), (6, 3), (7, 4), (256, 128), (1025, 513)]
)
def test_collective_risk_threshold_rounding(n: int, m: int) -> None:
    assert default_threshold(n) == m
    assert CollectiveRiskGame(n).m == m


def test_collective_risk_validation() -> None:
    with pytest.raises(ValueError, match=r"^m: "):
        CollectiveRiskGame(4, m=5)
    with pytest.raises(ValueError, match=r"^k: "):
        CollectiveRiskGame(4, k=0.0)
    assert CollectiveRiskGame(4, m=1).m == 1


# -- Common Pool ---------------------------------------------------------------------


def test_common_pool_round_by_hand() -> None:
    """n = 4, K = 16, S = 16: C takes S/2n = 2, D takes S/n = 4; S' = S n_c / 2n; logistic regrowth."""
    game = CommonPoolGame(4)
    assert game.capacity == 16.0
    stock = game.initial_state(1)
    assert stock.tolist() == [16.0]
    pay, nxt = game.payoffs(row(*"CCDD"), stock)
    assert pay.tolist() == [[2.0, 2.0, 4.0, 4.0]]
    # S' = 16 - 12 = 4; S_next = 4 + 2*4*(1 - 4/16) = 10
    assert nxt.tolist() == [10.0]
    pay, nxt2 = game.payoffs(row(*"CCCC"), nxt)
    assert pay.tolist() == [[1.25] * 4]
    # S' = 5; 5 + 10 * (1 - 5/16) = 11.875
    assert nxt2.tolist() == [pytest.approx(11.875)]


@pytest.mark.parametrize("n", [2, 4, 16, 256])
def test_common_pool_all_cooperate_keeps_capacity(n: int) -> None:
    game = CommonPoolGame(n)
    stock = game.initial_state(1)
    everyone = np.ones((1, n), dtype=bool)
    for _ in range(20):
        pay, stock = game.payoffs(everyone, stock)
        np.testing.assert_allclose(pay, 2.0)  # S / 2n with S = 4n
        assert stock[0] == pytest.approx(4.0 * n)


@pytest.mark.parametrize("n", [2, 4, 64])
def test_common_pool_one_all_defect_round_destroys_the_stock(n: int) -> None:
    game = CommonPoolGame(n)
    pay, stock = game.payoffs(np.zeros((1, n), dtype=bool), game.initial_state(1))
    np.testing.assert_allclose(pay, 4.0)  # S / n
    assert stock[0] == 0.0
    pay, stock = game.payoffs(np.ones((1, n), dtype=bool), stock)
    assert pay.sum() == 0.0 and stock[0] == 0.0


def test_common_pool_stock_is_capped_at_capacity() -> None:
    game = CommonPoolGame(4, capacity=16.0, growth=3.0)
    _, stock = game.payoffs(np.ones((1, 4), dtype=bool), np.array([16.0]))
    assert stock[0] == 16.0  # 8 + 3*8*(1/2) = 20 -> capped


def test_common_pool_validation() -> None:
    with pytest.raises(ValueError, match=r"^capacity: "):
        CommonPoolGame(4, capacity=0)
    with pytest.raises(ValueError, match=r"^growth: "):
        CommonPoolGame(4, growth=-1)


# -- welfare bounds: brute force over every sequence of cooperator counts ------------------------


@pytest.mark.parametrize(
    "game",
    [
        PublicGoodsGame(4, 4, k=2.0),
        PublicGoodsGame(5, 3, k=3.5),
        CollectiveRiskGame(4, 4),
        CollectiveRiskGame(5, 3),
        CommonPoolGame(4, 4),
        CommonPoolGame(3, 5),
        CommonPoolGame(4, 1),
    ],
    ids=lambda g: f"{g.NAME}-n{g.n_players}-r{g.n_rounds}",
)
def test_welfare_bounds_match_brute_force(game) -> None:
    values = [
        game.play_counts(seq)
        for seq in itertools.product(range(game.n_players + 1), repeat=game.n_rounds)
    ]
    low, high = game.welfare_bounds()
    assert low == pytest.approx(min(values))
    assert high == pytest.approx(max(values))


def test_paper_bounds_at_default_parameters() -> None:
    assert PublicGoodsGame(16).welfare_bounds() == (1.0, 2.0)
    # CRD, n = 16, m = 8: max = k + (n - m)/n = 2.5; min = (n - m + 1)/n
    assert CollectiveRiskGame(16).welfare_bounds() == pytest.approx((9 / 16, 2.5))
    # CPR: max = K (r + 1) / (2 n r) = 2.1; min = K / (n r) = 0.2
    assert CommonPoolGame(64).welfare_bounds() == pytest.approx((0.2, 2.1))


def test_make_game_by_name_and_errors() -> None:
    assert make_game("collective_risk", 8, 20, k=3.0).params() == {"k": 3.0, "m": 4}
    with pytest.raises(ValueError, match="game_params.q: unknown parameter"):
        make_game("public_goods", 4, 20, q=1)
    with pytest.raises(ValueError, match="unknown game"):
        make_game("chess", 4)
    with pytest.raises(ValueError, match="n_players"):
        make_game("public_goods", 1)


def test_a_scenario_with_more_strategies_than_seats_says_so(tmp_path):
    """Strategies cycled over the seats beyond the last seat never play: the run says which in
    one line and keeps it in the manifest (it used to drop them silently)."""
    import json

    from cli_runner import cli

    scenario = tmp_path / "crowded.toml"
    scenario.write_text(
        'game = "public_goods"\nreplications = 1\nmax_steps = 2\n'
        '[params]\nn_players = 3\nrounds = 2\nstrategies = ["all_c", "all_d", "tft", "grim", "all_c"]\n'
    )
    out = tmp_path / "run"
    done = cli("run", str(scenario), "--out", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("note: strategies:")]
    assert said == ["note: strategies: 5 given for 3 seats; 2 never play: grim, all_c"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["notes"] == [said[0].removeprefix("note: ")]
