"""Paper 002's claims about the Common Pool game (``mesa-dilemmas reproduce``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mesa_dilemmas.analysis.verdicts import (
    MEDIUM_R,
    Claim,
    Verdict,
    decide,
    fmt,
    p_text,
    power_binomial,
    power_correlation,
    read_runs,
)
from mesa_dilemmas.dilemmas.binary.judges import PAPERS as PAPERS  # the paper's title
from mesa_dilemmas.dilemmas.binary.judges import (
    evolution_experiment,
    judge_full_collective_at_max,
    self_play_experiment,
    wins_by_attitude,
)
from mesa_dilemmas.dilemmas.binary.paper002 import (
    TABLE1,
    TABLE2,
    EvolutionResult,
    ModelClaim,
    PublishedSelfPlay,
)

EXPERIMENTS = [
    self_play_experiment("cp_self_play", "common_pool"),
    evolution_experiment("cp_evolution", "common_pool"),
]


CP_SIZE_NOTE = (
    "the claim is about LLM-written strategies; the reference collective set stands in for them "
    "and its conditional strategies react to the share of opponents who cooperated.  Our best "
    "explanation (not measured separately): in a group of four one random defection (the set "
    "holds rnd(0.9), rnd(0.75) and proportional tit-for-tat) is a third of the opponents and trips the "
    "quarter thresholds of grim(0.25) and tft(0.75), and in this game a round of mutual "
    "defection empties the pool, while in large groups the noise averages out below the "
    "thresholds - so all-collective groups do better, not worse, as they grow.  Point "
    "options.collective_set at LLM-written sets to test the claim as the paper makes it."
)


def cp_efficiency_by_size(run_dir: Path) -> tuple[pd.Series, pd.Series]:
    """All-collective groups: welfare efficiency (the share of the gap between the least and the
    most welfare the game allows) of every sampled group, and the group sizes."""
    runs = read_runs(run_dir)
    full = runs[runs["frac_collective"] == 1.0]
    eff = (full["normalised_payoff"] - full["min_possible"]) / (
        full["max_possible"] - full["min_possible"]
    )
    return eff, full["group_size"]


def judge_cp_group_size(run_dir: Path) -> Verdict:
    """All-collective groups do worse as the group grows: the least-squares slope of their
    welfare efficiency on log2(group size) (its sign follows the means shown, unlike a rank
    correlation over single groups): reproduced when it falls significantly, not reproduced
    when it rises significantly or the null had the power to see a medium correlation."""
    eff, size = cp_efficiency_by_size(run_dir)
    by_n = eff.groupby(size).agg(["mean", "sem"])
    shown = ", ".join(f"n={n}: {row['mean']:.0%}" for n, row in by_n.iterrows())
    if by_n.shape[0] < 2:
        return Verdict(shown or "no all-collective groups", "one group size only", "not run")
    if eff.nunique() < 2:
        return Verdict(shown, "every all-collective group the same: cannot fail", "not testable")
    fit = stats.linregress(np.log2(size.to_numpy(float)), eff.to_numpy(float))
    slope, p = float(fit.slope), float(fit.pvalue)
    change = float(by_n["mean"].iloc[-1] - by_n["mean"].iloc[0])
    trend = "stays" if abs(change) < 0.005 else "falls" if change < 0 else "rises"
    power = power_correlation(len(eff), MEDIUM_R)
    return Verdict(
        f"{shown} of max welfare: {trend}"
        + (f" by {abs(change):.0%}" if trend != "stays" else "")
        + f" from n={by_n.index[0]} to n={by_n.index[-1]}",
        "all-collective groups: least-squares slope of welfare efficiency on log2(group size), "
        f"{fmt(slope, 3)} per doubling, {p_text(p)}; {power.text()} (the paper's figure gives "
        "no number)",
        decide(-slope, p, power),
        z=-slope / float(fit.stderr) if fit.stderr > 0 else None,
    )


def judge_cp_group_selection(run_dir: Path) -> Verdict:
    """Table 2 (Common Pool, n = 4): the collective attitude wins (the paper: 100 of 100 runs);
    a two-sided binomial test against 1/2, with its power at the paper's share of wins."""
    wins = wins_by_attitude(run_dir)
    if 4 not in wins.index:
        return Verdict("n=4 not run", "-", "not run")
    col = int(wins.loc[4].get("collective", 0))
    total = int(wins.loc[4].sum())
    p = float(stats.binomtest(col, total, 0.5).pvalue)
    share = (sum(TABLE2["common_pool"][4].winners.values()) + 1) / 102
    power = power_binomial(total, share, at=f"the paper's share of wins ({share:.0%})")
    return Verdict(
        f"n=4: collective wins {col}/{total}",
        f"two-sided binomial test against 1/2, {p_text(p)}; {power.text()}",
        decide(col / total - 0.5, p, power),
    )


CLAIMS = [
    Claim(
        "002",
        "Sec. 5.2, Fig. 4",
        "Common Pool: outcomes get worse as the group grows",
        "cp_self_play",
        judge_cp_group_size,
        note=CP_SIZE_NOTE,
    ),
    Claim(
        "002",
        "Sec. 6.2, Table 2",
        "Common Pool at n = 4: the collective attitude wins (group selection)",
        "cp_evolution",
        judge_cp_group_selection,
    ),
]

#: the self-play claim on the authors' published sets, per model (``reproduce --strategies``)
_FALLS = ModelClaim(
    "every model does worse in larger groups: all-collective welfare falls as the group grows",
    judge_cp_group_size,
)
PUBLISHED = PublishedSelfPlay(
    "Sec. 5.2, Fig. 4",
    "Common Pool self-play",
    "what the paper says of each model (Sec. 5.2)",
    {
        "claude-haiku-4-5": [
            ModelClaim(
                "the one exception: fully collective groups reach the maximum welfare at every "
                "group size",
                judge_full_collective_at_max,
            )
        ],
        "deepseek-r1-distill-llama-70b": [_FALLS],
        "gemini-2.5-flash": [_FALLS],
        "gpt-5-mini": [_FALLS],
        "llama3.1-70b": [_FALLS],
        "mistral-7b": [_FALLS],
    },
)


#: paper 002's Table 1 for this game: (MPD collective, MPD exploitative, Cohen's d) per model
TABLE1["common_pool"] = {
    "claude-haiku-4-5": (1.5, 1.0, 0.6),
    "deepseek-r1-distill-llama-70b": (1.3, 0.9, 0.4),
    "gemini-2.5-flash": (0.8, 0.6, 0.5),
    "gpt-5-mini": (0.7, 0.7, 0.4),
    "llama3.1-70b": (1.5, 1.5, 0.2),
    "mistral-7b": (1.5, 1.5, 0.1),
}
#: paper 002's Table 2 for this game: winning genes and efficiency per group size
TABLE2["common_pool"] = {
    4: EvolutionResult(
        {
            # winning runs of 100 per gene (text() lists them by count)
            "deepseek-r1-distill-llama-70b/collective": 1,
            "gpt-5-mini/collective": 8,
            "gemini-2.5-flash/collective": 91,
        },
        0.73,
    ),
    64: EvolutionResult(
        {"claude-haiku-4-5/exploitative": 98, "gemini-2.5-flash/exploitative": 2}, 0.05
    ),
}
