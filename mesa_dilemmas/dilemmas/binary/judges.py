"""What the claims about the C/D games share: reading a self-play or cultural-evolution run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mesa_dilemmas.analysis.stats import welch_t
from mesa_dilemmas.analysis.verdicts import (
    MEDIUM_D,
    MEDIUM_R,
    Experiment,
    Verdict,
    combine_statuses,
    decide,
    decide_flat,
    fmt,
    p_text,
    power_correlation,
    power_two_sample,
    read_runs,
)

#: the paper the C/D games' claims come from, titled for the reproduction report
PAPERS = {"002": "Willis et al. — collective behaviour of hundreds of LLM agents"}


def wins_by_attitude(run_dir: Path) -> pd.DataFrame:
    """Cultural evolution: how many runs each attitude won, per group size."""
    runs = read_runs(run_dir)
    return runs.groupby(["group_size", "winner_attitude"]).size().unstack(fill_value=0)


def self_play_experiment(key: str, game: str) -> Experiment:
    """A C/D game's self-play at the report's sizes (tiny: 3 groups of 4 and of 8, so a judge
    of group size has two; quick: 40 per split)."""
    return Experiment(
        key,
        f"{game}/self_play",
        tiny=["options.samples=3", "options.group_sizes=[4,8]"],
        quick=["options.samples=40", "options.group_sizes=[4,16,64]", "options.splits=9"],
    )


def evolution_experiment(key: str, game: str) -> Experiment:
    """A C/D game's cultural evolution at the report's sizes."""
    return Experiment(
        key,
        f"{game}/cultural_evolution",
        tiny=[
            "options.runs=1",
            "options.population=64",
            "options.survivors=8",
            "options.max_generations=3",
        ],  # fmt: skip
        quick=[
            "options.runs=8",
            "options.population=128",
            "options.survivors=16",
            "options.max_generations=60",
        ],  # fmt: skip
    )


# -- judges of what paper 002 says about one model's self-play (``reproduce --strategies``) ----

#: a model the paper calls flat: welfare efficiency of all-collective and all-exploitative
#: groups the same within this margin (a tenth of the gap between the least and most welfare)
FLAT_MARGIN = 0.10


def efficiency(runs: pd.DataFrame) -> pd.Series:
    """Each sampled group's welfare efficiency: the share of the gap between the least and the
    most welfare the game allows that it captured."""
    span = (runs["max_possible"] - runs["min_possible"]).where(lambda x: x > 0)
    return (runs["normalised_payoff"] - runs["min_possible"]) / span


def judge_welfare_rises(run_dir: Path) -> Verdict:
    """Welfare rises with the collective share of the group, at every group size: Spearman's
    rho of the share and each group's welfare per size; the power of a null is at a medium
    correlation (the paper's figures give no number)."""
    runs = read_runs(run_dir)
    parts, statuses, zs = [], [], []
    for n, cell in runs.groupby("group_size"):
        if cell["normalised_payoff"].nunique() < 2 or cell["frac_collective"].nunique() < 2:
            parts.append(f"n={n}: every group the same (cannot fail)")
            statuses.append("not testable")
            continue
        rho, p = (
            float(x) for x in stats.spearmanr(cell["frac_collective"], cell["normalised_payoff"])
        )
        power = power_correlation(len(cell), MEDIUM_R)
        statuses.append(decide(rho, p, power))
        zs.append(rho)
        parts.append(f"n={n}: rho={fmt(rho)} ({p_text(p)}, power {power.power:.2f})")
    return Verdict(
        ", ".join(parts),
        "Spearman correlation of the collective share and each group's welfare, per group "
        f"size; power at r = {MEDIUM_R:g} (the paper's figure gives no number)",
        combine_statuses(statuses),
    )


def judge_welfare_flat(run_dir: Path) -> Verdict:
    """A model the paper calls flat (its welfare does not depend on the prompt's attitude):
    at every group size, all-collective and all-exploitative groups' welfare efficiency equal
    within +-:data:`FLAT_MARGIN` by two one-sided tests (statsmodels' ``ttost_ind``);
    not reproduced when they differ significantly."""
    from statsmodels.stats.weightstats import ttest_ind, ttost_ind

    runs = read_runs(run_dir)
    runs = runs.assign(eff=efficiency(runs))
    parts, statuses = [], []
    for n, cell in runs.groupby("group_size"):
        top = cell[cell["frac_collective"] == cell["frac_collective"].max()]["eff"].dropna()
        low = cell[cell["frac_collective"] == cell["frac_collective"].min()]["eff"].dropna()
        if len(top) < 2 or len(low) < 2:
            continue
        diff = float(top.mean() - low.mean())
        if np.allclose(top, top.iloc[0]) and np.allclose(low, top.iloc[0]):
            p_eq, p = 0.0, 1.0  # identical constants: equal within any margin
        else:
            p_eq = float(ttost_ind(top, low, -FLAT_MARGIN, FLAT_MARGIN, usevar="unequal")[0])
            p = float(ttest_ind(top, low, usevar="unequal")[1])
        statuses.append(decide_flat(diff, p, p_eq))
        parts.append(
            f"n={n}: all-collective minus all-exploitative {diff:+.0%} (TOST {p_text(p_eq)}, difference {p_text(p)})"
        )
    if not statuses:
        return Verdict("no all-collective and all-exploitative groups", "-", "not run")
    return Verdict(
        "; ".join(parts),
        f"equivalence (two one-sided Welch tests) of welfare efficiency within ±{FLAT_MARGIN:.0%} "
        "between all-collective and all-exploitative groups, per group size",
        combine_statuses(statuses),
    )


def judge_worse_in_larger_groups(run_dir: Path) -> Verdict:
    """The model does worse as the group grows: the least-squares slope of each group's welfare
    efficiency (every collective share) on log2(group size); reproduced when it falls
    significantly, not reproduced when it rises significantly (or a null the test had the power
    to see at a medium correlation)."""
    runs = read_runs(run_dir)
    eff = efficiency(runs).dropna()
    size = runs.loc[eff.index, "group_size"]
    by_n = eff.groupby(size).mean()
    shown = ", ".join(f"n={n}: {v:.0%}" for n, v in by_n.items())
    if len(by_n) < 2:
        return Verdict(shown or "no groups", "one group size only", "not run")
    if eff.nunique() < 2:
        return Verdict(shown, "every group the same: cannot fail", "not testable")
    fit = stats.linregress(np.log2(size.to_numpy(float)), eff.to_numpy(float))
    power = power_correlation(len(eff), MEDIUM_R)
    return Verdict(
        f"welfare efficiency over every split: {shown}",
        "least-squares slope of welfare efficiency on log2(group size), "
        f"{fit.slope:+.3f} per doubling, {p_text(float(fit.pvalue))}; {power.text()} "
        "(the paper's figure gives no number)",
        decide(-float(fit.slope), float(fit.pvalue), power),
        z=-float(fit.slope / fit.stderr) if fit.stderr > 0 else None,
    )


def judge_interior_peak(run_dir: Path) -> Verdict:
    """Over-cooperation: at every group size, welfare at the best collective share below 100%
    is higher than at 100% (Welch t-test, Bonferroni-corrected over the shares below 100%, so
    picking the best one does not make the test easier); the power of a null is at a medium
    difference (the paper's figure gives no number)."""
    runs = read_runs(run_dir)
    parts, statuses = [], []
    for n, cell in runs.groupby("group_size"):
        full_share = cell["frac_collective"].max()
        full = cell[cell["frac_collective"] == full_share]["normalised_payoff"].to_numpy(float)
        inner = cell[cell["frac_collective"] < full_share]
        if inner.empty or len(full) < 2:
            continue
        means = inner.groupby("frac_collective")["normalised_payoff"].mean()
        peak = float(means.idxmax())
        top = inner[inner["frac_collective"] == peak]["normalised_payoff"].to_numpy(float)
        res = welch_t(top, full)
        p = min(1.0, res.p * len(means)) if math.isfinite(res.p) else math.nan
        if not math.isfinite(res.p) and top.mean() == full.mean():
            statuses.append("not testable")
        else:
            power = power_two_sample(len(top), len(full), MEDIUM_D)
            statuses.append(decide(float(top.mean() - full.mean()), p, power))
        parts.append(
            f"n={n}: best below 100% at {peak:.0%} collective ({fmt(top.mean())} vs "
            f"{fmt(full.mean())} at 100%, {p_text(p)})"
        )
    if not statuses:
        return Verdict("no collective share below 100%", "-", "not run")
    return Verdict(
        "; ".join(parts),
        "per group size: Welch t-test of welfare at the best share below 100% against 100%, "
        f"Bonferroni over the shares; power at d = {MEDIUM_D:g} (the paper's figure gives no "
        "number)",
        combine_statuses(statuses),
    )


def judge_full_collective_at_max(run_dir: Path, level: float = 0.95) -> Verdict:
    """The paper's exception (Claude, in the CPR game): fully collective groups reach the maximum
    welfare at every group size: a one-sided t-test that the mean efficiency of all-collective
    groups exceeds ``level`` of the maximum, per group size."""
    runs = read_runs(run_dir)
    runs = runs.assign(eff=efficiency(runs))
    full = runs[runs["frac_collective"] == runs["frac_collective"].max()]
    parts, statuses = [], []
    for n, cell in full.groupby("group_size"):
        eff = cell["eff"].dropna().to_numpy(float)
        if len(eff) < 2:
            continue
        if np.allclose(eff, eff[0]):
            p = 0.0 if eff[0] != level else 1.0
        else:
            p = float(stats.ttest_1samp(eff, level).pvalue)
        statuses.append(decide(float(eff.mean() - level), p))
        parts.append(f"n={n}: {eff.mean():.0%} of the maximum ({p_text(p)})")
    if not statuses:
        return Verdict("no all-collective groups", "-", "not run")
    return Verdict(
        "; ".join(parts),
        f"all-collective groups: t-test of mean welfare efficiency against {level:.0%}, per "
        "group size",
        combine_statuses(statuses),
    )
