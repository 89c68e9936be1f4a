"""Both published formats of paper 002's authors: loading, attitudes, their semantics, seeding.

The fixture files in ``strategy_corpus/published_format`` are our own strategies written in
the authors' two call formats.  ``EXPECTED`` holds the totals the authors' engine gives for
them (``benchmarks/bench_published.py identity`` compares live when their checkout is at hand).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

FIX = Path(__file__).parent / "strategy_corpus" / "published_format"
BENCH = Path(__file__).parents[1] / "benchmarks" / "bench_published.py"


@pytest.mark.parametrize(
    ("file", "attitudes"),
    [
        ("paper_public_goods.py", ["collective"] * 3 + ["exploitative"] * 2),
        ("current_public_goods.py", ["collective"] * 2 + ["exploitative"] * 2),
        ("paper_common_pool.py", ["collective", "exploitative"]),
        ("current_common_pool.py", ["collective", "exploitative"]),
    ],
)
def test_both_formats_load_with_attitudes_and_descriptions(file: str, attitudes: list[str]) -> None:
    s = load_strategy_set(FIX / file)
    assert [e.attitude for e in s] == attitudes
    assert all(e.interface == "published" for e in s)
    if "public_goods" in file:  # descriptions from the _descriptions.py file, not the docstrings
        assert s[0].description.startswith("Cooperate")
        assert "Strategy" not in s[0].description
    coll = load_strategy_set(f"{FIX / file}#collective")
    expl = load_strategy_set(f"{FIX / file}#exploitative")
    assert len(coll) + len(expl) == len(s)
    assert {e.attitude for e in coll} == {"collective"} and coll.attitude == "collective"
    with pytest.raises(ValueError, match="no 'altruistic' strategies"):
        load_strategy_set(f"{FIX / file}#altruistic")


def _lineups(s, n: int, matches: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [[s[j] for j in rng.integers(0, len(s), n)] for _ in range(matches)]


def test_the_authors_semantics_fallbacks_and_action_values() -> None:
    s = load_strategy_set(FIX / "paper_public_goods.py")
    game = make_game("public_goods", 4, 6)
    by = {e.name: e for e in s}
    lineup = [
        by["Strategy_COLLECTIVE_3"],
        by["Strategy_EXPLOITATIVE_2"],
        by["Strategy_COLLECTIVE_2"],
        by["Strategy_COLLECTIVE_1"],
    ]
    r = play_batch(game, [lineup], [0], keep_history=True)
    assert r.flags == [] and r.store is not None
    acts = r.store.actions[0]
    assert acts[0, 2]  # the collective strategy's error in round 3 falls back to C
    assert not acts[1, 1]  # the exploitative strategy's string answer in round 2 falls back to D
    assert acts[2].all()  # Action arithmetic and a mutable history every round: always C


def _authors_engine_expected() -> dict:
    """Totals of the authors' engine on our fixtures (commit 896462c for paper_*, 4c23c2b for
    current_*), 20 lineups of 5 players and 6 rounds from ``np.random.default_rng(5)``."""
    import json

    return json.loads((FIX / "expected_authors.json").read_text())


@pytest.mark.parametrize(
    "file",
    [
        "paper_public_goods.py",
        "current_public_goods.py",
        "paper_common_pool.py",
        "current_common_pool.py",
    ],
)
def test_identical_to_the_authors_engine(file: str) -> None:
    s = load_strategy_set(FIX / file)
    game = make_game("common_pool" if "pool" in file else "public_goods", 5, 6)
    lineups = _lineups(s, 5, 20, 5)
    r = play_batch(game, lineups, np.arange(20))
    expected = np.array(_authors_engine_expected()[file])
    np.testing.assert_allclose(r.totals, expected, rtol=0, atol=1e-9)


def test_a_reseeding_strategy_spoils_nobody_else() -> None:
    s = load_strategy_set(FIX / "reseeding.py")
    game = make_game("public_goods", 4, 20)
    c1, c2, fixed = s[0], s[1], s[2]
    by_id = load_strategy_set(FIX / "reseeding_by_identity.py")[0]
    alone = play_batch(game, [[c1, c2, c1, c2]] * 8, np.arange(8), keep_history=True)
    mixed = play_batch(game, [[c1, c2, by_id, fixed]] * 8, np.arange(8), keep_history=True)
    again = play_batch(game, [[c1, c2, fixed, by_id]] * 8, np.arange(8), keep_history=True)
    assert alone.store is not None and mixed.store is not None and again.store is not None
    # seats 0 and 1 draw the same numbers whoever sits beside them
    np.testing.assert_array_equal(alone.store.actions[:, :2], mixed.store.actions[:, :2])
    np.testing.assert_array_equal(mixed.store.actions[:, :2], again.store.actions[:, :2])
    np.testing.assert_array_equal(mixed.store.actions[:, 3], again.store.actions[:, 2])
    assert alone.store.actions[:, :2].any() and not alone.store.actions[:, :2].all()


def test_same_seed_same_self_play_with_a_reseeding_set(tmp_path: Path) -> None:
    from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.experiment import RunContext

    f = FIX / "reseeding.py"
    overrides = [  # the reseeder with constants is the exploitative side (reproducible itself)
        f"options.collective_set='{f}#collective'",
        f"options.exploitative_set='{f}#exploitative'",
        "options.group_sizes=[4]",
        "options.samples=20",
        "options.splits=2",
    ]
    sc, opts = load_scenario("public_goods/self_play", overrides)
    runs = [
        SelfPlayExperiment()
        .run(sc, opts, RunContext(out_dir=tmp_path, processes=p, progress=False))
        .runs
        for p in (1, 2)
    ]
    pd_testing = pytest.importorskip("pandas.testing")
    pd_testing.assert_frame_equal(runs[0], runs[1])


def test_a_set_whose_strategies_all_fail_stops_the_run(tmp_path: Path) -> None:
    from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment
    from mesa_dilemmas.scenarios.config import ConfigError, load_scenario
    from mesa_dilemmas.scenarios.experiment import RunContext

    bad = tmp_path / "broken.py"
    bad.write_text(
        "from emergent_llm.common import Action\n"
        "from emergent_llm.players import BaseStrategy\n"
        "class Strategy_COLLECTIVE_1(BaseStrategy):\n"
        "    def __init__(self, game_description):\n"
        "        self.g = game_description\n"
        "    def __call__(self, state, history):  # the other format's call: always fails\n"
        "        return Action.C if history.opponent_cooperators[-1] else Action.D\n"
    )
    sc, opts = load_scenario(
        "public_goods/self_play",
        [
            f"options.collective_set='{bad}'",
            "options.group_sizes=[4]",
            "options.samples=4",
            "options.splits=2",
        ],
    )
    with pytest.raises(ConfigError, match="every strategy of set .* failed"):
        SelfPlayExperiment().run(
            sc, opts, RunContext(out_dir=tmp_path, processes=1, progress=False)
        )


def test_which_classes_use_random_is_read_from_the_file_parsed_once():
    """The class sources cut from one parse of the file say what ``inspect.getsource`` says
    (whether the class mentions ``random``), without parsing the file once per class."""
    import inspect

    from mesa_dilemmas.dilemmas.binary.strategies import published
    from mesa_dilemmas.dilemmas.binary.strategies.loader import _import_path

    checked = 0
    for path in sorted(FIX.glob("*.py")):
        if path.stem.endswith("_descriptions"):
            continue
        published._class_sources.cache_clear()
        for cls in published.published_classes(_import_path(path)):
            assert published._uses_random(cls) == ("random" in inspect.getsource(cls)), cls
            checked += 1
        assert published._class_sources.cache_info().misses == 1  # one parse per file
    assert checked >= 10
