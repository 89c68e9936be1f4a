"""The result tables of docs/fishery.md, printed from a reproduction's fishery runs.

    mesa-dilemmas reproduce --full --out REP
    python scripts/fishery_tables.py REP

Reads ``REP/runs/{shock,beta_r,altruism}`` (the bundled scenarios ``fishery/punishment_shock``,
``fishery/beta_growth_sweep`` and ``fishery/altruism`` as the reproduction ran them) and prints the
three Markdown tables of the doc, so every number there comes from one ``reproduce`` run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats


def _p(p: float) -> str:
    return f"p = {p:.1g}" if p >= 1e-4 else "p < 1e-4"


def shock_table(run_dir: Path) -> list[str]:
    steps = pd.read_parquet(run_dir / "steps.parquet")
    n = steps["iteration"].nunique()
    lines = [
        f"Paired over {n} replications (same seeds, identical populations until t = 15); "
        "one-sided Wilcoxon p:",
        "",
        "| β | mean effort t = 16..25 (kept → off) | effort compliance t = 16..25 "
        "| harvest compliance t = 16..25 | stock at t = 35 |",
        "|---|---|---|---|---|",
    ]
    # (column, steps, digits, the sign of kept - off the paper expects)
    columns = (
        ("mean_effort", range(16, 26), 3, -1),
        ("effort_compliance", range(16, 26), 3, 1),
        ("compliance", range(16, 26), 3, 1),
        ("stock", range(35, 36), 1, 1),
    )
    for beta in sorted(steps["penalty"].unique()):
        cells = []
        for column, window, digits, sign in columns:
            s = steps[(steps["penalty"] == beta) & steps["Step"].isin(list(window))]
            per = s.groupby(["iteration", "punishment_off_at"])[column].mean().unstack().dropna()
            kept, off = per[0].to_numpy(), per[15].to_numpy()
            alternative = "greater" if sign > 0 else "less"
            p = float(stats.wilcoxon(kept, off, alternative=alternative).pvalue)
            cells.append(f"{kept.mean():.{digits}f} → {off.mean():.{digits}f} ({_p(p)})")
        lines.append(f"| {beta:g} | " + " | ".join(cells) + " |")
    return lines


def beta_table(run_dir: Path) -> list[str]:
    runs = pd.read_parquet(run_dir / "runs.parquet")
    grouped = runs.groupby(["growth_rate", "penalty"])["survival_time"]
    means, sems = grouped.mean().unstack(), grouped.sem().unstack()
    n = int(grouped.size().min())
    lines = [
        f"Mean survival time, {n} replications per cell (s.e.m. ≤ {np.nanmax(sems.to_numpy()):.1f}):",
        "",
        "| r \\ β | " + " | ".join(f"{b:g}" for b in means.columns) + " |",
        "|---" * (len(means.columns) + 1) + "|",
    ]
    for r, row in means.iterrows():
        lines.append(f"| {r:g} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    for r in (0.2, 0.3):
        cell = runs[np.isclose(runs["growth_rate"], r)]
        lo, hi = cell["penalty"].min(), cell["penalty"].max()
        a = cell[cell["penalty"] == hi]["survival_time"]
        b = cell[cell["penalty"] == lo]["survival_time"]
        p = float(stats.mannwhitneyu(a, b, alternative="greater").pvalue)
        lines.append(
            f"\nr = {r:g}: β = {hi:g} vs {lo:g}: {a.mean():.1f} vs {b.mean():.1f}, "
            f"one-sided Mann–Whitney {_p(p)}"
        )
    return lines


def altruism_table(run_dir: Path) -> list[str]:
    runs = pd.read_parquet(run_dir / "runs.parquet")
    grouped = runs.groupby(["growth_rate", "altruism_ratio"])["survival_time"]
    means, sems = grouped.mean().unstack(), grouped.sem().unstack()
    names = {0.0: "all selfish", 0.5: "mixed", 1.0: "all altruistic"}
    n = int(grouped.size().min())
    lines = [
        f"Mean survival time ± s.e.m., {n} replications per cell:",
        "",
        "| lake | " + " | ".join(names.get(a, f"altruism {a:g}") for a in means.columns) + " |",
        "|---" * (len(means.columns) + 1) + "|",
    ]
    for r, row in means.iterrows():
        lake = "harsh" if r < 0.4 else "rich"
        cells = [f"{m:.1f} ± {s:.1f}" for m, s in zip(row, sems.loc[r], strict=True)]
        lines.append(f"| {lake} r = {r:g} | " + " | ".join(cells) + " |")
    deaths = int(runs["deaths"].sum()) if "deaths" in runs else None
    if deaths is not None:
        lines.append(f"\nDeaths over all {len(runs)} runs: {deaths}.")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reproduction", type=Path, help="a reproduce --out directory")
    args = parser.parse_args()
    runs = args.reproduction / "runs"
    for title, key, table in (
        ("fishery/punishment_shock (Fig. 2)", "shock", shock_table),
        ("fishery/beta_growth_sweep (Fig. 3)", "beta_r", beta_table),
        ("fishery/altruism (Fig. 12)", "altruism", altruism_table),
    ):
        print(f"### {title}\n")
        print("\n".join(table(runs / key)))
        print()


if __name__ == "__main__":
    main()
