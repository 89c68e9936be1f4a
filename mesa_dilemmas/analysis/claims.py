"""The papers' claims that run without a paid provider, each with the test that judges it.

Statements are paraphrased (never quoted) with the section or figure they come from.  Every
judge reads only the run directory of its experiment (``runs.parquet``, ``steps.parquet``,
``summary.json``), so a claim can be re-judged on any run of the same scenario.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mesa_dilemmas.analysis.reproduction import Claim, Experiment, Verdict, direction, fmt, p_text

EXPERIMENTS = [
    Experiment("shock", "fishery/punishment_shock",
               tiny=["replications=2", "max_steps=36"], quick=["replications=40"]),
    Experiment("beta_r", "fishery/beta_growth_sweep",
               tiny=["replications=1", "max_steps=10", "grid.growth_rate=[0.3,0.4]", "grid.penalty=[2.0,14.0]"],
               quick=["replications=12", "grid.growth_rate=[0.2,0.3,0.4,0.6]"]),
    Experiment("altruism", "fishery/altruism", tiny=["replications=2", "max_steps=10"], quick=["replications=40"]),
    Experiment("pg_self_play", "public_goods/self_play",
               tiny=["options.samples=3", "options.group_sizes=[4]"],
               quick=["options.samples=40", "options.group_sizes=[4,16,64]", "options.splits=9"]),
    Experiment("cr_self_play", "collective_risk/self_play",
               tiny=["options.samples=3", "options.group_sizes=[4]"],
               quick=["options.samples=40", "options.group_sizes=[4,16,64]", "options.splits=9"]),
    Experiment("cp_self_play", "common_pool/self_play",
               tiny=["options.samples=3", "options.group_sizes=[4]"],
               quick=["options.samples=40", "options.group_sizes=[4,16,64]", "options.splits=9"]),
    Experiment("pg_evolution", "public_goods/cultural_evolution",
               tiny=["options.runs=1", "options.population=64", "options.survivors=8", "options.max_generations=3"],
               quick=["options.runs=8", "options.population=128", "options.survivors=16", "options.max_generations=60"]),
    Experiment("cp_evolution", "common_pool/cultural_evolution",
               tiny=["options.runs=1", "options.population=64", "options.survivors=8", "options.max_generations=3"],
               quick=["options.runs=8", "options.population=128", "options.survivors=16", "options.max_generations=60"]),
    Experiment("pom_svo", "port_of_mars/svo_rule_based", tiny=["replications=3"], quick=["replications=80"]),
    Experiment("pom_culture", "port_of_mars/cultural_groups", tiny=["replications=3"], quick=["replications=80"]),
    Experiment("pom_comm", "port_of_mars/communication", tiny=["replications=3"], quick=["replications=80"]),
]  # fmt: skip


def _runs(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "runs.parquet")


def _steps(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "steps.parquet")


# -- paper 003: the fishery ---------------------------------------------------------------------


def _shock_pairs(
    run_dir: Path, column: str, steps: range, penalty: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per replication: mean of ``column`` over ``steps`` with punishment kept and switched off."""
    s = _steps(run_dir)
    s = s[(s["penalty"] == penalty) & s["Step"].isin(list(steps))]
    per = s.groupby(["iteration", "punishment_off_at"])[column].mean().unstack()
    per = per.dropna()
    return per[0].to_numpy(), per[15].to_numpy()


def _paired(kept: np.ndarray, off: np.ndarray) -> float:
    if len(kept) < 2 or np.allclose(kept, off):
        return math.nan
    return float(stats.wilcoxon(kept, off).pvalue)


