"""Published-format strategy files load as they are and play reproducibly in the sandbox."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.agents.strategies import load_strategy_set
from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

PUBLISHED = Path(__file__).parent / "strategy_corpus" / "published"


def test_published_files_load_with_their_descriptions() -> None:
    s = load_strategy_set(PUBLISHED / "public_goods_collective.py")
    assert [e.name for e in s] == [
        "Strategy_COLLECTIVE_1",
        "Strategy_COLLECTIVE_2",
        "Strategy_COLLECTIVE_3",
    ]
    assert all(e.interface == "published" and not e.trusted for e in s)
    assert s.get("Strategy_COLLECTIVE_1").description.startswith("Start by contributing")
    cpr = load_strategy_set(PUBLISHED / "common_pool_exploitative.py")
    assert cpr[0].description.startswith("Take the large share")


def test_published_strategies_play_and_global_random_is_seeded() -> None:
    s = load_strategy_set(PUBLISHED / "public_goods_collective.py")
    game = make_game("public_goods", 4, 10)
    rng = np.random.default_rng(0)
    lineups = [[s[j] for j in rng.integers(0, len(s), 4)] for _ in range(50)]
    a = play_batch(game, lineups, np.arange(50), keep_history=True)
    b = play_batch(game, lineups, np.arange(50), keep_history=True)
    assert a.flags == [] and a.store is not None and b.store is not None
    np.testing.assert_array_equal(a.store.actions, b.store.actions)
    # global random use is detected per seat: only Strategy_COLLECTIVE_2 draws
    seats = np.array([[e.name == "Strategy_COLLECTIVE_2" for e in lu] for lu in lineups])
    assert a.used_rng is not None
    np.testing.assert_array_equal(a.used_rng, seats)
    # the last round: Strategy_COLLECTIVE_2 keeps its endowment, as its code says
    assert not a.store.actions[:, :, -1][seats].any()


def test_common_pool_stock_reaches_published_strategies() -> None:
    cpr = load_strategy_set(PUBLISHED / "common_pool_exploitative.py")
    game = make_game("common_pool", 4, 8)
    r = play_batch(game, [[cpr[0]] * 4], [0], keep_history=True)
    assert r.store is not None and r.stock is not None
    # defects while the stock is above half the capacity, cooperates below
    above = r.stock[0, :8] > game.params()["capacity"] / 2
    np.testing.assert_array_equal(r.store.actions[0, 0, :8], ~above)


def test_a_set_without_strategies_is_an_error_that_says_why(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("X = 1\n")
    with pytest.raises(ValueError, match="has no strategies: no Strategy subclass"):
        load_strategy_set(tmp_path / "empty.py")
    (tmp_path / "broken.py").write_text("raise ImportError('missing dependency foo')\n")
    with pytest.raises(ValueError, match="import failed: ImportError: missing dependency foo"):
        load_strategy_set(tmp_path / "broken.py")


def test_same_seed_same_self_play_with_any_number_of_processes(tmp_path: Path) -> None:
    """Strategies that draw on Python's and numpy's global generators are reproducible."""
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.experiment import RunContext
    from mesa_dilemmas.scenarios.self_play import SelfPlayExperiment

    overrides = [
        f"options.collective_set='{PUBLISHED / 'public_goods_collective.py'}'",
        "options.group_sizes=[4, 6]",
        "options.samples=30",
        "options.splits=3",
    ]
    sc, opts = load_scenario("public_goods/self_play", overrides)
    runs = [
        SelfPlayExperiment()
        .run(sc, opts, RunContext(out_dir=tmp_path, processes=p, progress=False))
        .runs
        for p in (1, 1, 2)
    ]
    pd_testing = pytest.importorskip("pandas.testing")
    pd_testing.assert_frame_equal(runs[0], runs[1])
    pd_testing.assert_frame_equal(runs[0], runs[2])
    assert runs[0]["collective_payoff"].notna().any()
