"""Port of Mars figures in the style of paper 001 (Fig. 2A/B/C, Table 1) from batch results.

Every function takes the run directory, the per-run table (``runs``: the last
DataCollector row of each run), the per-step table and the scenario, writes its
figures (PNG, SVG or PDF: :mod:`mesa_dilemmas.viz.saving`) and returns their paths.
The numbers come from :mod:`mesa_dilemmas.dilemmas.port_of_mars.tables`; the
figures of ``mesa-dilemmas analyse port_of_mars`` are in ``port_of_mars_paper_figures``.
"""

from __future__ import annotations

import pathlib
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mesa_dilemmas.dilemmas.port_of_mars.tables import (  # noqa: E402
    TRADE_KINDS,
    player_table,
    summary_by_label,
)
from mesa_dilemmas.dilemmas.port_of_mars.tables import group_name as _group_name  # noqa: E402
from mesa_dilemmas.viz.saving import save  # noqa: E402

__all__ = ["TRADE_KINDS", "player_table", "summary_by_label"]  # re-exported for callers


def _group_columns(runs: pd.DataFrame, scenario: Any) -> list[str]:
    grid = getattr(scenario, "grid", None) or {}
    return [k for k in grid if k in runs.columns]


def label_order(labels: list[str]) -> list[str]:
    def key(lab: str) -> tuple[int, float, str]:
        if lab.startswith("svo"):
            try:
                return (0, float(lab[3:]), lab)
            except ValueError:
                pass
        return (1, 0.0, lab)

    return sorted(set(labels), key=key)


def short_label(label: str) -> str:
    """Tick text: the angle for SVO labels, initials for cultural groups."""
    if label.startswith("svo"):
        return label[3:]
    if "-" in label:
        return "".join(part[0].upper() for part in label.split("-"))
    return label


def _bars(
    ax: plt.Axes,
    table: pd.DataFrame,
    value: str,
    err: str | None,
    labels: list[str],
    groups: list[str],
) -> None:
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(labels))
    for j, grp in enumerate(groups):
        sub = table[table["group"] == grp].set_index("label").reindex(labels)
        yerr = sub[err].to_numpy() if err else None
        ax.bar(
            x + (j - (len(groups) - 1) / 2) * width,
            sub[value].to_numpy(),
            width,
            yerr=yerr,
            capsize=3,
            label=grp,
        )
    ax.set_xticks(x, [short_label(lab) for lab in labels])


def _survival_text(runs: pd.DataFrame, cols: list[str]) -> str:
    if not cols:
        return f"survival {100 * runs['survived'].mean():.0f}% of {len(runs)} games"
    parts = []
    for key, g in runs.groupby(cols, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        name = ", ".join(f"{c}={v}" for c, v in zip(cols, key, strict=True))
        parts.append(f"{name}: {100 * g['survived'].mean():.0f}%")
    return "survival " + "; ".join(parts)


def svo_points(
    run_dir: pathlib.Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Any
) -> list[pathlib.Path]:
    """Fig. 2 A/B/C of paper 001: per SVO angle points, % dirty, health spend, trade types."""
    run_dir = pathlib.Path(run_dir)
    cols = _group_columns(runs, scenario)
    players = player_table(runs, cols)
    table = summary_by_label(players)
    table.to_csv(run_dir / "port_of_mars_by_label.csv", index=False)
    labels = label_order(players["label"].tolist())
    groups = list(dict.fromkeys(players["group"]))
    paths = []

    # A: three key metrics per angle
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    _bars(axes[0], table, "points_surviving", "points_surviving_sem", labels, groups)
    axes[0].set_title("points (surviving games)")
    _bars(axes[1], table, "pct_dirty", "pct_dirty_sem", labels, groups)
    axes[1].set_title("% dirty accomplishments taken")
    _bars(axes[2], table, "health_spend_per_round", "health_spend_per_round_sem", labels, groups)
    axes[2].set_title("coins to port health per round")
    for ax in axes:
        ax.set_xlabel("SVO angle" if labels and labels[0].startswith("svo") else "persona")
    if len(groups) > 1:
        axes[0].legend(fontsize=8)
    fig.suptitle(f"{_survival_text(runs, cols)} (bars: mean ± s.e.m.)")
    fig.tight_layout()
    paths.append(save(fig, run_dir / "port_of_mars_svo_A"))

    # B: every player of every run: final points vs health spend and vs dirty cards
    rng = np.random.default_rng(0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    cmap = plt.get_cmap("viridis", max(2, len(labels)))
    for i, lab in enumerate(labels):
        sub = players[players["label"] == lab]
        jit = rng.uniform(-0.3, 0.3, size=(len(sub), 2))
        kw = {"s": 10, "alpha": 0.5, "color": cmap(i), "label": lab.replace("svo", "SVO ")}
        axes[0].scatter(
            sub["health_coins_total"] + jit[:, 0], sub["final_points"] + jit[:, 1], **kw
        )
        axes[1].scatter(
            sub["dirty_cards_bought"] + jit[:, 0], sub["final_points"] + jit[:, 1], **kw
        )
    axes[0].set_xlabel("total coins to port health")
    axes[1].set_xlabel("dirty accomplishments taken")
    for ax in axes:
        ax.set_ylabel("final points (0 if the port collapsed)")
    axes[1].legend(fontsize=8, markerscale=2)
    fig.tight_layout()
    paths.append(save(fig, run_dir / "port_of_mars_svo_B"))

    # C: trade offers proposed per game, by type
    fig, axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4), squeeze=False)
    for ax, grp in zip(axes[0], groups, strict=True):
        sub = table[table["group"] == grp].set_index("label").reindex(labels)
        x = np.arange(len(labels))
        for j, kind in enumerate(TRADE_KINDS):
            ax.bar(
                x + (j - 1) * 0.27,
                sub[f"proposed_{kind}"],
                0.27,
                yerr=sub[f"proposed_{kind}_sem"],
                capsize=2,
                label=kind,
            )
        ax.set_xticks(x, [short_label(lab) for lab in labels])
        ax.set_title(f"offers proposed per game, mean ± s.e.m. ({grp})")
        ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(save(fig, run_dir / "port_of_mars_svo_C"))
    return paths