def _judge_shock(run_dir: Path, column: str, steps: range, digits: int) -> Verdict:
    """Punishment kept vs switched off at t = 15 (beta = 10), paired by replication."""
    kept, off = _shock_pairs(run_dir, column, steps, 10.0)
    p = _paired(kept, off)
    diff = kept - off
    sem = float(np.std(diff, ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else math.nan
    return Verdict(
        f"{column} t={steps.start}-{steps.stop - 1}, beta=10: kept {fmt(kept.mean(), digits)} vs off {fmt(off.mean(), digits)}",
        f"paired Wilcoxon over {len(kept)} replications (common random numbers), {p_text(p)}",
        direction(float(diff.mean()), p),
        f"difference {fmt(float(diff.mean()), digits)} ± {fmt(sem, digits)} s.e.",
    )


def judge_shock_compliance(run_dir: Path) -> Verdict:
    return _judge_shock(run_dir, "compliance", range(16, 26), 2)


def judge_shock_effort_compliance(run_dir: Path) -> Verdict:
    return _judge_shock(run_dir, "effort_compliance", range(16, 26), 3)


def judge_shock_stock(run_dir: Path) -> Verdict:
    return _judge_shock(run_dir, "stock", range(30, 36), 1)


def judge_beta_survival(run_dir: Path) -> Verdict:
    runs = _runs(run_dir)
    parts, statuses = [], []
    for r in (0.3, 0.4):
        cell = runs[np.isclose(runs["growth_rate"], r)]
        if cell["penalty"].nunique() < 2:
            continue
        rho, p = stats.spearmanr(cell["penalty"], cell["survival_time"])
        means = cell.groupby("penalty")["survival_time"].mean()
        parts.append(f"r={r}: survival {fmt(means.iloc[0], 1)} (beta={means.index[0]:g}) -> "
                     f"{fmt(means.iloc[-1], 1)} (beta={means.index[-1]:g}), rho={fmt(rho)} {p_text(p)}")  # fmt: skip
        statuses.append(direction(float(rho), float(p)))
    status = ("reproduced" if statuses and all(s == "reproduced" for s in statuses)
              else "partly" if any(s != "not reproduced" for s in statuses) else "not reproduced")  # fmt: skip
    return Verdict(
        "; ".join(parts),
        "Spearman rank correlation of beta and survival time per growth rate",
        status,
    )


def _survival(runs: pd.DataFrame, ratio: float, r: float) -> np.ndarray:
    cell = runs[np.isclose(runs["altruism_ratio"], ratio) & np.isclose(runs["growth_rate"], r)]
    return cell["survival_time"].to_numpy(dtype=float)


def judge_altruism_harsh(run_dir: Path) -> Verdict:
    runs = _runs(run_dir)
    alt, sel = _survival(runs, 1.0, 0.2), _survival(runs, 0.0, 0.2)
    p = (
        float(stats.mannwhitneyu(alt, sel, alternative="two-sided").pvalue)
        if len(alt) > 1
        else math.nan
    )
    mix = _survival(runs, 0.5, 0.2)
    return Verdict(
        f"harsh lake (r=0.2) survival: altruistic {fmt(alt.mean(), 1)}, mixed {fmt(mix.mean(), 1)}, selfish {fmt(sel.mean(), 1)}",
        f"Mann-Whitney altruistic vs selfish ({len(alt)} + {len(sel)} runs), {p_text(p)}",
        direction(float(alt.mean() - sel.mean()), p),
    )


def judge_altruism_rich(run_dir: Path) -> Verdict:
    runs = _runs(run_dir)
    alt, mix, sel = (_survival(runs, a, 0.6) for a in (1.0, 0.5, 0.0))
    ps = [
        float(stats.mannwhitneyu(mix, other, alternative="greater").pvalue)
        if len(mix) > 1
        else math.nan
        for other in (alt, sel)
    ]
    best = max(alt.mean(), sel.mean())
    status = ("reproduced" if all(p < 0.05 for p in ps) else
              "partly" if mix.mean() > best else "not reproduced")  # fmt: skip
    return Verdict(
        f"rich lake (r=0.6) survival: altruistic {fmt(alt.mean(), 1)}, mixed {fmt(mix.mean(), 1)}, selfish {fmt(sel.mean(), 1)}",
        f"one-sided Mann-Whitney mixed > altruistic ({p_text(ps[0])}) and mixed > selfish ({p_text(ps[1])})",
        status,
    )


# -- paper 002: binary games -------------------------------------------------------------------


def _self_play(run_dir: Path) -> pd.DataFrame:
    return _runs(run_dir)


def judge_pg_rises(run_dir: Path) -> Verdict:
    runs = _self_play(run_dir)
    parts, statuses = [], []
    for n, cell in runs.groupby("group_size"):
        rho, p = stats.spearmanr(cell["frac_collective"], cell["normalised_payoff"])
        parts.append(f"n={n}: rho={fmt(rho)}")
        statuses.append(direction(float(rho), float(p)))
    status = (
        "reproduced"
        if all(s == "reproduced" for s in statuses)
        else "partly"
        if any(s != "not reproduced" for s in statuses)
        else "not reproduced"
    )
    return Verdict(", ".join(parts), "Spearman correlation of the collective share and the normalised payoff, per group size", status)  # fmt: skip


def judge_cr_peak(run_dir: Path) -> Verdict:
    runs = _self_play(run_dir)
    parts, interior = [], []
    for n, cell in runs.groupby("group_size"):
        means = cell.groupby("frac_collective")["normalised_payoff"].agg(["mean", "sem"])
        peak = float(means["mean"].idxmax())
        full = means.loc[means.index.max()]
        top = means.loc[peak]
        below = top["mean"] - full["mean"] > 2 * math.hypot(top["sem"], full["sem"])
        interior.append(peak < 1.0 and below)
        parts.append(
            f"n={n}: peak at {peak:.0%} collective ({fmt(top['mean'])} vs {fmt(full['mean'])} at 100%)"
        )
    status = "reproduced" if all(interior) else "partly" if any(interior) else "not reproduced"
    return Verdict(
        "; ".join(parts),
        "welfare by collective share: peak below 100% and above it by > 2 s.e.",
        status,
    )


def judge_cp_group_size(run_dir: Path) -> Verdict:
    runs = _self_play(run_dir)
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


def _table2(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _wins(run_dir: Path) -> pd.DataFrame:
    runs = _runs(run_dir)
    return runs.groupby(["group_size", "winner_attitude"]).size().unstack(fill_value=0)


def judge_pg_exploitative_wins(run_dir: Path) -> Verdict:
    wins = _wins(run_dir)
    exp = wins.get("exploitative", pd.Series(0, index=wins.index))
    total = wins.sum(axis=1)
    parts = [f"n={n}: exploitative wins {int(exp[n])}/{int(total[n])}" for n in wins.index]
    tests = [
        stats.binomtest(int(exp[n]), int(total[n]), 0.5, alternative="greater").pvalue
        for n in wins.index
    ]
    status = (
        "reproduced"
        if all(p < 0.05 for p in tests)
        else "partly"
        if all(exp > total / 2)
        else "not reproduced"
    )
    return Verdict(
        "; ".join(parts),
        "one-sided binomial test of exploitative wins against 1/2 per group size",
        status,
    )


def judge_cp_group_selection(run_dir: Path) -> Verdict:
    wins = _wins(run_dir)
    if 4 not in wins.index:
        return Verdict("n=4 not run", "-", "not run")
    col = wins.loc[4].get("collective", 0)
    total = int(wins.loc[4].sum())
    p = float(stats.binomtest(int(col), total, 0.5, alternative="greater").pvalue)
    return Verdict(f"n=4: collective wins {int(col)}/{total}", f"one-sided binomial test against 1/2, {p_text(p)}",
                   direction(col / total - 0.5, p))  # fmt: skip


# -- paper 001: Port of Mars, rule players ------------------------------------------------------


def _seats(run_dir: Path) -> pd.DataFrame:
    """One row per seat and game: label, points, coins to health, dirty taken / opportunities."""
    runs = _runs(run_dir)
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
    runs = _runs(run_dir)
    k, n = int(runs["survived"].astype(bool).sum()), len(runs)
    ci = stats.binomtest(k, n).proportion_ci()
    inside = ci.low <= 0.81 <= ci.high
    status = "reproduced" if inside else "partly" if abs(k / n - 0.81) <= 0.10 else "not reproduced"
    return Verdict(f"survival {k}/{n} = {k / n:.0%} (paper's LLM players: 81%)", "exact binomial 95% CI contains 81%",
                   status, f"95% CI {ci.low:.0%}-{ci.high:.0%}")  # fmt: skip


PAPER_DIRTY_RANK = ["hierarchical-individualist", "egalitarian-individualist",
                    "hierarchical-communitarian", "egalitarian-communitarian"]  # fmt: skip


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
    status = ("reproduced" if all(lower) and sum(significant) >= len(significant) - 2
              else "partly" if sum(lower) > len(lower) / 2 else "not reproduced")  # fmt: skip
    runs = _runs(run_dir)
    surv = runs.groupby(runs["meeting"].astype(bool))["survived"].mean()
    return Verdict(
        "coins to health per game with vs without the meeting: "
        + "; ".join(parts)
        + f"; survival {surv.get(True, math.nan):.0%} vs {surv.get(False, math.nan):.0%}",
        "one-sided Mann-Whitney per angle (the paper finds the drop significant at 3 of 5 angles)",
        status,
    )


def judge_altruism_rich_selfish(run_dir: Path) -> Verdict:
    runs = _runs(run_dir)
    sel, alt = _survival(runs, 0.0, 0.6), _survival(runs, 1.0, 0.6)
    p = (
        float(stats.mannwhitneyu(sel, alt, alternative="two-sided").pvalue)
        if len(sel) > 1
        else math.nan
    )
    return Verdict(f"rich lake survival: selfish {fmt(sel.mean(), 1)} vs altruistic {fmt(alt.mean(), 1)}",
                   f"Mann-Whitney, {p_text(p)}", direction(float(sel.mean() - alt.mean()), p))  # fmt: skip


EFFORT_COMPLIANCE_NOTE = (
    "few villagers keep their effort within the cap in either arm (a fine costs wealth but does "
    "not change the punished villager's strategy, so efforts stay high), so the difference is "
    "small against its noise; the direction holds, and the effort rise and stock drop behind it "
    "hold in every neighbour of the robustness check."
)
CR_PEAK_NOTE = (
    "over-cooperation appears from n = 16 on and grows with the group (the peak moves from 88% "
    "towards two-thirds collective); in groups of four the welfare at 100% collective equals the "
    "peak within its standard error.  The reference collective set mixes unconditional and "
    "conditional cooperators; the paper's clearest peaks (at about half collective) come from "
    "LLM-written collective strategies that cooperate regardless.  Point options.collective_set "
    "at LLM-written sets to test the claim as the paper makes it."
)
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
RICH_LAKE_NOTE = (
    "in the paper's model a villager's payoff rewards its own catch at once, so payoff-biased "
    "imitation spreads the selfish strategy through a mixed group within a few rounds (final mean "
    "effort about 0.93 in mixed groups, as in all-selfish ones); at catchability 0.04 that effort "
    "takes about as much per round as logistic regrowth at r = 0.6 replaces, so those lakes decline "
    "slowly, while altruists (effort about 0.5) keep the lake near capacity and never catch less "
    "than they need.  Parameter points that make rich-lake altruists starve exist, but there strong "
    "punishment shortens survival, reversing Fig. 3 (docs/fishery.md, calibration table); the "
    "robustness section shows the direction fails across the whole neighbourhood."
)
SHOCK_HARVEST_NOTE = (
    "compliance read as harvest within the cap (h <= G) hardly moves because switching punishment "
    "off lowers the stock, and with it every catch, so catches slip under G while effort rises; "
    "the effort-based reading and the stock carry the effect.  In the paper's model a fine only "
    "costs wealth and does not change the punished villager's strategy, so deterrence works only "
    "through imitation and the effect is smaller than the paper's figure."
)


CLAIMS = [
    Claim("003", "Fig. 2", "Switching punishment off at t = 15 lowers compliance with the group norm over the next ten rounds", "shock", judge_shock_compliance, finding="shock", note=SHOCK_HARVEST_NOTE),
    Claim("003", "Fig. 2", "The same, read as effort compliance (efforts at or below the one that meets the cap at the current stock; ours, next to the harvest-based reading)", "shock", judge_shock_effort_compliance, finding="shock", note=EFFORT_COMPLIANCE_NOTE),
    Claim("003", "Fig. 2", "Without punishment the fish stock declines faster than with punishment kept", "shock", judge_shock_stock, finding="shock"),
    Claim("003", "Fig. 3", "Stronger punishment lengthens the group's survival at moderate growth rates", "beta_r", judge_beta_survival, finding="beta"),
    Claim("003", "Fig. 12", "In a harsh lake all-altruistic groups survive longer than all-selfish ones", "altruism", judge_altruism_harsh, finding="harsh"),
    Claim("003", "Fig. 12", "In a rich lake all-selfish groups survive longer than all-altruistic ones (altruists under-harvest and starve)", "altruism", judge_altruism_rich_selfish, finding="rich", note=RICH_LAKE_NOTE),
    Claim("003", "Fig. 12", "In a rich lake mixed groups survive longest", "altruism", judge_altruism_rich, finding="rich", note=RICH_LAKE_NOTE),
    Claim("002", "Sec. 5.2, Fig. 2", "Public Goods: social welfare rises as more of the group follows collective strategies (reference sets stand in for LLM-written ones)", "pg_self_play", judge_pg_rises),
    Claim("002", "Sec. 5.2, Fig. 3", "Collective Risk: welfare peaks before the group is fully collective (over-cooperation)", "cr_self_play", judge_cr_peak, note=CR_PEAK_NOTE),
    Claim("002", "Sec. 5.2, Fig. 4", "Common Pool: outcomes get worse as the group grows", "cp_self_play", judge_cp_group_size, note=CP_SIZE_NOTE),
    Claim("002", "Sec. 6.2, Table 2", "Public Goods cultural evolution: the exploitative attitude takes over at both group sizes", "pg_evolution", judge_pg_exploitative_wins),
    Claim("002", "Sec. 6.2, Table 2", "Common Pool at n = 4: the collective attitude wins (group selection)", "cp_evolution", judge_cp_group_selection),
    Claim("001", "Sec. 4.2, Fig. 2", "More prosocial SVO angles put more coins into port health", "pom_svo", judge_pom_health),
    Claim("001", "Sec. 4.2, Fig. 2", "More prosocial SVO angles buy fewer dirty accomplishments", "pom_svo", judge_pom_dirty),
    Claim("001", "Sec. 4.2, Fig. 2", "More prosocial SVO angles score fewer points in surviving games", "pom_svo", judge_pom_points),
    Claim("001", "Sec. 4.2", "About four in five games with SVO-varied players survive (LLM players: 81%)", "pom_svo", judge_pom_survival),
    Claim("001", "Sec. 4.1, Table 1", "Dirty-accomplishment use ranks hierarchical-individualist > egalitarian-individualist > hierarchical-communitarian > egalitarian-communitarian", "pom_culture", judge_pom_culture_dirty),
    Claim("001", "Sec. 4.3, Fig. 3", "Without the meeting, players spend less on port health at every SVO angle", "pom_comm", judge_pom_communication),
]  # fmt: skip
