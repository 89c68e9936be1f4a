"""Paper 001's claims about Port of Mars with rule players (``mesa-dilemmas reproduce``)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from scipy import stats

from mesa_dilemmas.analysis.verdicts import (
    Claim,
    Experiment,
    LLMClaim,
    Verdict,
    direction,
    fmt,
    p_text,
    read_runs,
    welch_z,
)

#: the paper these claims come from, titled for the reproduction report
PAPERS = {"001": "Slumbers, Leibo, Janssen — Port of Mars with LLM players"}

EXPERIMENTS = [
    Experiment(
        "pom_svo", "port_of_mars/svo_rule_based", tiny=["replications=3"], quick=["replications=80"]
    ),
    Experiment(
        "pom_culture",
        "port_of_mars/cultural_groups",
        tiny=["replications=3"],
        quick=["replications=80"],
    ),
    Experiment(
        "pom_comm", "port_of_mars/communication", tiny=["replications=3"], quick=["replications=80"]
    ),
]


def _seats(run_dir: Path) -> pd.DataFrame:
    """One row per seat and game: label, points, coins to health, dirty taken / opportunities."""
    runs = read_runs(run_dir)
    rows = []
    for i in range(5):
        part = runs[["RunId", "survived", *(c for c in ("meeting",) if c in runs)]].copy()
        for field in ("label", "points", "health_coins", "dirty_taken", "dirty_opportunities"):
            part[field] = runs[f"seat{i}_{field}"]
        rows.append(part)
    seats = pd.concat(rows, ignore_index=True)
    seats["angle"] = pd.to_numeric(seats["label"].str.removeprefix("svo"), errors="coerce")
    return seats


def judge_pom_health(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    rho, p = stats.spearmanr(seats["angle"], seats["health_coins"])
    means = seats.groupby("angle")["health_coins"].mean()
    return Verdict(
        "coins to port health per game by SVO: "
        + ", ".join(f"{a:g}: {v:.1f}" for a, v in means.items()),
        f"Spearman over {len(seats)} seats, rho={fmt(rho)}, {p_text(p)}",
        direction(float(rho), float(p)),
    )


def judge_pom_dirty(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    pooled = seats.groupby("angle")[["dirty_taken", "dirty_opportunities"]].sum()
    share = pooled["dirty_taken"] / pooled["dirty_opportunities"].where(
        pooled["dirty_opportunities"] > 0
    )
    per_seat = seats["dirty_taken"] / seats["dirty_opportunities"].where(
        seats["dirty_opportunities"] > 0
    )
    ok = per_seat.notna()
    rho, p = stats.spearmanr(seats.loc[ok, "angle"], per_seat[ok])
    return Verdict(
        "% dirty by SVO: " + ", ".join(f"{a:g}: {v:.0%}" for a, v in share.items()),
        f"Spearman of angle and each seat's dirty share, rho={fmt(rho)}, {p_text(p)}",
        direction(-float(rho), float(p)),
    )


def judge_pom_points(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    alive = seats[seats["survived"].astype(bool)]
    rho, p = stats.spearmanr(alive["angle"], alive["points"])
    means = alive.groupby("angle")["points"].mean()
    return Verdict(
        "points in surviving games by SVO: "
        + ", ".join(f"{a:g}: {v:.1f}" for a, v in means.items()),
        f"Spearman over {len(alive)} seats of surviving games, rho={fmt(rho)}, {p_text(p)}",
        direction(-float(rho), float(p)),
    )


def judge_pom_survival(run_dir: Path) -> Verdict:
    runs = read_runs(run_dir)
    k, n = int(runs["survived"].astype(bool).sum()), len(runs)
    ci = stats.binomtest(k, n).proportion_ci()
    inside = ci.low <= 0.81 <= ci.high
    status = "reproduced" if inside else "partly" if abs(k / n - 0.81) <= 0.10 else "not reproduced"
    return Verdict(
        f"survival {k}/{n} = {k / n:.0%} (paper's LLM players: 81%)",
        "exact binomial 95% CI contains 81%",
        status,
        f"95% CI {ci.low:.0%}-{ci.high:.0%}",
    )


PAPER_DIRTY_RANK = [
    "hierarchical-individualist",
    "egalitarian-individualist",
    "hierarchical-communitarian",
    "egalitarian-communitarian",
]


def judge_pom_culture_dirty(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    pooled = seats.groupby("label")[["dirty_taken", "dirty_opportunities"]].sum()
    share = (pooled["dirty_taken"] / pooled["dirty_opportunities"]).reindex(PAPER_DIRTY_RANK)
    ours = list(share.sort_values(ascending=False).index)
    tau, p = stats.kendalltau(range(4), [ours.index(g) for g in PAPER_DIRTY_RANK])
    status = "reproduced" if ours == PAPER_DIRTY_RANK else "partly" if tau > 0 else "not reproduced"
    return Verdict(
        "% dirty: "
        + ", ".join(
            f"{g.split('-')[0][0].upper()}{g.split('-')[1][0].upper()} {v:.0%}"
            for g, v in share.items()
        ),
        f"ranking against the paper's HI > EI > HC > EC, Kendall tau={fmt(tau)}",
        status,
    )


def judge_pom_communication(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    seats["meeting"] = seats["meeting"].astype(bool)
    parts, lower, significant = [], [], []
    for angle, cell in seats.groupby("angle"):
        on, off = cell[cell["meeting"]]["health_coins"], cell[~cell["meeting"]]["health_coins"]
        p = float(stats.mannwhitneyu(on, off, alternative="greater").pvalue)
        parts.append(f"{angle:g}: {on.mean():.1f} vs {off.mean():.1f} ({p_text(p)})")
        lower.append(off.mean() < on.mean())
        significant.append(p < 0.05)
    status = (
        "reproduced"
        if all(lower) and sum(significant) >= len(significant) - 2
        else "partly"
        if sum(lower) > len(lower) / 2
        else "not reproduced"
    )
    runs = read_runs(run_dir)
    surv = runs.groupby(runs["meeting"].astype(bool))["survived"].mean()
    return Verdict(
        "coins to health per game with vs without the meeting: "
        + "; ".join(parts)
        + f"; survival {surv.get(True, math.nan):.0%} vs {surv.get(False, math.nan):.0%}",
        "one-sided Mann-Whitney per angle (the paper finds the drop significant at 3 of 5 angles)",
        status,
    )


def judge_pom_comm_dirty(run_dir: Path) -> Verdict:
    """Share of dirty accomplishments taken (of those a seat could take), per seat and game,
    without vs with the meeting; the paper's direction: more without it."""
    seats = _seats(run_dir)
    seats["meeting"] = seats["meeting"].astype(bool)
    seats = seats[seats["dirty_opportunities"] > 0]
    share = seats["dirty_taken"] / seats["dirty_opportunities"]
    on, off = share[seats["meeting"]], share[~seats["meeting"]]
    if len(on) < 2 or len(off) < 2:
        return Verdict("too few seats with a dirty card to take", "-", "not run")
    p = float(stats.mannwhitneyu(off, on, alternative="two-sided").pvalue)
    return Verdict(
        f"dirty share per seat: {off.mean():.1%} without the meeting vs {on.mean():.1%} with it",
        f"Mann-Whitney over {len(off)} + {len(on)} seat-games, {p_text(p)}",
        direction(float(off.mean() - on.mean()), p),
        z=welch_z(off, on),
    )


