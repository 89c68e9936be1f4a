"""``mesa-dilemmas analyse port_of_mars RUN_DIR``: paper 001's tables from a Port of Mars run.

Writes to ``RUN_DIR/analysis`` (or ``--out``):

``by_label.csv``
    Table 1 / Fig. 2 panels per grid cell and persona label: points in surviving games (mean,
    sem), % dirty (pooled: purchase phases with a harmful accomplishment taken / with one in
    hand), coins to port health (game, per round), win rate, offers by kind (fair / generous /
    selfish) and the rejection rate of offers received.
``groups.csv``
    Fig. 6 per grid cell: survival, mean points, mean Gini of points, coins to port health.
``meeting_tests.csv`` (a grid over ``meeting``)
    Fig. 3: per label, the two-sided Mann-Whitney U test (scipy) of per-player coins to port
    health and per-player % dirty with the meeting against without it.
``leadership.csv`` (a grid over ``leadership``)
    Figs. 4-5: per variant and leader label, survival and the share of runs each label won.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "port_of_mars",
        help="Table 1 / Figs. 2-6 tables of a Port of Mars run (Mann-Whitney U for the meeting)",
    )
    p.add_argument("run_dir", help="a finished run directory of a Port of Mars scenario")
    p.add_argument("--out", help="where to write the tables (default RUN_DIR/analysis)")
    p.set_defaults(func=run)


def _pct_dirty(g: pd.DataFrame) -> pd.Series:
    return 100.0 * g["dirty_taken"] / g["dirty_opportunities"].replace(0, np.nan)


def meeting_tests(players: pd.DataFrame) -> pd.DataFrame:
    from scipy.stats import mannwhitneyu

    rows = []
    for label, g in players.groupby("label", sort=True):
        on, off = g[g["meeting"].astype(bool)], g[~g["meeting"].astype(bool)]
        row: dict[str, Any] = {"label": label, "n_on": len(on), "n_off": len(off)}
        for name, on_v, off_v in (
            ("health_coins_total", on["health_coins_total"], off["health_coins_total"]),
            ("pct_dirty", _pct_dirty(on).dropna(), _pct_dirty(off).dropna()),
        ):
            row[f"{name}_on"] = float(on_v.mean()) if len(on_v) else np.nan
            row[f"{name}_off"] = float(off_v.mean()) if len(off_v) else np.nan
            if len(on_v) and len(off_v):
                row[f"{name}_p"] = float(mannwhitneyu(on_v, off_v, alternative="two-sided").pvalue)
            else:
                row[f"{name}_p"] = np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def leadership_table(runs: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    labels = sorted(players["label"].unique())
    rows = []
    for (variant, leader), g in runs.groupby(["leadership", "leader_label"], sort=True):
        row: dict[str, Any] = {
            "leadership": variant,
            "leader": leader,
            "runs": len(g),
            "survival": float(g["survived"].mean()),
        }
        winners = g["winner_labels"].fillna("").str.split("|")
        for lab in labels:
            row[f"won_{lab}"] = float(np.mean([lab in w for w in winners]))
        rows.append(row)
    return pd.DataFrame(rows)


def analyse(runs: pd.DataFrame, grid: list[str]) -> dict[str, pd.DataFrame]:
    from mesa_dilemmas.viz.port_of_mars_figures import player_table, summary_by_label

    players = player_table(runs, grid)
    out = {"by_label": summary_by_label(players)}
    groups = runs.assign(
        group=[", ".join(f"{c}={r[c]}" for c in grid) or "all" for _, r in runs.iterrows()]
    )
    out["groups"] = (
        groups.groupby("group", sort=False)
        .agg(
            runs=("survived", "size"),
            survival=("survived", "mean"),
            points_mean=("points_mean", "mean"),
            final_points_mean=("final_points_mean", "mean"),
            gini_points=("gini_points", "mean"),
            health_coins_total=("health_coins_total", "mean"),
        )
        .reset_index()
    )
    if "meeting" in grid:
        out["meeting_tests"] = meeting_tests(players)
    if "leadership" in grid and "leader_label" in runs.columns:
        out["leadership"] = leadership_table(runs, players)
    return out


def run(args: argparse.Namespace) -> int:
    from mesa_dilemmas.viz.figures import load_run

    run_dir = Path(args.run_dir)
    scenario, runs, _ = load_run(run_dir)
    if scenario.game != "port_of_mars":
        raise SystemExit(f"error: run_dir: {run_dir} is a {scenario.game} run, not port_of_mars")
    tables = analyse(runs, list(scenario.grid))
    out = Path(args.out) if args.out else run_dir / "analysis"
    out.mkdir(parents=True, exist_ok=True)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        for name, table in tables.items():
            path = out / f"{name}.csv"
            table.to_csv(path, index=False)
            print(f"== {name}\n{table.round(3).to_string(index=False)}\n")
            print(path)
    return 0