def cultural_table(
    run_dir: pathlib.Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Any
) -> list[pathlib.Path]:
    """Table 1 of paper 001: the groups ranked on points, % dirty and health spend."""
    run_dir = pathlib.Path(run_dir)
    cols = _group_columns(runs, scenario)
    paths = svo_points(run_dir, runs, steps, scenario)  # the per-label bars and scatter as well
    players = player_table(runs, cols)
    table = summary_by_label(players)
    for metric in ("points_surviving", "pct_dirty", "health_spend_total"):
        table[f"{metric}_rank"] = table.groupby("group")[metric].rank(ascending=False, method="min")
    table.to_csv(run_dir / "port_of_mars_table1.csv", index=False)
    for grp, sub in table.groupby("group", sort=False):
        fig, ax = plt.subplots(figsize=(11, 1.0 + 0.35 * len(sub)))
        ax.axis("off")
        cells = [
            [
                r["label"],
                f"{r['points_surviving']:.1f} ± {r['points_surviving_sem']:.1f}",
                f"{int(r['points_surviving_rank'])}",
                f"{r['pct_dirty']:.0f}% ± {r['pct_dirty_sem']:.0f}",
                f"{int(r['pct_dirty_rank'])}",
                f"{r['health_spend_total']:.1f} ± {r['health_spend_total_sem']:.1f}",
                f"{int(r['health_spend_total_rank'])}",
            ]
            for _, r in sub.iterrows()
        ]
        tab = ax.table(
            cellText=cells,
            colLabels=[
                "group",
                "points (surviving)",
                "rank",
                "% dirty",
                "rank",
                "health spend",
                "rank",
            ],
            loc="center",
        )
        tab.auto_set_font_size(False)
        tab.set_fontsize(9)
        tab.auto_set_column_width(col=list(range(7)))
        tab.scale(1, 1.3)
        ax.set_title(f"{_survival_text(runs, cols)} ({grp}; mean ± s.e.m.)", fontsize=10)
        fig.tight_layout()
        name = "port_of_mars_table1" if grp == "all" else f"port_of_mars_table1_{len(paths) - 3}"
        paths.append(save(fig, run_dir / name))
    return paths


def health_trajectories(
    run_dir: pathlib.Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Any
) -> list[pathlib.Path]:
    """Mean port health by round (surviving and collapsing games) and the survival curve."""
    run_dir = pathlib.Path(run_dir)
    if steps is None or steps.empty or "port_health" not in steps.columns:
        return []
    key = [c for c in ("RunId", "Step") if c in steps.columns]
    data = steps.drop_duplicates(subset=key) if key else steps
    cols = _group_columns(data, scenario)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    groups = data.groupby(cols, sort=False) if cols else [((), data)]
    for name, g in groups:
        label = _group_name(
            dict(zip(cols, name if isinstance(name, tuple) else (name,), strict=False)), cols
        )
        by_round = g.groupby("round")["port_health"]
        mean, q1, q3 = by_round.mean(), by_round.quantile(0.25), by_round.quantile(0.75)
        axes[0].plot(mean.index, mean.to_numpy(), marker="o", label=label)
        axes[0].fill_between(mean.index, q1.to_numpy(), q3.to_numpy(), alpha=0.2)
        if "RunId" in g.columns:
            n_runs = g["RunId"].nunique()
            alive = g[g["alive"].astype(bool)].groupby("round")["RunId"].nunique() / n_runs
            line = axes[1].step(alive.index, alive.to_numpy(), where="post", label=label)
            err = np.sqrt(alive * (1 - alive) / n_runs)  # binomial s.e.m. over the games
            axes[1].fill_between(
                alive.index,
                (alive - err).to_numpy(),
                (alive + err).to_numpy(),
                step="post",
                alpha=0.2,
                color=line[0].get_color(),
            )
    for level, text in HEALTH_LINES:
        axes[0].axhline(level, color="grey" if level else "firebrick", lw=0.8, ls="--")
        axes[0].annotate(
            text,
            (0.0, level),
            xycoords=("axes fraction", "data"),
            xytext=(3, 2),
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=7,
            color="dimgrey",
        )
    axes[0].set_xlabel("round")
    axes[0].set_ylabel("port health at the end of the round (mean, IQR)")
    axes[1].set_xlabel("round")
    axes[1].set_ylabel("share of games still running (± s.e.m.)")
    axes[1].set_ylim(0, 1.05)
    axes[0].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return [save(fig, run_dir / "port_of_mars_health")]


#: reference lines of the health panel: the event-count thresholds and the collapse
HEALTH_LINES = (
    (65, "65: below, two events a round"),
    (35, "35: below, three events a round"),
    (0, "0: the port collapses"),
)
