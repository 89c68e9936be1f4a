"""Norm-structure metrics on hand-made vectors, and the paper's statistics on known data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mesa_dilemmas.analysis.stats import compact_letters, tukey_hsd, two_way_anova, welch_t
from mesa_dilemmas.dilemmas.fishery.norm_structure import (
    alignment,
    individual_similarity,
    numeric_norm_structure,
    text_norm_structure,
)


def test_similarity_and_alignment_on_hand_made_vectors():
    same = np.array([[1.0, 0.0], [2.0, 0.0], [0.5, 0.0]])
    assert individual_similarity(same) == pytest.approx(1.0)
    assert alignment(same) == pytest.approx(1.0)
    orthogonal = np.eye(3)
    assert individual_similarity(orthogonal) == pytest.approx(0.0)
    # mean direction (1,1,1)/sqrt(3): each unit vector has cosine 1/sqrt(3) with it
    assert alignment(orthogonal) == pytest.approx(1 / np.sqrt(3))
    pair = np.array([[1.0, 0.0], [1.0, 1.0]])  # cosine 1/sqrt(2)
    assert individual_similarity(pair) == pytest.approx(1 / np.sqrt(2))
    # mean of the two unit vectors bisects them: cosine cos(22.5 deg) with each
    assert alignment(pair) == pytest.approx(np.cos(np.pi / 8))
    opposite = np.array([[1.0, 0.0], [-1.0, 0.0]])
    assert individual_similarity(opposite) == pytest.approx(-1.0) and alignment(opposite) == 0.0


def test_text_norms_identical_vs_disjoint():
    same = text_norm_structure(["Fish only what you need."] * 4)
    assert same.similarity == pytest.approx(1.0) and same.embedder == "tfidf"
    disjoint = text_norm_structure(["alpha beta", "gamma delta", "epsilon zeta"])
    assert disjoint.similarity == pytest.approx(0.0)
    mixed = text_norm_structure(
        ["keep effort low", "keep effort low please", "take everything now"]
    )
    assert 0.0 < mixed.similarity < 1.0 and mixed.alignment > mixed.similarity


def test_numeric_norms():
    s = numeric_norm_structure(np.array([[0.5, 0.8, 5.0], [0.5, 0.8, 5.0]]))
    assert s.similarity == pytest.approx(1.0) and s.embedder == "numeric"


def test_numeric_norms_are_standardised_so_random_strategies_are_not_similar():
    rng = np.random.default_rng(0)
    sims = []
    for _ in range(200):  # Table 3's initial ranges: e ~ U(0, 1), m ~ U(0.5, 1), g ~ U(2, 8)
        x = np.column_stack([rng.uniform(0, 1, 10), rng.uniform(0.5, 1, 10), rng.uniform(2, 8, 10)])
        sims.append(numeric_norm_structure(x).similarity)
    assert np.mean(sims) < 0.05 and min(sims) >= 0.0 and max(sims) < 0.5  # near 0, not 0.9
    # nine villagers agree, one deviates: high similarity and perfect alignment of deviations
    x = np.array([[0.5, 0.8, 5.0]] * 9 + [[0.9, 0.6, 7.0]])
    s = numeric_norm_structure(x)
    assert s.similarity > 0.5 and s.alignment == pytest.approx(1.0)
    # a scale change of one column changes nothing (standardised)
    y = x * np.array([1.0, 1.0, 100.0])
    assert numeric_norm_structure(y).similarity == pytest.approx(s.similarity)


def test_numeric_norms_zero_variance_columns():
    # a column on which everyone agrees carries no disagreement: the result equals the one without it
    rng = np.random.default_rng(1)
    x = np.column_stack([rng.uniform(0, 1, 8), np.full(8, 0.7), rng.uniform(2, 8, 8)])
    with_col, without = numeric_norm_structure(x), numeric_norm_structure(x[:, [0, 2]])
    assert with_col.similarity == pytest.approx(without.similarity)
    assert with_col.alignment == pytest.approx(without.alignment)
    same = numeric_norm_structure(np.tile([0.4, 0.7, 5.0], (5, 1)))
    assert same.similarity == 1.0 and same.alignment == 1.0
    assert np.isnan(numeric_norm_structure(np.array([[0.4, 0.7, 5.0]])).similarity)


def _balanced_data(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    effects_a = {"m1": 0.0, "m2": 3.0, "m3": 6.0}
    effects_b = {"alt": 0.0, "self": 2.0}
    for a, ea in effects_a.items():
        for b, eb in effects_b.items():
            for _ in range(8):
                rows.append({"model": a, "ratio": b, "T": 20 + ea + eb + rng.normal(0, 2)})
    return pd.DataFrame(rows)


def test_two_way_anova_matches_closed_form_for_a_balanced_design():
    data = _balanced_data()
    table = two_way_anova(data, "T", "model", "ratio")
    grand = data["T"].mean()
    n = 8
    ss_a = 2 * n * ((data.groupby("model")["T"].mean() - grand) ** 2).sum()
    ss_b = 3 * n * ((data.groupby("ratio")["T"].mean() - grand) ** 2).sum()
    cell = data.groupby(["model", "ratio"])["T"].transform("mean")
    ss_e = ((data["T"] - cell) ** 2).sum()
    ss_t = ((data["T"] - grand) ** 2).sum()
    df_e = len(data) - 6
    f_a = (ss_a / 2) / (ss_e / df_e)
    assert table.loc["model", "df"] == 2 and table.loc["Residual", "df"] == df_e
    assert table.loc["model", "F"] == pytest.approx(f_a)
    assert table.loc["model", "p"] == pytest.approx(stats.f.sf(f_a, 2, df_e))
    assert table.loc["ratio", "F"] == pytest.approx((ss_b / 1) / (ss_e / df_e))
    assert table.loc["model", "eta_sq"] == pytest.approx(ss_a / ss_t)
    assert table.loc["model", "p"] < 1e-6


def test_tukey_hsd_letters():
    data = _balanced_data()
    result = tukey_hsd(data, "T", "model")
    # means 21, 24, 27 (+1 from ratio): every pair differs -> three letters, highest gets "a"
    assert result.letters == {"m3": "a", "m2": "b", "m1": "c"}
    assert result.table["reject"].all()
    same = data.copy()
    same["T"] = same["T"] - same["model"].map({"m1": 0.0, "m2": 3.0, "m3": 6.0})
    assert set(tukey_hsd(same, "T", "model").letters.values()) == {"a"}


def test_compact_letters_overlapping_groups():
    # A differs from C only: A=a, B=ab, C=b (the textbook example)
    letters = compact_letters({"A": 3.0, "B": 2.0, "C": 1.0}, {frozenset(("A", "C"))})
    assert letters == {"A": "a", "B": "ab", "C": "b"}
    assert compact_letters({"A": 1.0, "B": 0.5}, set()) == {"A": "a", "B": "a"}


def test_welch_t_matches_scipy_and_welch_satterthwaite():
    a = np.array([16.0, 18.0, 15.0, 20.0, 17.0, 19.0])
    b = np.array([25.0, 30.0, 22.0, 35.0])
    res = welch_t(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert res.t == pytest.approx(ref.statistic) and res.p == pytest.approx(ref.pvalue)
    va, vb = a.var(ddof=1) / 6, b.var(ddof=1) / 4
    assert res.df == pytest.approx((va + vb) ** 2 / (va**2 / 5 + vb**2 / 3))


def _society_runs(seed: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A fabricated LLM-societies table: model B survives ~15 rounds longer than A and C."""
    rng = np.random.default_rng(seed)
    rows, steps = [], []
    run_id = 0
    for env in (0.2, 0.6):
        for model, bonus in (("local", 0.0), ("openai:gpt-4o", 15.0), ("anthropic:claude", 0.0)):
            for ratio in (1.0, 0.5, 0.0):
                for cond in ((True, True), (False, True), (True, False), (False, False)):
                    for it in range(6):
                        t = float(
                            np.clip(
                                20 + bonus + (5 if cond == (True, True) else 0) + rng.normal(0, 3),
                                1,
                                50,
                            )
                        )
                        rows.append(
                            {
                                "RunId": run_id,
                                "iteration": it,
                                "growth_rate": env,
                                "llm": model,
                                "altruism_ratio": ratio,
                                "social_learning": cond[0],
                                "group_decision": cond[1],
                                "survival_time": t,
                                "norm_similarity": rng.random(),
                                "norm_alignment": rng.random(),
                            }
                        )
                        for step in range(0, 21, 5):
                            steps.append(
                                {
                                    "RunId": run_id,
                                    "Step": step,
                                    "efficiency_t": rng.random(),
                                    "shared_policy": f"policy {model} {step}",
                                }
                            )
                        run_id += 1
    return pd.DataFrame(rows), pd.DataFrame(steps)


