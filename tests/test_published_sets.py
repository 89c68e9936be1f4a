"""Published-format strategy files load as they are and play reproducibly in the sandbox."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set

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
    from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.experiment import RunContext

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


FORMATS = Path(__file__).parent / "strategy_corpus" / "published_format"


def authors_layout(root: Path) -> Path:
    """Our fixture files laid out as the authors' ``strategies/<game>/<model>.py`` (two "models"
    per game: one file in each call format, with a ``_descriptions.py`` beside some)."""
    import shutil

    for game, stem in (("public_goods", "public_goods"), ("common_pool", "common_pool")):
        folder = root / "strategies" / game
        folder.mkdir(parents=True)
        for era in ("paper", "current"):
            for suffix in ("", "_descriptions"):
                src = FORMATS / f"{era}_{stem}{suffix}.py"
                if src.is_file():
                    shutil.copy(src, folder / f"{era}-model{suffix}.py")
    return root / "strategies"


def test_the_authors_folder_loads_by_game_model_and_attitude(tmp_path: Path) -> None:
    strategies = authors_layout(tmp_path)
    pg = load_strategy_set(strategies / "public_goods")
    assert pg.games == ("public_goods",) and len(pg) == 9
    assert {e.source for e in pg} == {"paper-model", "current-model"}
    first = pg.get("paper-model/Strategy_COLLECTIVE_1")
    assert first.description.startswith("Cooperate") and "Strategy" not in first.description
    # the game's folder chosen by selector, then a model and an attitude, in any order
    same = load_strategy_set(f"{strategies}#public_goods")
    assert [e.name for e in same] == [e.name for e in pg]
    one = load_strategy_set(f"{tmp_path}#public_goods#paper-model#exploitative")
    assert [e.name for e in one] == [
        "paper-model/Strategy_EXPLOITATIVE_1",
        "paper-model/Strategy_EXPLOITATIVE_2",
    ]
    assert (one.source, one.attitude) == ("paper-model", "exploitative")
    coll = load_strategy_set(f"{strategies / 'common_pool'}#collective")
    assert {e.attitude for e in coll} == {"collective"} and len(coll) == 2
    # one model's file alone: its stem is the model, its folder the game
    f = load_strategy_set(f"{strategies / 'public_goods' / 'current-model.py'}#exploitative")
    assert (f.source, f.games, len(f)) == ("current-model", ("public_goods",), 2)
    # JSON descriptions in a folder
    js = load_strategy_set(PUBLISHED)
    assert js.get("public_goods_collective/Strategy_COLLECTIVE_1").description.startswith(
        "Start by contributing"
    )


def test_a_folder_that_gives_no_strategies_is_one_line_that_says_why(tmp_path: Path) -> None:
    strategies = authors_layout(tmp_path / "repo")
    with pytest.raises(ValueError, match=r"one folder of strategies per game \(common_pool, "):
        load_strategy_set(strategies)
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ValueError, match="holds no strategy_set.toml, no strategy files"):
        load_strategy_set(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "a.py").write_text("X = 1\n")
    (tmp_path / "empty" / "b.py").write_text("def f(:\n    pass\n")
    with pytest.raises(ValueError) as info:
        load_strategy_set(tmp_path / "empty")
    message = str(info.value)
    assert "has no strategies: b.py: import failed: SyntaxError" in message
    assert "\n" not in message
    with pytest.raises(ValueError, match="no 'gpt' strategies .*models found: current-model"):
        load_strategy_set(f"{strategies / 'public_goods'}#gpt")
