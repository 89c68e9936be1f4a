"""Paper 002's claims about the Common Pool game (``mesa-dilemmas reproduce``)."""

from __future__ import annotations

import math
from pathlib import Path

from scipy import stats

from mesa_dilemmas.analysis.verdicts import (
    Claim,
    Verdict,
    direction,
    p_text,
    read_runs,
)
from mesa_dilemmas.dilemmas.binary.judges import PAPERS as PAPERS  # the paper's title
from mesa_dilemmas.dilemmas.binary.judges import (
    evolution_experiment,
    self_play_experiment,
    wins_by_attitude,
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


def judge_cp_group_size(run_dir: Path) -> Verdict:
    runs = read_runs(run_dir)
    full = runs[runs["frac_collective"] == 1.0]
    eff = (full["normalised_payoff"] - full["min_possible"]) / (
        full["max_possible"] - full["min_possible"]
    )
    by_n = eff.groupby(full["group_size"]).mean()
    rho, p = stats.spearmanr(full["group_size"], eff) if by_n.size > 1 else (math.nan, math.nan)
    return Verdict(
        ", ".join(f"n={n}: {v:.0%} of max welfare" for n, v in by_n.items()),
        f"all-collective groups: Spearman of group size and welfare efficiency, {p_text(float(p))}",
        direction(-float(rho), float(p)),
    )


def judge_cp_group_selection(run_dir: Path) -> Verdict:
    wins = wins_by_attitude(run_dir)
    if 4 not in wins.index:
        return Verdict("n=4 not run", "-", "not run")
    col = wins.loc[4].get("collective", 0)
    total = int(wins.loc[4].sum())
    p = float(stats.binomtest(int(col), total, 0.5, alternative="greater").pvalue)
    return Verdict(
        f"n=4: collective wins {int(col)}/{total}",
        f"one-sided binomial test against 1/2, {p_text(p)}",
        direction(col / total - 0.5, p),
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
