"""The statistics of paper 003 (Sec. 4.2): two-way ANOVA with eta squared, Tukey HSD with a
compact letter display, and Welch t-tests -- thin, tested layers over statsmodels and scipy."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats


def two_way_anova(data: pd.DataFrame, value: str, a: str, b: str) -> pd.DataFrame:
    """Type-II two-way ANOVA of ``value`` on factors ``a`` x ``b`` (with interaction).

    Returns rows a, b, a:b and Residual with df, F, p and eta squared (SS_effect / SS_total)."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    frame = data[[value, a, b]].rename(columns={value: "y", a: "fa", b: "fb"}).dropna()
    frame["fa"], frame["fb"] = frame["fa"].astype(str), frame["fb"].astype(str)
    levels_b = frame["fb"].nunique()
    formula = "y ~ C(fa) * C(fb)" if levels_b > 1 else "y ~ C(fa)"
    table = anova_lm(smf.ols(formula, data=frame).fit(), typ=2)
    table = table.rename(index={"C(fa)": a, "C(fb)": b, "C(fa):C(fb)": f"{a}:{b}"})
    table["eta_sq"] = table["sum_sq"] / table["sum_sq"].sum()
    return table.rename(columns={"PR(>F)": "p"})[["df", "sum_sq", "F", "p", "eta_sq"]]


@dataclass(frozen=True)
class TukeyResult:
    table: pd.DataFrame  # group1, group2, meandiff, p_adj, lower, upper, reject
    letters: dict[str, str]


def tukey_hsd(data: pd.DataFrame, value: str, group: str, alpha: float = 0.05) -> TukeyResult:
    """Tukey's HSD over the levels of ``group`` and their compact letter display."""
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    frame = data[[value, group]].dropna()
    result = pairwise_tukeyhsd(
        frame[value].to_numpy(float), frame[group].astype(str).to_numpy(), alpha=alpha
    )
    table = pd.DataFrame(result.summary().data[1:], columns=result.summary().data[0])
    table = table.rename(columns={"p-adj": "p_adj"})
    means = frame.groupby(frame[group].astype(str))[value].mean()
    different = {frozenset((r.group1, r.group2)) for r in table.itertuples() if bool(r.reject)}
    return TukeyResult(table, compact_letters(means.to_dict(), different))


def compact_letters(means: dict[str, float], different: set[frozenset[str]]) -> dict[str, str]:
    """Compact letter display (insert-and-absorb): groups sharing a letter do not differ.

    Letters are assigned in order of decreasing mean, so "a" marks the highest group."""
    groups = sorted(means, key=lambda g: -means[g])
    columns: list[set[str]] = [set(groups)]
    for pair in different:
        g1, g2 = tuple(pair)
        new_columns = []
        for col in columns:
            if g1 in col and g2 in col:
                new_columns += [col - {g1}, col - {g2}]
            else:
                new_columns.append(col)
        # absorb: drop columns contained in another
        columns = [
            c
            for i, c in enumerate(new_columns)
            if c and not any(i != j and c < d for j, d in enumerate(new_columns))
        ]
        columns = [set(c) for c in dict.fromkeys(frozenset(c) for c in columns)]
    order = {g: i for i, g in enumerate(groups)}
    columns.sort(key=lambda c: (min(order[g] for g in c), -len(c)))
    letters = {g: "" for g in groups}
    for letter, col in zip(_letters(), columns, strict=False):
        for g in col:
            letters[g] += letter
    return letters


def _letters():
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    yield from alphabet
    for a, b in itertools.product(alphabet, repeat=2):
        yield a + b


@dataclass(frozen=True)
class WelchResult:
    mean_a: float
    mean_b: float
    t: float
    df: float
    p: float


def welch_t(a: np.ndarray | pd.Series, b: np.ndarray | pd.Series) -> WelchResult:
    """Welch's unequal-variance t-test with its Welch-Satterthwaite degrees of freedom."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    res = stats.ttest_ind(x, y, equal_var=False)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (
        (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
        if vx + vy > 0
        else float("nan")
    )
    return WelchResult(
        float(x.mean()), float(y.mean()), float(res.statistic), float(df), float(res.pvalue)
    )
