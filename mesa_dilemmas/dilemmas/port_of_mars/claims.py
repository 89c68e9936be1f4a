"""Paper 001's claims about Port of Mars, judged on rule players (``mesa-dilemmas reproduce``).

The paper's findings are about LLM players; each judge here tests whether our rule ABM shows
the same pattern, at alpha = 0.05 (:data:`~mesa_dilemmas.analysis.verdicts.ALPHA`), with the
statuses of :mod:`mesa_dilemmas.analysis.verdicts`: a null where the paper reports an effect is
"not reproduced" only when the test had the power to see the paper's effect, else
"inconclusive" with that power and the replications it would need.  A finding the rule players
were written or tuned to show names the parameters that encode it (``by_construction``, from
:func:`~mesa_dilemmas.dilemmas.port_of_mars.personas.encoded_by`): its verdict is "by
construction", never "reproduced".  Every separately stated finding of the paper, judged here
or not, is one row of ``claims_register.toml`` beside this module.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mesa_dilemmas.analysis.verdicts import (
    ALPHA,
    MEDIUM_D,
    MEDIUM_R,
    POWER,
    Claim,
    Experiment,
    LLMClaim,
    Power,
    Status,
    Verdict,
    combine_statuses,
    decide,
    decide_flat,
    fmt,
    p_text,
    power_correlation,
    power_two_sample,
    read_runs,
    welch_z,
)
from mesa_dilemmas.dilemmas.port_of_mars.personas import CULTURAL_GROUPS, encoded_by
from mesa_dilemmas.dilemmas.port_of_mars.tables import player_table

#: the paper these claims come from, titled for the reproduction report
PAPERS = {"001": "Slumbers, Leibo, Janssen — Port of Mars with LLM players"}
#: every separately stated finding of paper 001, one row each (judged, llm, untestable, not_run)
REGISTER = Path(__file__).with_name("claims_register.toml")

EXPERIMENTS = [
    Experiment(
        "pom_svo",
        "port_of_mars/svo_rule_based",
        tiny=["replications=3"],
        quick=["replications=80"],
    ),
    Experiment(
        "pom_culture",
        "port_of_mars/cultural_groups",
        tiny=["replications=3"],
        quick=["replications=80"],
    ),
    Experiment(
        "pom_comm",
        "port_of_mars/communication",
        tiny=["replications=3"],
        quick=["replications=80"],
    ),
    Experiment(
        "pom_traits", "port_of_mars/traits", tiny=["replications=3"], quick=["replications=80"]
    ),
    # 15 cells (variant x leader seat); full: 70 a cell (more than the paper's 50 games a
    # variant, and 80% power for the leader's-angle trend at r = 0.15: 347 games a variant),
    # not the scenario's 200, so that the five seed streams of --full stay within minutes
    Experiment(
        "pom_lead",
        "port_of_mars/leadership_rule_based",
        tiny=["replications=2"],
        quick=["replications=20"],
        full=["replications=70"],
    ),
    # 8 cells (SVO set x leadership); full: 60 a cell, as pom_lead
    Experiment(
        "pom_groups",
        "port_of_mars/svo_sets_rule_based",
        tiny=["replications=2"],
        quick=["replications=30"],
        full=["replications=60"],
    ),
]

#: each cultural group's two-letter label in tables ("hierarchical-individualist" -> "HI")
SHORT = {g: "".join(word[0].upper() for word in g.split("-")) for g in CULTURAL_GROUPS}


# -- reading a run -------------------------------------------------------------------------


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
    seats["survived"] = seats["survived"].astype(bool)
    seats["angle"] = pd.to_numeric(seats["label"].str.removeprefix("svo"), errors="coerce")
    share = seats["dirty_taken"] / seats["dirty_opportunities"].where(
        seats["dirty_opportunities"] > 0
    )
    seats["dirty_share"] = share
    return seats


def _players(run_dir: Path) -> pd.DataFrame:
    """One row per player and game from ``players_json`` (trades by kind, health per round)."""
    players = player_table(read_runs(run_dir))
    players["angle"] = pd.to_numeric(players["label"].str.removeprefix("svo"), errors="coerce")
    return players


# -- statistics ------------------------------------------------------------------------------


def _normal_power(se: float, paper_effect: float, n: int, at: str, unit: str) -> Power:
    """A z test's power to see ``paper_effect`` when its standard error is ``se`` at ``n``
    units, and the units that would give :data:`POWER` (the error falls as 1/sqrt(n))."""
    if not (math.isfinite(se) and se > 0 and paper_effect):
        return Power(math.nan, None, at, unit)
    z_a, z_b = stats.norm.ppf(1 - ALPHA / 2), stats.norm.ppf(POWER)
    power = float(stats.norm.cdf(abs(paper_effect) / se - z_a))
    needed = n * ((z_a + z_b) * se / abs(paper_effect)) ** 2
    return Power(power, needed, at, unit)


def _z_test(effect: float, se: float) -> float:
    """Two-sided p of ``effect`` over its standard error (nan when the error is unknown)."""
    if not (math.isfinite(effect) and math.isfinite(se)):
        return math.nan
    if se == 0:
        return 0.0 if effect else 1.0
    return float(2 * stats.norm.sf(abs(effect) / se))


def _mean_se(x: pd.Series) -> tuple[float, float, int]:
    x = pd.to_numeric(x, errors="coerce").dropna()
    n = len(x)
    return (
        float(x.mean()) if n else math.nan,
        float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan,
        n,
    )


def _pair(
    a: pd.Series, b: pd.Series, paper_diff: float, unit: str, at: str = ""
) -> tuple[Status, str, float]:
    """Mean of ``a`` above mean of ``b`` as the paper says: two-sided Mann-Whitney; the power
    is a t-test's at the difference ``paper_diff`` (> 0, in ``unit``: the paper's, or what
    ``at`` says it is where the paper gives none) over our pooled standard deviation.  Returns
    the status, a text and the Welch z."""
    a, b = pd.to_numeric(a, errors="coerce").dropna(), pd.to_numeric(b, errors="coerce").dropna()
    if len(a) < 2 or len(b) < 2:
        return "inconclusive", f"too few values ({len(a)} + {len(b)})", math.nan
    diff = float(a.mean() - b.mean())
    p = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    sd = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    d = paper_diff / sd if sd > 0 else math.inf
    with warnings.catch_warnings():  # statsmodels' root finder at a huge effect
        warnings.simplefilter("ignore")
        power = power_two_sample(
            len(a),
            len(b),
            min(d, 10.0),
            at=f"{at or 'the paper'}'s {paper_diff:.3g}{' ' + unit if unit else ''} (d = {d:.2f})",
        )
    status = decide(diff, p, power)
    text = f"{diff:+.3g} ({p_text(p)}"
    if status != "reproduced":
        text += f"; {power.text()}"
    return status, text + ")", welch_z(a, b)


def _ranking(
    values: pd.DataFrame, column: str, order: Sequence[str], paper: Sequence[float], unit: str
) -> tuple[Status, str, float]:
    """A ranking the paper states (``order``, first highest, its values ``paper``): every
    adjacent pair tested with :func:`_pair`; reproduced when every pair is, not reproduced
    when any pair is (a significant reversal, or a powered null), else inconclusive."""
    statuses, parts, zs = [], [], []
    for (hi, lo), (p_hi, p_lo) in zip(
        zip(order, order[1:], strict=False), zip(paper, paper[1:], strict=False), strict=True
    ):
        status, text, z = _pair(
            values.loc[values["label"] == hi, column],
            values.loc[values["label"] == lo, column],
            p_hi - p_lo,
            unit,
        )
        statuses.append(status)
        zs.append(z)
        parts.append(f"{SHORT.get(hi, hi)} > {SHORT.get(lo, lo)}: {text} {status}")
    finite = [z for z in zs if math.isfinite(z)]
    return combine_statuses(statuses), "; ".join(parts), min(finite) if finite else math.nan


def _correlation(
    x: pd.Series, y: pd.Series, sign: int, *, r: float = MEDIUM_R, at: str = ""
) -> tuple[Status, float, float, int, Power]:
    """Spearman's rho of ``x`` and ``y`` in the paper's direction ``sign``; the power is a
    correlation test's at ``r`` (the paper gives means, not a correlation)."""
    ok = x.notna() & y.notna()
    n = int(ok.sum())
    if n < 4 or x[ok].nunique() < 2 or y[ok].nunique() < 2:
        power = power_correlation(max(n, 4), r, at=at or f"r = {r:g}")
        return "inconclusive", math.nan, math.nan, n, power
    rho, p = stats.spearmanr(x[ok], y[ok])
    power = power_correlation(n, r, at=at or f"r = {r:g} (the paper gives the figure only)")
    return decide(sign * float(rho), float(p), power), float(rho), float(p), n, power


