"""Behavioural feature vectors, PCA placement of the reference strategies, set statistics, the CLI."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary import behaviour as bh
from mesa_dilemmas.dilemmas.binary import cli as strategies_cli
from mesa_dilemmas.dilemmas.binary.strategies import (
    C,
    D,
    Strategy,
    StrategyEntry,
    load_strategy_set,
)


def test_exactly_961_distinct_opponent_histories() -> None:
    histories = bh.opponent_histories()
    assert [len(h) for h in histories] == [1, 4, 20, 120, 816]
    assert bh.feature_dimension() == 961 == len(bh.feature_labels())
    # permutation invariance: no two histories of a round are the same multiset
    for h in histories[1:]:
        keys = {tuple(sorted(map(tuple, x.tolist()))) for x in h}
        assert len(keys) == len(h)
    assert bh.feature_labels()[1:5] == ["r2:D|D|D", "r2:D|D|C", "r2:D|C|C", "r2:C|C|C"]
    assert bh.feature_dimension(3, 3) == 1 + 3 + 10


def test_feature_vectors_of_reference_strategies() -> None:
    all_c = bh.feature_vector(StrategyEntry.reference("all_c"))
    all_d = bh.feature_vector(StrategyEntry.reference("all_d"))
    assert all_c.shape == (961,) and all_c.min() == 1.0 and all_d.max() == 0.0
    cc2 = bh.feature_vector(StrategyEntry.reference("cc(2)"))
    # round 2 after 0, 1, 2, 3 cooperating opponents: cooperate iff at least 2
    assert cc2[1:5].tolist() == [0.0, 0.0, 1.0, 1.0]
    cd1 = bh.feature_vector(StrategyEntry.reference("cd(1)"))
    assert cd1[0] == 0.0 and cd1[1:5].tolist() == [1.0, 0.0, 0.0, 0.0]
    rnd = bh.feature_vector(StrategyEntry.reference("rnd(0.3)"), rollouts=50)
    assert set(np.unique(rnd)) - {0.0, 1.0}  # averaged over rollouts, not 0/1
    assert rnd.mean() == pytest.approx(0.3, abs=0.02)


class Counting(Strategy):
    calls = 0

    def act(self, history):
        Counting.calls += 1
        return C if history.round_number % 2 == 0 else D


class Coin(Strategy):
    calls = 0

    def act(self, history):
        Coin.calls += 1
        return C if self.rng.random() < 0.5 else D


class Cheater(Strategy):
    def act(self, history):
        return C if random.random() < 0.5 else D


def test_rollouts_are_repeated_only_for_stochastic_strategies() -> None:
    Counting.calls = Coin.calls = 0
    bh.feature_vector(StrategyEntry(name="count", cls=Counting), rollouts=50)
    assert Counting.calls == 1 * 1 + 4 * 2 + 20 * 3 + 120 * 4 + 816 * 5  # 4,629: one rollout each
    bh.feature_vector(StrategyEntry(name="coin", cls=Coin), rollouts=5)
    assert Coin.calls == 5 * 4629


def test_feature_vectors_are_seeded_and_global_random_state_is_guarded() -> None:
    entry = StrategyEntry.reference("gtft(0.5, 0.5)")
    a = bh.feature_vector(entry, rollouts=8, seed=1)
    b = bh.feature_vector(entry, rollouts=8, seed=1)
    c = bh.feature_vector(entry, rollouts=8, seed=2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    with pytest.raises(bh.GlobalRandomStateError, match="cheat"):
        bh.feature_vector(StrategyEntry(name="cheat", cls=Cheater), rollouts=2)


@pytest.fixture(scope="module")
def reference_analysis():
    return strategies_cli.analyse(
        ["reference_collective", "reference_exploitative"], rollouts=10, seed=0
    )


def test_reference_strategies_land_where_the_paper_says(reference_analysis) -> None:
    """Sec. 4.2: A-D at the far left and A-C at the far right of the first component."""
    res = reference_analysis
    pc1 = dict(zip(res.reference_labels, res.reference_coords[:, 0], strict=True))
    everything = np.concatenate([res.coords[:, 0], res.reference_coords[:, 0]])
    assert pc1["A-D"] == pytest.approx(everything.min())
    assert pc1["A-C"] == pytest.approx(everything.max())
    # PC2 (responsiveness): conditional cooperators below conditional defectors
    pc2 = dict(zip(res.reference_labels, res.reference_coords[:, 1], strict=True))
    assert pc2["CC(2)"] < pc2["CD(2)"]
    assert res.explained[0] > res.explained[1] > 0


def test_table_statistics(reference_analysis) -> None:
    table = reference_analysis.table.set_index("set")
    coll, expl = table.loc["reference_collective"], table.loc["reference_exploitative"]
    assert coll["cooperation"] > 0.5 > 0.25 > expl["cooperation"]
    assert coll["d"] == expl["d"] > 1.0
    assert coll["d_vs"] == "reference_exploitative"
    assert 0 < expl["MPD"] < 2 and 1 <= coll["PR"] <= coll["strategies"]


def test_distance_statistics_on_known_data() -> None:
    rng = np.random.default_rng(0)
    noise = rng.random((300, 961))
    assert bh.normalised_mpd(noise) == pytest.approx(1.0, abs=0.01)
    assert bh.normalised_mpd(np.ones((5, 961))) == 0.0
    assert bh.random_distance(961) == pytest.approx(np.sqrt(961 / 6), rel=0.01)
    # isotropic spread in k dimensions -> participation ratio close to k
    iso = np.zeros((2000, 20))
    iso[:, :4] = rng.normal(size=(2000, 4))
    assert bh.participation_ratio(iso) == pytest.approx(4.0, rel=0.05)
    # Cohen's d: unit-variance clouds whose centroids are 3 apart along one axis
    a = rng.normal(size=(4000, 1))
    assert bh.cohens_d(a, a + 3.0) == pytest.approx(3.0, rel=0.05)
    assert np.isnan(bh.cohens_d(a[:1], a))


def test_cli_writes_table_and_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="mesa-dilemmas analyse")
    strategies_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "strategies",
            "reference_exploitative",
            "reference_collective",
            "--game",
            "common_pool",
            "--rollouts",
            "3",
            "--limit",
            "6",
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ]
    )
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "| reference_exploitative | reference | exploitative | 6 |" in out
    files = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"table.csv", "table.md", "summary.json", "features.npz", "pca.csv", "pca.png"} <= files
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["feature_dimension"] == 961 and summary["game"] == "common_pool"
    assert set(summary["references"]) >= {"A-C", "A-D", "CC(1)", "CD(3)"}
    data = np.load(tmp_path / "out" / "features.npz")
    assert data["features"].shape == (12, 961)
    bad = parser.parse_args(
        ["strategies", "no_such_set", "--out", str(tmp_path / "x"), "--no-progress"]
    )
    assert bad.func(bad) == 2
    assert "no such set" in capsys.readouterr().err


def test_set_features_are_independent_of_order() -> None:
    s = load_strategy_set("reference_exploitative")
    fwd = bh.feature_matrix([s[0], s[9]], rollouts=4)
    rev = bh.feature_matrix([s[9], s[0]], rollouts=4)
    np.testing.assert_array_equal(fwd, rev[::-1])