def test_llm_society_analysis_finds_the_planted_effects(tmp_path):
    from mesa_dilemmas.dilemmas.fishery.llm_societies import analyse, write

    runs, steps = _society_runs()
    result = analyse(runs, steps, {}, every=10)
    for env in ("harsh", "rich"):
        anova = result.anova[env]
        assert anova.loc["model", "p"] < 1e-6 and anova.loc["prior", "p"] > 0.01
        letters = result.tukey[env].letters
        assert (
            letters["openai:gpt-4o"] == "a"
            and letters["local"] == letters["anthropic:claude"] == "b"
        )
    welch = result.welch.set_index(["comparison", "prior"])
    for cond in ("OSL", "OGD", "Neither"):  # Full is planted 5 rounds longer
        row = welch.loc[(f"{cond} vs Full", "all")]
        assert row["mean"] < row["mean_full"] and row["p"] < 1e-3
    assert set(result.norms["step"]) == {0, 10, 20}
    paths = write(result, tmp_path / "analysis")
    assert (tmp_path / "analysis" / "anova_harsh.csv").exists() and paths[0].read_text().count(
        "Tukey"
    ) == 2


def test_llm_society_figures_render(tmp_path):
    from mesa_dilemmas.dilemmas.fishery import llm_figures as figs
    from mesa_dilemmas.scenarios.config import Scenario

    runs, steps = _society_runs()
    scenario = Scenario(name="t", game="fishery")
    for fn in (
        figs.survival_by_model,
        figs.efficiency_over_time,
        figs.norm_structure,
        figs.ablation_bars,
        figs.norms_table,
    ):
        for path in fn(tmp_path, runs, steps, scenario):
            assert path.exists() and path.stat().st_size > 500