def _fisher_z(rho: float, n: int) -> float:
    return math.atanh(max(-0.999, min(0.999, rho))) * math.sqrt(max(n - 3, 1))


# -- Sec. 4.2, Fig. 2: the SVO group ----------------------------------------------------------


def judge_pom_health(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    status, rho, p, n, power = _correlation(seats["angle"], seats["health_coins"], +1)
    means = seats.groupby("angle")["health_coins"].mean()
    return Verdict(
        "coins to port health per game by SVO: "
        + ", ".join(f"{a:g}: {v:.1f}" for a, v in means.items()),
        f"Spearman over {n} seats, rho={fmt(rho)}, {p_text(p)}",
        status,
        z=_fisher_z(rho, n) if math.isfinite(rho) else None,
    )


def judge_pom_health_40(run_dir: Path) -> Verdict:
    """Fig. 2B: the -15 player's total rarely above 40 coins, the 60 player's rarely below 40;
    "rarely" read as in under 10% of games (exact binomial 95% intervals)."""
    seats = _seats(run_dir)
    parts, statuses = [], []
    for angle, above in ((-15, True), (60, False)):
        cell = seats.loc[seats["angle"] == angle, "health_coins"]
        k = int((cell > 40).sum() if above else (cell < 40).sum())
        n = len(cell)
        if n == 0:
            statuses.append("inconclusive")
            continue
        ci = stats.binomtest(k, n).proportion_ci()
        statuses.append(
            "reproduced"
            if ci.high < 0.10
            else "not reproduced"
            if ci.low > 0.10
            else "inconclusive"
        )
        parts.append(
            f"{angle:g}: {'above' if above else 'below'} 40 in {k}/{n} games "
            f"(95% CI {ci.low:.0%}-{ci.high:.0%})"
        )
    return Verdict(
        "; ".join(parts),
        "each share under 10% of games: the exact binomial 95% interval's upper end below 10% "
        "(reproduced), its lower end above (not reproduced)",
        combine_statuses(statuses),
    )


def judge_pom_dirty(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    pooled = seats.groupby("angle")[["dirty_taken", "dirty_opportunities"]].sum()
    share = pooled["dirty_taken"] / pooled["dirty_opportunities"].where(
        pooled["dirty_opportunities"] > 0
    )
    status, rho, p, n, _ = _correlation(seats["angle"], seats["dirty_share"], -1)
    return Verdict(
        "% dirty by SVO: " + ", ".join(f"{a:g}: {v:.0%}" for a, v in share.items()),
        f"Spearman of angle and each seat's dirty share over {n} seats, rho={fmt(rho)}, "
        f"{p_text(p)}",
        status,
        z=-_fisher_z(rho, n) if math.isfinite(rho) else None,
    )


def judge_pom_dirty_lowest(run_dir: Path) -> Verdict:
    """Fig. 2B: the 60-degree player takes dirty accomplishments least (against each other
    angle; the paper's ~20% against ~60% at -15 sets the power of the comparison)."""
    seats = _seats(run_dir).dropna(subset=["dirty_share"])
    top = seats.loc[seats["angle"] == 60, "dirty_share"]
    statuses, parts = [], []
    for angle in sorted(a for a in seats["angle"].dropna().unique() if a != 60):
        status, text, _ = _pair(
            seats.loc[seats["angle"] == angle, "dirty_share"],
            top,
            0.2,
            "of the share",
            at="a third of the paper's -15 vs 60 gap",
        )
        statuses.append(status)
        parts.append(f"{angle:g} vs 60: {text}")
    return Verdict(
        "dirty share per seat-game, each angle minus the 60-degree player's: " + "; ".join(parts),
        "two-sided Mann-Whitney per angle; power at a 0.2 difference (a third of the paper's "
        "-15 vs 60 gap)",
        combine_statuses(statuses),
    )


def judge_pom_points(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    alive = seats[seats["survived"]]
    status, rho, p, n, _ = _correlation(alive["angle"], alive["points"], -1)
    means = alive.groupby("angle")["points"].mean()
    return Verdict(
        "points in surviving games by SVO: "
        + ", ".join(f"{a:g}: {v:.1f}" for a, v in means.items()),
        f"Spearman over {n} seats of surviving games, rho={fmt(rho)}, {p_text(p)}",
        status,
        z=-_fisher_z(rho, n) if math.isfinite(rho) else None,
    )


def judge_pom_survival(run_dir: Path) -> Verdict:
    """A level: reproduced when the exact 95% interval holds 81% and is at most 10 points
    either side; not reproduced when it excludes 81%; inconclusive when it is wider."""
    runs = read_runs(run_dir)
    k, n = int(runs["survived"].astype(bool).sum()), len(runs)
    ci = stats.binomtest(k, n).proportion_ci()
    inside = ci.low <= 0.81 <= ci.high
    narrow = (ci.high - ci.low) / 2 <= 0.10
    status: Status = "not reproduced" if not inside else "reproduced" if narrow else "inconclusive"
    return Verdict(
        f"survival {k}/{n} = {k / n:.0%} (paper's LLM players: 81%)",
        "exact binomial 95% CI contains 81% and is at most +-10 points wide",
        status,
        f"95% CI {ci.low:.0%}-{ci.high:.0%}",
    )


#: rounds over which the 60-degree player's giving is compared (most collapses come later)
EARLY_ROUNDS = 4


def judge_pom_collapse_high_svo(run_dir: Path) -> Verdict:
    """Fig. 2B: ports collapsed when the high-SVO players gave less.  A collapsed game is
    shorter and a rule player gives more as the port weakens, so totals and per-round means
    over whole games compare different rounds: the 60-degree player's coins to port health a
    round over the first ``EARLY_ROUNDS`` rounds of surviving games against collapsed ones."""
    runs = read_runs(run_dir)
    rows = []
    for _, run in runs.iterrows():
        for rec in json.loads(run["players_json"]):
            if rec["svo_angle"] == 60 and rec["health_coins_by_round"]:
                early = rec["health_coins_by_round"][:EARLY_ROUNDS]
                rows.append((bool(run["survived"]), float(np.mean(early))))
    frame = pd.DataFrame(rows, columns=["survived", "early"])
    alive = frame.loc[frame["survived"], "early"] if len(frame) else pd.Series(dtype=float)
    dead = frame.loc[~frame["survived"], "early"] if len(frame) else pd.Series(dtype=float)
    status, text, z = _pair(alive, dead, 1.0, "coin a round", at="a stated effect")
    return Verdict(
        f"60-degree player's coins to port health a round in rounds 1-{EARLY_ROUNDS}: "
        f"{alive.mean():.2f} in {len(alive)} surviving vs {dead.mean():.2f} in {len(dead)} "
        f"collapsed games; difference {text}",
        "two-sided Mann-Whitney; power at 1 coin a round (the paper gives the figure only)",
        status,
        z=z if math.isfinite(z) else None,
    )


# -- Fig. 2C: trading --------------------------------------------------------------------------


def judge_pom_trade_reject(run_dir: Path) -> Verdict:
    players = _players(run_dir)
    players["reject_rate"] = players["trades_received_rejected"] / players["trades_received"].where(
        players["trades_received"] > 0
    )
    status, rho, p, n, _ = _correlation(players["angle"], players["reject_rate"], -1)
    by = players.groupby("angle")[["trades_received_rejected", "trades_received"]].sum()
    rate = by["trades_received_rejected"] / by["trades_received"].where(by["trades_received"] > 0)
    return Verdict(
        "share of offers received that were rejected, by SVO: "
        + ", ".join(f"{a:g}: {v:.0%}" for a, v in rate.items()),
        f"Spearman of angle and each player's rejection rate over {n} players who received "
        f"an offer, rho={fmt(rho)}, {p_text(p)}",
        status,
        z=-_fisher_z(rho, n) if math.isfinite(rho) else None,
    )


def judge_pom_trade_selfish(run_dir: Path) -> Verdict:
    players = _players(run_dir)
    status, rho, p, n, _ = _correlation(players["angle"], players["proposed_selfish"], -1)
    means = players.groupby("angle")["proposed_selfish"].mean()
    return Verdict(
        "selfish offers (fewer units given than asked) per game, by SVO: "
        + ", ".join(f"{a:g}: {v:.2f}" for a, v in means.items()),
        f"Spearman of angle and each player's selfish offers over {n} players, rho={fmt(rho)}, "
        f"{p_text(p)}",
        status,
        z=-_fisher_z(rho, n) if math.isfinite(rho) else None,
    )


# -- Sec. 4.1, Table 1: cultural groups and trait sets ---------------------------------------

#: Table 1's LLM values per group: points (surviving games), % dirty, coins to port health
TABLE1 = {
    "egalitarian-individualist": (7.2, 0.13, 17.0),
    "egalitarian-communitarian": (5.0, 0.04, 32.0),
    "hierarchical-individualist": (6.2, 0.15, 13.0),
    "hierarchical-communitarian": (3.7, 0.07, 34.0),
}


def _table1_order(column: int) -> list[str]:
    return sorted(TABLE1, key=lambda g: -TABLE1[g][column])


def _culture_verdict(
    run_dir: Path, column: str, which: int, unit: str, what: str, survived_only: bool = False
) -> Verdict:
    seats = _seats(run_dir)
    if survived_only:
        seats = seats[seats["survived"]]
    order = _table1_order(which)
    status, text, z = _ranking(seats, column, order, [TABLE1[g][which] for g in order], unit)
    means = seats.groupby("label")[column].mean().reindex(order)
    return Verdict(
        f"{what}: "
        + ", ".join(f"{SHORT[g]} {v:.3g}" for g, v in means.items())
        + f"; pairs in the paper's order: {text}",
        f"the paper's order {' > '.join(SHORT[g] for g in order)}: each adjacent pair by a "
        "two-sided Mann-Whitney over seat-games, power at the paper's difference",
        status,
        z=z if math.isfinite(z) else None,
    )


def judge_pom_culture_dirty(run_dir: Path) -> Verdict:
    return _culture_verdict(run_dir, "dirty_share", 1, "of the share", "dirty share per seat")


#: bootstrap resamples of games for the gaps of Table 1's dirty-card order (a fixed seed: the
#: verdict of a run directory never changes)
BOOTSTRAP = 400


def judge_pom_culture_dirty_gaps(run_dir: Path) -> Verdict:
    """Table 1: the two individualist groups are close in dirty use and the steps below them
    larger (LLM players: HI 15%, EI 13%, HC 7%, EC 4%: gaps 2, 6, 3 points).  Tested on pooled
    shares: ``|HI - EI|`` below ``|EI - HC|`` and below ``|HC - EC|``, each by a bootstrap over
    games."""
    seats = _seats(run_dir)
    order = _table1_order(1)  # HI, EI, HC, EC
    games = seats["RunId"].unique()
    if len(games) < 3:
        return Verdict("too few games", "-", "inconclusive")
    taken = seats.pivot_table(index="RunId", columns="label", values="dirty_taken", aggfunc="sum")
    opps = seats.pivot_table(
        index="RunId", columns="label", values="dirty_opportunities", aggfunc="sum"
    )
    taken, opps = taken.reindex(columns=order).fillna(0), opps.reindex(columns=order).fillna(0)

    def gaps(idx: np.ndarray) -> np.ndarray:
        share = taken.iloc[idx].sum().to_numpy() / np.maximum(opps.iloc[idx].sum().to_numpy(), 1)
        g = np.abs(np.diff(share))
        return np.array([g[1] - g[0], g[2] - g[0]])  # > 0: the paper's shape

    point = gaps(np.arange(len(taken)))
    rng = np.random.default_rng(0)
    boot = np.array([gaps(rng.integers(len(taken), size=len(taken))) for _ in range(BOOTSTRAP)])
    statuses, parts = [], []
    for i, (name, paper) in enumerate((("EI - HC", 0.06 - 0.02), ("HC - EC", 0.03 - 0.02))):
        se = float(boot[:, i].std(ddof=1))
        p = min(1.0, 2 * min(float((boot[:, i] <= 0).mean()), float((boot[:, i] >= 0).mean())))
        power = _normal_power(se, paper, len(taken), f"the paper's {paper:.0%}", "games")
        status = decide(float(point[i]), p, power)
        statuses.append(status)
        parts.append(
            f"|{name}| - |HI - EI| = {point[i]:+.3f} ± {se:.3f} ({p_text(p)}"
            + ("" if status == "reproduced" else f"; {power.text()}")
            + ")"
        )
    share = taken.sum() / opps.sum().where(opps.sum() > 0)
    return Verdict(
        "pooled % dirty: "
        + ", ".join(f"{SHORT[g]} {v:.1%}" for g, v in share.items())
        + "; "
        + "; ".join(parts),
        f"bootstrap over {len(taken)} games ({BOOTSTRAP} resamples): each later gap above the "
        "individualists' gap",
        combine_statuses(statuses),
    )


def judge_pom_culture_points(run_dir: Path) -> Verdict:
    return _culture_verdict(
        run_dir, "points", 0, "points", "points in surviving games", survived_only=True
    )


def judge_pom_culture_health(run_dir: Path) -> Verdict:
    return _culture_verdict(run_dir, "health_coins", 2, "coins", "coins to port health a game")


def judge_pom_traits_health(run_dir: Path) -> Verdict:
    """Table 1: selfish players put just under a quarter of what cooperative ones put into
    port health (8.3 vs 40.8): tested as selfish < cooperative / 4 (z over seat-games)."""
    seats = _seats(run_dir)
    coop, c_se, n_c = _mean_se(seats.loc[seats["label"] == "cooperative", "health_coins"])
    sel, s_se, n_s = _mean_se(seats.loc[seats["label"] == "selfish", "health_coins"])
    effect = coop / 4 - sel
    se = math.sqrt((c_se / 4) ** 2 + s_se**2)
    p = _z_test(effect, se)
    power = _normal_power(
        se, 40.8 / 4 - 8.3, min(n_c, n_s), "the paper's 40.8 / 4 - 8.3 = 1.9 coins", "seat-games"
    )
    status = decide(effect, p, power)
    return Verdict(
        f"coins to port health a game: selfish {sel:.1f} vs cooperative {coop:.1f} "
        f"(ratio {sel / coop:.2f}; paper's LLM players 8.3 vs 40.8, 0.20)",
        f"z test of cooperative / 4 - selfish > 0 over {n_s} + {n_c} seat-games, {p_text(p)}"
        + ("" if status == "reproduced" else f"; {power.text()}"),
        status,
        z=effect / se if se > 0 else None,
    )


def judge_pom_traits_dirty(run_dir: Path) -> Verdict:
    """Table 1: selfish players take dirty accomplishments more than twice as often as
    cooperative ones (25% vs 11%): selfish share - 2 x cooperative share > 0."""
    seats = _seats(run_dir)
    sel, s_se, n_s = _mean_se(seats.loc[seats["label"] == "selfish", "dirty_share"])
    coop, c_se, n_c = _mean_se(seats.loc[seats["label"] == "cooperative", "dirty_share"])
    effect = sel - 2 * coop
    se = math.sqrt(s_se**2 + (2 * c_se) ** 2)
    p = _z_test(effect, se)
    power = _normal_power(
        se, 0.25 - 2 * 0.11, min(n_c, n_s), "the paper's 25% - 2 x 11% = 3 points", "seat-games"
    )
    status = decide(effect, p, power)
    return Verdict(
        f"dirty share per seat-game: selfish {sel:.0%} vs cooperative {coop:.0%} "
        f"(paper's LLM players 25% vs 11%)",
        f"z test of selfish - 2 x cooperative > 0 over {n_s} + {n_c} seat-games, {p_text(p)}"
        + ("" if status == "reproduced" else f"; {power.text()}"),
        status,
        z=effect / se if se > 0 else None,
    )


def judge_pom_traits_points(run_dir: Path) -> Verdict:
    seats = _seats(run_dir)
    alive = seats[seats["survived"]]
    sel = alive.loc[alive["label"] == "selfish", "points"]
    coop = alive.loc[alive["label"] == "cooperative", "points"]
    status, text, z = _pair(sel, coop, 8.8 - 3.7, "points")
    return Verdict(
        f"points in surviving games: selfish {sel.mean():.1f} vs cooperative {coop.mean():.1f} "
        f"(paper's LLM players 8.8 vs 3.7); difference {text}",
        "two-sided Mann-Whitney over seat-games of surviving games, power at the paper's 5.1",
        status,
        z=z if math.isfinite(z) else None,
    )


# -- Sec. 4.3, Fig. 3: the meeting ------------------------------------------------------------


def judge_pom_communication(run_dir: Path) -> Verdict:
    """Fig. 3: without the meeting health spend falls at every angle, significantly at -15, 0
    and 60 (not at 15 and 30): reproduced when it falls at all five and the three the paper
    finds significant are; not reproduced when it rises significantly anywhere."""
    seats = _seats(run_dir)
    seats["meeting"] = seats["meeting"].astype(bool)
    parts, statuses = [], []
    for angle, cell in seats.groupby("angle"):
        on, off = cell[cell["meeting"]]["health_coins"], cell[~cell["meeting"]]["health_coins"]
        p = float(stats.mannwhitneyu(on, off, alternative="two-sided").pvalue)
        diff = float(on.mean() - off.mean())
        parts.append(f"{angle:g}: {on.mean():.1f} vs {off.mean():.1f} ({p_text(p)})")
        if angle in (-15, 0, 60):
            power = power_two_sample(
                len(on), len(off), MEDIUM_D, at="d = 0.5 (the paper gives the figure only)"
            )
            status = decide(diff, p, power)
            statuses.append(status)
            if status != "reproduced":
                parts[-1] = parts[-1][:-1] + f"; {power.text()})"
        else:  # the paper: a drop, not significant
            statuses.append("reproduced" if diff > 0 else decide(diff, p, None))
    runs = read_runs(run_dir)
    surv = runs.groupby(runs["meeting"].astype(bool))["survived"].mean()
    return Verdict(
        "coins to health per game with vs without the meeting: "
        + "; ".join(parts)
        + f"; survival {surv.get(True, math.nan):.0%} vs {surv.get(False, math.nan):.0%}",
        "two-sided Mann-Whitney per angle: a drop at every angle, significant at -15, 0 and 60 "
        "as in the paper",
        combine_statuses(statuses),
    )


def judge_pom_comm_dirty(run_dir: Path) -> Verdict:
    """Share of dirty accomplishments taken (of those a seat could take), per seat and game,
    without vs with the meeting; the paper's direction: more without it."""
    seats = _seats(run_dir)
    seats["meeting"] = seats["meeting"].astype(bool)
    seats = seats[seats["dirty_opportunities"] > 0]
    share = seats["dirty_share"]
    on, off = share[seats["meeting"]], share[~seats["meeting"]]
    if len(on) < 2 or len(off) < 2:
        return Verdict("too few seats with a dirty card to take", "-", "inconclusive")
    status, text, z = _pair(off, on, 0.05, "of the share", at="a stated effect")
    return Verdict(
        f"dirty share per seat: {off.mean():.1%} without the meeting vs {on.mean():.1%} with it",
        f"two-sided Mann-Whitney over {len(off)} + {len(on)} seat-games: {text}; power at 5 "
        "points (the paper gives the figure only)",
        status,
        z=z if math.isfinite(z) else None,
    )


def judge_pom_comm_survival(run_dir: Path) -> Verdict:
    """Share of games that survive, with vs without the meeting (two-proportion z test)."""
    runs = read_runs(run_dir)
    with_ = runs[runs["meeting"].astype(bool)]["survived"].astype(float)
    without = runs[~runs["meeting"].astype(bool)]["survived"].astype(float)
    n1, n2 = len(with_), len(without)
    if n1 < 2 or n2 < 2:
        return Verdict("too few games", "-", "inconclusive")
    pooled = (with_.sum() + without.sum()) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    diff = float(with_.mean() - without.mean())
    z = diff / se if se > 0 else 0.0
    p = float(2 * stats.norm.sf(abs(z))) if se > 0 else math.nan
    power = _normal_power(se, 0.10, min(n1, n2), "the paper's 10 points (81% vs 71%)", "games")
    status = decide(diff, p, power)
    return Verdict(
        f"survival {with_.mean():.0%} with the meeting vs {without.mean():.0%} without "
        f"(paper, LLM players: 81% vs 71%)",
        f"two-proportion z test over {n1} + {n2} games, {p_text(p)}"
        + ("" if status == "reproduced" else f"; {power.text()}"),
        status,
        z=z,
    )


# -- Sec. 4.4, Figs. 4-5: leadership ----------------------------------------------------------


def _lead_runs(run_dir: Path) -> pd.DataFrame:
    runs = read_runs(run_dir)
    runs["survived"] = runs["survived"].astype(bool)
    runs["leader_angle"] = pd.to_numeric(
        runs["leader_label"].str.removeprefix("svo"), errors="coerce"
    )
    runs["winner_list"] = runs["winner_labels"].fillna("").str.split("|")
    return runs


def judge_pom_lead_trend(run_dir: Path) -> Verdict:
    """Fig. 4: survival falls as the leader's SVO angle rises, in every variant."""
    runs = _lead_runs(run_dir)
    statuses, parts, zs = [], [], []
    for variant, g in runs.groupby("leadership", sort=True):
        status, rho, p, n, power = _correlation(
            g["leader_angle"],
            g["survived"].astype(float),
            -1,
            r=0.15,
            at="r = 0.15 (about 20 points of survival from the -15 to the 60 leader)",
        )
        surv = g.groupby("leader_angle")["survived"].mean()
        statuses.append(status)
        zs.append(-_fisher_z(rho, n) if math.isfinite(rho) else math.nan)
        parts.append(
            f"{variant}: "
            + ", ".join(f"{a:g} {v:.0%}" for a, v in surv.items())
            + f" (rho={fmt(rho)}, {p_text(p)}"
            + ("" if status == "reproduced" else f"; {power.text()}")
            + ")"
        )
    finite = [z for z in zs if math.isfinite(z)]
    return Verdict(
        "survival by the leader's SVO: " + "; ".join(parts),
        "Spearman of the leader's angle and survival per variant; every variant must fall",
        combine_statuses(statuses),
        z=min(finite) if finite else None,
    )


def _share_diff(a: pd.Series, b: pd.Series) -> tuple[float, float]:
    """Difference of two shares and its unpooled standard error."""
    pa, pb = float(a.mean()), float(b.mean())
    se = math.sqrt(pa * (1 - pa) / max(len(a), 1) + pb * (1 - pb) / max(len(b), 1))
    return pa - pb, se


def judge_pom_lead_announce(run_dir: Path) -> Verdict:
    """Fig. 5: survival is highest when the leader is announced (paper: 414 vs 336 unaware vs
    334 vanilla, summed over five leaders: about 16 points of survival)."""
    runs = _lead_runs(run_dir)
    ann = runs.loc[runs["leadership"] == "announce", "survived"].astype(float)
    statuses, parts, zs = [], [], []
    for other, paper in (("vanilla", (414 - 334) / 500), ("unaware", (414 - 336) / 500)):
        oth = runs.loc[runs["leadership"] == other, "survived"].astype(float)
        if len(ann) < 2 or len(oth) < 2:
            statuses.append("inconclusive")
            continue
        diff, se = _share_diff(ann, oth)
        p = _z_test(diff, se)
        power = _normal_power(
            se, paper, min(len(ann), len(oth)), f"the paper's {paper:.0%}", "games per variant"
        )
        status = decide(diff, p, power)
        statuses.append(status)
        zs.append(diff / se if se > 0 else math.nan)
        parts.append(
            f"announce {ann.mean():.0%} vs {other} {oth.mean():.0%} ({p_text(p)}"
            + ("" if status == "reproduced" else f"; {power.text()}")
            + ")"
        )
    finite = [z for z in zs if math.isfinite(z)]
    return Verdict(
        "survival: " + "; ".join(parts),
        "two-proportion z test of announce against each other variant",
        combine_statuses(statuses),
        z=min(finite) if finite else None,
    )


def _own_wins(runs: pd.DataFrame, variant: str) -> tuple[float, float, list[str], int]:
    """In ``variant``: per leader label, its win share when it leads minus when another leads;
    the mean over labels, its standard error, the per-label texts and how many fell."""
    g = runs[runs["leadership"] == variant]
    diffs, ses, parts = [], [], []
    for label in sorted(g["leader_label"].unique(), key=lambda s: float(s.removeprefix("svo"))):
        won = g["winner_list"].apply(lambda w, lab=label: lab in w).astype(float)
        leads = g["leader_label"] == label
        if leads.sum() < 2 or (~leads).sum() < 2:
            continue
        diff, se = _share_diff(won[leads], won[~leads])
        diffs.append(diff)
        ses.append(se)
        parts.append(
            f"{label.removeprefix('svo')}: {won[leads].mean():.0%} vs {won[~leads].mean():.0%}"
        )
    if not diffs:
        return math.nan, math.nan, parts, 0
    se = math.sqrt(sum(s**2 for s in ses)) / len(ses)
    return float(np.mean(diffs)), se, parts, sum(d < 0 for d in diffs)


def judge_pom_lead_vanilla_wins(run_dir: Path) -> Verdict:
    """Fig. 5, vanilla: a leader wins less often when it leads than under other leaders, at
    four of the five angles (power at 10 points; the paper gives the heat map only)."""
    runs = _lead_runs(run_dir)
    diff, se, parts, fell = _own_wins(runs, "vanilla")
    p = _z_test(-diff, se)
    n = int((runs["leadership"] == "vanilla").sum())
    power = _normal_power(se, 0.10, n, "10 points of win share", "vanilla games")
    status = decide(-diff, p, power)
    if status == "reproduced" and fell < 4:
        status = "inconclusive"
    return Verdict(
        "vanilla, win share when leading vs under another leader: "
        + ", ".join(parts)
        + f"; mean difference {diff:+.1%}, lower at {fell} of {len(parts)} angles",
        f"z test of the mean difference over the angles, {p_text(p)}; at least 4 of 5 lower"
        + ("" if status == "reproduced" else f"; {power.text()}"),
        status,
        z=-diff / se if se and math.isfinite(se) and se > 0 else None,
    )


#: the margin of "little impact" on the unaware leader's own win share (ours: the paper names
#: none)
UNAWARE_MARGIN = 0.10


def judge_pom_lead_unaware_wins(run_dir: Path) -> Verdict:
    """Fig. 5, unaware: a leader who is not told wins about as often as under other leaders;
    equivalence (two one-sided tests) within +-10 points of win share."""
    runs = _lead_runs(run_dir)
    diff, se, parts, _ = _own_wins(runs, "unaware")
    if not (math.isfinite(diff) and math.isfinite(se) and se > 0):
        return Verdict("too few games", "-", "inconclusive")
    p_trend = _z_test(diff, se)
    p_equiv = max(
        float(stats.norm.sf((diff + UNAWARE_MARGIN) / se)),
        float(stats.norm.cdf((diff - UNAWARE_MARGIN) / se)),
    )
    return Verdict(
        "unaware, win share when leading vs under another leader: "
        + ", ".join(parts)
        + f"; mean difference {diff:+.1%} ± {se:.1%}",
        f"equivalence within ±{UNAWARE_MARGIN:.0%} (two one-sided z tests), p = {p_equiv:.2g}; "
        f"difference from zero {p_text(p_trend)}",
        decide_flat(diff, p_trend, p_equiv),
    )


# -- Sec. 4.5, Fig. 6: the two SVO sets -------------------------------------------------------


def _sets(run_dir: Path) -> pd.DataFrame:
    runs = read_runs(run_dir)
    runs["low_set"] = runs["svo_angles"].map(lambda s: -30 in json.loads(str(s)))
    runs["survived"] = runs["survived"].astype(bool)
    return runs


def _set_verdict(run_dir: Path, column: str, sign: int, what: str) -> Verdict:
    """The -15..60 set against the -30..60 set on a per-run number (``sign`` +1: the paper's
    -15..60 set is higher), pooled over the leadership variants; power at d = 0.5."""
    runs = _sets(run_dir)
    high, low = runs.loc[~runs["low_set"], column], runs.loc[runs["low_set"], column]
    a, b = (high, low) if sign > 0 else (low, high)
    sd = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2) if min(len(a), len(b)) > 1 else math.nan
    status, text, z = _pair(
        a, b, MEDIUM_D * sd if math.isfinite(sd) else 0.0, "", at="a medium effect"
    )
    return Verdict(
        f"{what} per run: -15..60 set {high.mean():.3g} vs -30..60 set {low.mean():.3g}; "
        f"{'-15..60 minus -30..60' if sign > 0 else '-30..60 minus -15..60'} {text}",
        f"two-sided Mann-Whitney over {len(high)} + {len(low)} runs (every leadership variant); "
        "power at d = 0.5 (the paper gives the figure only)",
        status,
        z=z if math.isfinite(z) else None,
    )


def judge_pom_groups_health(run_dir: Path) -> Verdict:
    return _set_verdict(run_dir, "health_coins_total", +1, "coins to port health (all players)")


def judge_pom_groups_points(run_dir: Path) -> Verdict:
    return _set_verdict(run_dir, "final_points_mean", +1, "mean final points (0 if collapsed)")


def judge_pom_groups_gini(run_dir: Path) -> Verdict:
    return _set_verdict(run_dir, "gini_points", -1, "Gini of points")


def judge_pom_groups_best(run_dir: Path) -> Verdict:
    """Fig. 6: the best runs on health spend and equality (the top tenth by the sum of the
    two ranks) come from the -15..60 set, and most of them from games where the others knew a
    leader was there (announce or unaware): one-sided binomial tests against 1/2."""
    runs = _sets(run_dir)
    score = runs["health_coins_total"].rank(ascending=False) + runs["gini_points"].rank()
    top = runs[score <= score.quantile(0.10)]
    n = len(top)
    if n < 2:
        return Verdict("too few runs", "-", "inconclusive")
    k_set = int((~top["low_set"]).sum())
    p_set = float(stats.binomtest(k_set, n, 0.5, alternative="greater").pvalue)
    high_top = top[~top["low_set"]]
    k_led = int(high_top["leadership"].isin(["announce", "unaware"]).sum())
    p_led = (
        float(stats.binomtest(k_led, len(high_top), 0.5, alternative="greater").pvalue)
        if len(high_top)
        else math.nan
    )
    statuses: list[Status] = []
    for k, m, p in ((k_set, n, p_set), (k_led, len(high_top), p_led)):
        power = _normal_power(
            math.sqrt(0.25 / max(m, 1)), 0.3, m, "a share of 80% against 1/2", "top runs"
        )
        statuses.append(decide(k / m - 0.5 if m else math.nan, p, power))
    return Verdict(
        f"top tenth of {len(runs)} runs by health spend and equality ({n} runs): {k_set} from "
        f"the -15..60 set ({p_text(p_set)}); of those, {k_led} with a leader the others knew "
        f"of ({p_text(p_led)})",
        "one-sided binomial tests against 1/2: the -15..60 set, then announce or unaware",
        combine_statuses(statuses),
    )


# -- the claims -------------------------------------------------------------------------------

NOTE_COMM_DIRTY = (
    "the rule takes a harmful accomplishment with a probability that rises with the port "
    "health it projects after the card (players.py, dirty_ok: logit +0.04 a point, never below "
    "its floor), and the meeting keeps the port healthier: over 200 games a condition (seeds "
    "2044 + i) the port stood at 51.3 on average when a rule player weighed a harmful card with "
    "the meeting and at 44.5 without it (34% against 46% of those decisions below 40), while "
    "within each band of port health the take rates barely differ (below 40: 17% vs 13%; "
    "40-60: 40% vs 38%; 60-80: 57% vs 53%). Pledges are not the cause either: with them removed "
    "from the projection the rise stays (docs/port_of_mars.md). The paper's LLM players hardly "
    "talked about harmful cards; our rule reads the port's state, which the meeting changes."
)


def _claim(where: str, statement: str, experiment: str, judge, **kw) -> Claim:  # noqa: ANN001
    key = judge.__name__.removeprefix("judge_")
    return Claim("001", where, statement, experiment, judge, by_construction=encoded_by(key), **kw)


CLAIMS = [
    _claim(
        "Sec. 4.2, Fig. 2A",
        "More prosocial SVO angles put more coins into port health",
        "pom_svo",
        judge_pom_health,
    ),
    _claim(
        "Sec. 4.2, Fig. 2B",
        "The -15 player's health spend rarely tops 40 coins a game, the 60 player's rarely "
        "falls below 40",
        "pom_svo",
        judge_pom_health_40,
    ),
    _claim(
        "Sec. 4.2, Fig. 2A",
        "More prosocial SVO angles buy fewer dirty accomplishments",
        "pom_svo",
        judge_pom_dirty,
    ),
    _claim(
        "Sec. 4.2, Fig. 2B",
        "The most prosocial (60-degree) player takes dirty accomplishments least",
        "pom_svo",
        judge_pom_dirty_lowest,
    ),
    _claim(
        "Sec. 4.2, Fig. 2A",
        "More prosocial SVO angles score fewer points in surviving games",
        "pom_svo",
        judge_pom_points,
    ),
    _claim(
        "Sec. 4.2",
        "About four in five games with SVO-varied players survive (LLM players: 81%)",
        "pom_svo",
        judge_pom_survival,
        note=(
            "survival is a level: it rests on how much every angle gives (health formulas "
            "tuned to Fig. 2A's spend, not to survival) and on the event deck; the interval "
            "says how far ours is from 81%"
        ),
    ),
    _claim(
        "Sec. 4.2, Fig. 2B",
        "Ports collapse when the high-SVO players give less to port health",
        "pom_svo",
        judge_pom_collapse_high_svo,
        note=(
            "over the same early rounds the 60-degree rule player gives at most a little less "
            "in games that collapse: 7.40 against 7.71 coins a round over 200 games a stream "
            "(p = 0.039; reproduced in 4 of 5 streams), 7.80 against 7.84 over 80 (quick "
            "size), far below the 1 coin a round the power is computed at; it gives by its "
            "formula and the port's state (players.py, health_plan), so collapses come mostly "
            "from events and the others' play; whole-game means (7.7 vs 6.4) differ mostly "
            "because collapsed games stop early"
        ),
    ),
    _claim(
        "Sec. 4.2, Fig. 2C",
        "Pro-self players reject more of the trades offered to them",
        "pom_svo",
        judge_pom_trade_reject,
    ),
    _claim(
        "Sec. 4.2, Fig. 2C",
        "Pro-self players make more selfish offers (ask more units than they give)",
        "pom_svo",
        judge_pom_trade_selfish,
    ),
    _claim(
        "Sec. 4.1, Table 1",
        "Dirty-accomplishment use ranks hierarchical-individualist > egalitarian-individualist "
        "> hierarchical-communitarian > egalitarian-communitarian",
        "pom_culture",
        judge_pom_culture_dirty,
        note=(
            "with the two ordering overrides gone (docs/port_of_mars.md, provenance) each group "
            "is its text-read angle (EI -5, HI 0, HC 45, EC 50) through the one dirty formula, "
            "so the egalitarian individualist, the lower angle, is the dirtier individualist "
            "(per seat, +-1.9: EI 70.2% vs HI 63.2%, HC 22.4% vs EC 19.7% over seeds 90000-90399; "
            "EI 67.9% vs HI 66.1%, HC 21.9% vs EC 20.0% over seeds 91000-91399); the paper's own "
            "HI - EI gap is 2 points, which 80 games a cell cannot see either way"
        ),
    ),
    _claim(
        "Sec. 4.1, Table 1",
        "The two individualist groups are close in dirty use; the steps down to the "
        "communitarians are larger",
        "pom_culture",
        judge_pom_culture_dirty_gaps,
        note=(
            "the step from the individualists to the communitarians is large (about 40 points "
            "of pooled % dirty), but the two communitarian groups are as close as the two "
            "individualists (400 fresh games: 17.8% vs 15.9%, against 56.4% vs 50.2%): their "
            "angles, 45 and 50, are 5 degrees apart as the individualists' are"
        ),
    ),
    _claim(
        "Sec. 4.1, Table 1",
        "Points in surviving games rank egalitarian-individualist > hierarchical-individualist "
        "> egalitarian-communitarian > hierarchical-communitarian",
        "pom_culture",
        judge_pom_culture_points,
        note=(
            "the two communitarian groups (45 and 50 degrees) play alike: about 59 coins a game "
            "to port health and 20% dirty each, so their points in surviving games are level "
            "(400 fresh games: HC 5.05, EC 4.72); the paper's HC falls 1.3 points below EC, and "
            "nothing in our presets separates the two by that much"
        ),
    ),
    _claim(
        "Sec. 4.1, Table 1",
        "Health spend ranks hierarchical-communitarian > egalitarian-communitarian > "
        "egalitarian-individualist > hierarchical-individualist",
        "pom_culture",
        judge_pom_culture_health,
        note=(
            "the egalitarian individualist reads as the lower angle (-5 against 0) and the "
            "least bound by pledges (conformity 0.15 against 0.8, both from the texts), so it "
            "gives clearly less than the hierarchical individualist (400 fresh games: 31.1 vs "
            "37.3 coins a game); the paper's LLM players have EI above HI (17 vs 13)"
        ),
    ),
    _claim(
        "Sec. 4.1, Table 1",
        "Selfish players put less than a quarter of what cooperative ones put into port health",
        "pom_traits",
        judge_pom_traits_health,
    ),
    _claim(
        "Sec. 4.1, Table 1",
        "Selfish players take dirty accomplishments more than twice as often as cooperative ones",
        "pom_traits",
        judge_pom_traits_dirty,
    ),
    _claim(
        "Sec. 4.1, Table 1",
        "Selfish players score more points in surviving games than cooperative ones",
        "pom_traits",
        judge_pom_traits_points,
    ),
    _claim(
        "Sec. 4.3, Fig. 3",
        "Without the meeting, players spend less on port health at every SVO angle "
        "(significantly at -15, 0 and 60)",
        "pom_comm",
        judge_pom_communication,
        note=(
            "by construction where it holds (a pledge only pulls a plan up); at -15 degrees it "
            "fails all the same: the competitive player's conformity to its pledge is 0.14 and "
            "the rule meeting asks little of it, so its spend is the same with and without the "
            "meeting (21.7 vs 21.8 coins a game at quick size)"
        ),
    ),
    _claim(
        "Sec. 4.3, Fig. 3",
        "Without the meeting, players take dirty accomplishments more often (the effect is muted "
        "at low SVO angles)",
        "pom_comm",
        judge_pom_comm_dirty,
        note=NOTE_COMM_DIRTY,
    ),
    _claim(
        "Sec. 4.3",
        "Games survive more often with the meeting than without it (81% vs 71%)",
        "pom_comm",
        judge_pom_comm_survival,
    ),
    _claim(
        "Sec. 4.4, Fig. 4",
        "Survival falls as the leader's SVO angle rises, whatever the leadership variant",
        "pom_lead",
        judge_pom_lead_trend,
        note=(
            "with a leader, survival is 81-93% for every leader angle in every variant (70 "
            "games a cell; 80-95% at 20): the leadership rule (players.py, led) adds the same "
            "0.15 to any told leader's health shares, and in unaware the leader is not told at "
            "all, so the leader's own angle moves survival by a few points at most, in no "
            "consistent direction"
        ),
    ),
    _claim(
        "Sec. 4.4, Fig. 5",
        "Survival is highest when the leader is announced to everyone",
        "pom_lead",
        judge_pom_lead_announce,
    ),
    _claim(
        "Sec. 4.4, Fig. 5",
        "In the vanilla variant a leader wins less often when it leads than under other "
        "leaders, at all but one angle",
        "pom_lead",
        judge_pom_lead_vanilla_wins,
    ),
    _claim(
        "Sec. 4.4, Fig. 5",
        "In the unaware variant being the leader hardly changes a player's own win rate",
        "pom_lead",
        judge_pom_lead_unaware_wins,
    ),
    _claim(
        "Sec. 4.5, Fig. 6",
        "The lower-SVO set (-30..60) puts less into port health than the -15..60 set",
        "pom_groups",
        judge_pom_groups_health,
    ),
    _claim(
        "Sec. 4.5, Fig. 6",
        "The lower-SVO set scores fewer points on average (collapses score zero)",
        "pom_groups",
        judge_pom_groups_points,
    ),
    _claim(
        "Sec. 4.5, Fig. 6",
        "The lower-SVO set shares points less equally (higher Gini)",
        "pom_groups",
        judge_pom_groups_gini,
        note=(
            "the difference is in the paper's direction but smaller than the medium effect "
            "(d = 0.5) the power is computed at, the paper giving no number: -30..60 minus "
            "-15..60 was +0.027 (p = 0.021) at 60 games a cell and +0.025 (p = 0.15) at 30; "
            "the -30 rule player scores no more than the -15 one (10.9 against 12.9 points a "
            "game at 30 games a cell; it gives 19 coins to the port and takes 68% of the dirty "
            "cards it could), so putting it in the 30 player's seat (6.9 points) widens the "
            "spread of points only a little"
        ),
    ),
    _claim(
        "Sec. 4.5, Fig. 6",
        "The best runs on health spend and equality come from the -15..60 set, most with a "
        "leader the others know of",
        "pom_groups",
        judge_pom_groups_best,
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
        contrasts=("meeting=False vs True",),
    ),
    LLMClaim(
        "001",
        "Sec. 4.1, Table 1",
        "LLM players' dirty-card use follows the cultural groups' order",
        "port_of_mars/llm_cultural_groups",
        PAPER_MODEL,
    ),
    LLMClaim(
        "001",
        "Sec. 4.1, Table 1",
        "Selfish LLM players give under a quarter of what cooperative ones give to port health "
        "and take dirty cards over twice as often",
        "port_of_mars/llm_traits",
        PAPER_MODEL,
    ),
    LLMClaim(
        "001",
        "Sec. 4.4, Figs. 4-5",
        "With LLM players survival falls with the leader's SVO angle and is highest when the "
        "leader is announced",
        "port_of_mars/llm_leadership",
        PAPER_MODEL,
    ),
    LLMClaim(
        "001",
        "Sec. 4.5, Fig. 6",
        "LLM groups with the lower SVO set (-30..60) do worse on health spend, points and equality",
        "port_of_mars/llm_svo_wide",
        PAPER_MODEL,
    ),
]