def judge_pom_comm_survival(run_dir: Path) -> Verdict:
    """Share of games that survive, with vs without the meeting (two-proportion z test)."""
    runs = read_runs(run_dir)
    with_ = runs[runs["meeting"].astype(bool)]["survived"].astype(float)
    without = runs[~runs["meeting"].astype(bool)]["survived"].astype(float)
    n1, n2 = len(with_), len(without)
    if n1 < 2 or n2 < 2:
        return Verdict("too few games", "-", "not run")
    pooled = (with_.sum() + without.sum()) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    diff = float(with_.mean() - without.mean())
    z = diff / se if se > 0 else 0.0
    p = float(2 * stats.norm.sf(abs(z))) if se > 0 else math.nan
    return Verdict(
        f"survival {with_.mean():.0%} with the meeting vs {without.mean():.0%} without "
        f"(paper, LLM players: 81% vs 71%)",
        f"two-proportion z test over {n1} + {n2} games, {p_text(p)}",
        direction(diff, p),
        z=z,
    )


CLAIMS = [
    Claim(
        "001",
        "Sec. 4.2, Fig. 2",
        "More prosocial SVO angles put more coins into port health",
        "pom_svo",
        judge_pom_health,
    ),
    Claim(
        "001",
        "Sec. 4.2, Fig. 2",
        "More prosocial SVO angles buy fewer dirty accomplishments",
        "pom_svo",
        judge_pom_dirty,
    ),
    Claim(
        "001",
        "Sec. 4.2, Fig. 2",
        "More prosocial SVO angles score fewer points in surviving games",
        "pom_svo",
        judge_pom_points,
    ),
    Claim(
        "001",
        "Sec. 4.2",
        "About four in five games with SVO-varied players survive (LLM players: 81%)",
        "pom_svo",
        judge_pom_survival,
    ),
    Claim(
        "001",
        "Sec. 4.1, Table 1",
        "Dirty-accomplishment use ranks hierarchical-individualist > egalitarian-individualist > hierarchical-communitarian > egalitarian-communitarian",
        "pom_culture",
        judge_pom_culture_dirty,
    ),
    Claim(
        "001",
        "Sec. 4.3, Fig. 3",
        "Without the meeting, players spend less on port health at every SVO angle",
        "pom_comm",
        judge_pom_communication,
    ),
    Claim(
        "001",
        "Sec. 4.3",
        "Without the meeting, players take dirty accomplishments more often (the effect is muted at low SVO angles)",
        "pom_comm",
        judge_pom_comm_dirty,
        note=(
            "a rule player takes a dirty card with a probability that rises with the port "
            "health it expects after the card (players.py, dirty_ok); the rule meeting's pledges "
            "raise the health others are expected to pay for, so with the meeting dirty cards "
            "look safer and are taken more often. The paper's LLM players hardly discussed "
            "dirty cards in their meetings; ours act on an expectation the meeting feeds."
        ),
    ),
    Claim(
        "001",
        "Sec. 4.3",
        "Games survive more often with the meeting than without it",
        "pom_comm",
        judge_pom_comm_survival,
    ),
]

#: paper 001's claims about LLM players: listed by the report as not run here, with the cost of
#: one run of their scenario on the paper's model
PAPER_MODEL = "gemini:gemini-1.5-flash-002"
LLM_CLAIMS = [
    LLMClaim(
        "001",
        "Sec. 4.2",
        "With LLM players of varied SVO, about 81% of games end with the port alive",
        "port_of_mars/llm_svo",
        PAPER_MODEL,
    ),
    LLMClaim(
        "001",
        "Sec. 4.2, Fig. 2",
        "LLM players with more prosocial SVO angles spend more on port health",
        "port_of_mars/llm_svo",
        PAPER_MODEL,
    ),
    LLMClaim(
        "001",
        "Sec. 4.3, Fig. 3",
        "Without the meeting LLM players spend less on port health and fewer games survive "
        "(81% to 71%)",
        "port_of_mars/llm_communication",
        PAPER_MODEL,
    ),
    LLMClaim(
        "001",
        "Sec. 4.1, Table 1",
        "LLM players' dirty-card use follows the cultural groups' order",
        "port_of_mars/llm_cultural_groups",
        PAPER_MODEL,
    ),
]
