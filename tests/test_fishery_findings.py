"""The norms paper's three rule-based validation findings, asserted statistically.

Each test runs the bundled scenario at a reduced size through the same runner a
user calls, then tests the finding with a significance test on the run tables.
Sizes were chosen so each effect is far from a coin flip (p-values reported in
docs/fishery.md for the full-size runs).
"""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from mesa_dilemmas.scenarios.runner import run_scenario

pytestmark = pytest.mark.slow


def run(tmp_path, name: str, *overrides: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    out = run_scenario(name, out_dir=tmp_path / "run", overrides=list(overrides), progress=False).out_dir
    return pd.read_parquet(out / "runs.parquet"), pd.read_parquet(out / "steps.parquet")


def test_punishment_shock_compliance_falls_and_stock_declines_faster(tmp_path):
    _, steps = run(tmp_path, "fishery/punishment_shock", "replications=40")
    after = steps[steps["Step"].between(16, 25)]
    compliance = after.groupby(["penalty", "iteration", "punishment_off_at"])["compliance"].mean().unstack()
    stock = steps[steps["Step"] == 35].set_index(["penalty", "iteration", "punishment_off_at"])["stock"].unstack()
    before = steps[steps["Step"] == 15].set_index(["penalty", "iteration", "punishment_off_at"])["stock"].unstack()
    # identical up to the shock: same seeds, same populations (common random numbers)
    pd.testing.assert_series_equal(before[0], before[15], check_names=False)
    # paired over the 80 (beta, replication) pairs: compliance after the shock is lower without punishment
    assert compliance[15].mean() < compliance[0].mean() - 0.05
    assert stats.wilcoxon(compliance[0], compliance[15], alternative="greater").pvalue < 0.001
    for beta in (10.0, 14.0):
        kept, off = stock.loc[beta][0], stock.loc[beta][15]
        assert off.mean() < kept.mean()
        assert stats.wilcoxon(kept, off, alternative="greater").pvalue < 0.001


def test_stronger_punishment_lengthens_survival_at_moderate_growth(tmp_path):
    runs, _ = run(tmp_path, "fishery/beta_growth_sweep", "replications=30",
                  "grid.penalty=[2.0, 10.0, 18.0]", "grid.growth_rate=[0.3, 0.4]")
    for r in (0.3, 0.4):
        cell = runs[runs["growth_rate"] == r]
        weak = cell[cell["penalty"] == 2.0]["survival_time"]
        for beta in (10.0, 18.0):
            strong = cell[cell["penalty"] == beta]["survival_time"]
            assert strong.mean() > weak.mean() + 5
            assert stats.mannwhitneyu(strong, weak, alternative="greater").pvalue < 0.01


def test_altruists_survive_longest_when_harsh_and_worst_when_rich(tmp_path):
    runs, _ = run(tmp_path, "fishery/altruism", "replications=40")
    t = {key: g["survival_time"] for key, g in runs.groupby(["growth_rate", "altruism_ratio"])}
    for other in (0.0, 0.5):  # harsh: altruists outlast selfish and mixed groups
        assert stats.mannwhitneyu(t[(0.2, 1.0)], t[(0.2, other)], alternative="greater").pvalue < 0.001
    for other in (0.0, 0.5):  # rich: altruists do worst
        assert stats.mannwhitneyu(t[(0.6, 1.0)], t[(0.6, other)], alternative="less").pvalue < 0.01
    rich_alt = runs[(runs["growth_rate"] == 0.6) & (runs["altruism_ratio"] == 1.0)]
    # ... because they under-harvest and starve, not because the lake collapses
    assert (rich_alt["deaths"] > 0).mean() > 0.5 and (rich_alt["stock"] > 150).mean() > 0.9
