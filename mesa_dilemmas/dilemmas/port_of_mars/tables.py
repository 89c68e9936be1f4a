"""Paper 001's tables from a Port of Mars run: per player, per persona label, per grid cell.

The numbers behind every Port of Mars figure are computed here; ``viz/port_of_mars_*`` only
draws them, and ``mesa-dilemmas analyse port_of_mars`` writes them as CSV beside the figures.
Per-player numbers come from the ``players_json`` model reporter (one JSON list of player
records per run), so results can be grouped by any persona label (SVO angle, cultural group,
trait set).

Error bars are standard errors over the units the mean is taken over: players for per-player
means, runs for per-run means; for pooled ratios (% dirty, rejection rate) the ratio
estimator's standard error with players as clusters; for shares of runs (survival, wins) the
binomial standard error.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

TRADE_KINDS = ("fair", "generous", "selfish")


def group_name(row: pd.Series | dict, cols: list[str]) -> str:
    return ", ".join(f"{c}={row[c]}" for c in cols) if cols else "all"


def player_table(runs: pd.DataFrame, group_cols: list[str] | None = None) -> pd.DataFrame:
    """One row per player per run, from the ``players_json`` reporter, with run-level columns."""
    group_cols = group_cols or []
    rows: list[dict[str, Any]] = []
    for i, run in runs.reset_index(drop=True).iterrows():
        records = json.loads(run["players_json"])
        for rec in records:
            row = {k: v for k, v in rec.items() if not isinstance(v, dict | list)}
            for kind in TRADE_KINDS:
                row[f"proposed_{kind}"] = rec["trades_proposed"][kind]
                row[f"accepted_{kind}"] = rec["trades_accepted"][kind]
            row["health_coins_per_round"] = (
                float(np.mean(rec["health_coins_by_round"]))
                if rec["health_coins_by_round"]
                else 0.0
            )
            row["run"] = run.get("RunId", i)
            row["survived"] = bool(run["survived"])
            row["group"] = group_name(run, group_cols)
            for c in group_cols:
                row[c] = run[c]
            rows.append(row)
    return pd.DataFrame(rows)


def sem(x: pd.Series) -> float:
    """Standard error of the mean (0 for fewer than two values)."""
    x = pd.to_numeric(x, errors="coerce").dropna()
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def ratio_sem(num: pd.Series, den: pd.Series) -> float:
    """Standard error of the pooled ratio ``sum(num) / sum(den)`` with each row a cluster
    (delta method for a ratio estimator); 0 for fewer than two clusters, nan without data."""
    num = pd.to_numeric(num, errors="coerce").to_numpy(dtype=float)
    den = pd.to_numeric(den, errors="coerce").to_numpy(dtype=float)
    n, total = len(den), den.sum()
    if total <= 0:
        return float("nan")
    if n < 2:
        return 0.0
    ratio = num.sum() / total
    resid = num - ratio * den
    return float(np.sqrt((resid**2).sum() / (n * (n - 1))) / den.mean())


def share_sem(p: float, n: int) -> float:
    """Binomial standard error of a share ``p`` of ``n`` runs."""
    return float(np.sqrt(p * (1 - p) / n)) if n > 0 else float("nan")


def summary_by_label(
    players: pd.DataFrame, by: tuple[str, ...] = ("group", "label")
) -> pd.DataFrame:
    """Per persona label: Fig. 2's numbers (points in surviving games, pooled % dirty, health
    spend, offers by type, rejection rate) with their standard errors.

    % dirty is the paper's definition pooled over players: purchase phases in which a dirty
    accomplishment was taken / purchase phases in which one was in hand.
    """
    out = []
    for key, g in players.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        surv = g[g["survived"]]
        opps = g["dirty_opportunities"].sum()
        received = g["trades_received"].sum()
        row = dict(zip(by, key, strict=True))
        row.update(
            {
                "n_players": len(g),
                "points_surviving": surv["points"].mean() if len(surv) else np.nan,
                "points_surviving_sem": sem(surv["points"]),
                "final_points": g["final_points"].mean(),
                "pct_dirty": 100.0 * g["dirty_taken"].sum() / opps if opps else np.nan,
                "pct_dirty_sem": 100.0 * ratio_sem(g["dirty_taken"], g["dirty_opportunities"]),
                "health_spend_total": g["health_coins_total"].mean(),
                "health_spend_total_sem": sem(g["health_coins_total"]),
                "health_spend_per_round": g["health_coins_per_round"].mean(),
                "health_spend_per_round_sem": sem(g["health_coins_per_round"]),
                "win_rate": g["winner"].mean(),
                "win_rate_sem": sem(g["winner"].astype(float)),
                "reject_rate": g["trades_received_rejected"].sum() / received
                if received
                else np.nan,
                "reject_rate_sem": ratio_sem(g["trades_received_rejected"], g["trades_received"]),
            }
        )
        for kind in TRADE_KINDS:
            row[f"proposed_{kind}"] = g[f"proposed_{kind}"].mean()
            row[f"proposed_{kind}_sem"] = sem(g[f"proposed_{kind}"])
            row[f"accepted_{kind}"] = g[f"accepted_{kind}"].mean()
        out.append(row)
    return pd.DataFrame(out)


def pct_dirty_per_player(g: pd.DataFrame) -> pd.Series:
    return 100.0 * g["dirty_taken"] / g["dirty_opportunities"].replace(0, np.nan)


#: the test of Fig. 3, as named on the figure and in the tables
MEETING_TEST = "two-sided Mann-Whitney U"


def meeting_tests(players: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3: per label, per-player coins to port health and % dirty with the meeting and
    without it (mean, s.e.m.), and the two-sided Mann-Whitney U test between them (scipy)."""
    from scipy.stats import mannwhitneyu

    rows = []
    for label, g in players.groupby("label", sort=True):
        on, off = g[g["meeting"].astype(bool)], g[~g["meeting"].astype(bool)]
        row: dict[str, Any] = {"label": label, "n_on": len(on), "n_off": len(off)}
        for name, on_v, off_v in (
            ("health_coins_total", on["health_coins_total"], off["health_coins_total"]),
            ("pct_dirty", pct_dirty_per_player(on).dropna(), pct_dirty_per_player(off).dropna()),
        ):
            row[f"{name}_on"] = float(on_v.mean()) if len(on_v) else np.nan
            row[f"{name}_on_sem"] = sem(on_v)
            row[f"{name}_off"] = float(off_v.mean()) if len(off_v) else np.nan
            row[f"{name}_off_sem"] = sem(off_v)
            if len(on_v) and len(off_v):
                row[f"{name}_p"] = float(mannwhitneyu(on_v, off_v, alternative="two-sided").pvalue)
            else:
                row[f"{name}_p"] = np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def leadership_table(runs: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """Figs. 4-5: per leadership variant and leader label, survival (share of runs, binomial
    s.e.m.) and the share of runs each label won (a run can have several winners or none)."""
    labels = sorted(players["label"].unique())
    rows = []
    for (variant, leader), g in runs.groupby(["leadership", "leader_label"], sort=True):
        survival = float(g["survived"].mean())
        row: dict[str, Any] = {
            "leadership": variant,
            "leader": leader,
            "runs": len(g),
            "survival": survival,
            "survival_sem": share_sem(survival, len(g)),
        }
        winners = g["winner_labels"].fillna("").str.split("|")
        for lab in labels:
            row[f"won_{lab}"] = float(np.mean([lab in w for w in winners]))
        rows.append(row)
    return pd.DataFrame(rows)


def groups_table(runs: pd.DataFrame, grid: list[str]) -> pd.DataFrame:
    """Fig. 6 per grid cell: survival, mean points, Gini of points, coins to port health
    (means over runs, each with its s.e.m.)."""
    frame = runs.assign(group=[group_name(r, grid) for _, r in runs.iterrows()])
    rows = []
    for name, g in frame.groupby("group", sort=False):
        survival = float(g["survived"].mean())
        row: dict[str, Any] = {"group": name, "runs": len(g)}
        row["svo_angles"] = g["svo_angles"].iloc[0] if "svo_angles" in g else ""
        row.update({"survival": survival, "survival_sem": share_sem(survival, len(g))})
        for col in ("points_mean", "final_points_mean", "gini_points", "health_coins_total"):
            row[col] = float(g[col].mean())
            row[f"{col}_sem"] = sem(g[col])
        rows.append(row)
    return pd.DataFrame(rows)


def groups_across(
    sources: list[tuple[str, pd.DataFrame, list[str]]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 6 over several runs (``(name, runs, grid)`` each): every run's :func:`groups_table`
    with the run's name before its cells (the first run's cells keep their names), and all the
    runs with their cell in a ``group`` column."""
    tables, frames = [], []
    for i, (name, runs, grid) in enumerate(sources):
        prefix = f"{name}: " if i else ""
        table = groups_table(runs, grid)
        table["group"] = prefix + table["group"]
        tables.append(table)
        frames.append(runs.assign(group=[prefix + group_name(r, grid) for _, r in runs.iterrows()]))
    return pd.concat(tables, ignore_index=True), pd.concat(frames, ignore_index=True)


def analyse(runs: pd.DataFrame, grid: list[str]) -> dict[str, pd.DataFrame]:
    """Every table of the run's grid: ``by_label`` and ``groups`` always, ``meeting_tests``
    with a grid over ``meeting``, ``leadership`` with a grid over ``leadership``."""
    players = player_table(runs, grid)
    out = {"by_label": summary_by_label(players), "groups": groups_table(runs, grid)}
    if "meeting" in grid:
        out["meeting_tests"] = meeting_tests(players)
    if "leadership" in grid and "leader_label" in runs.columns:
        out["leadership"] = leadership_table(runs, players)
    return out
