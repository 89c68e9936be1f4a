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

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from mesa_dilemmas.dilemmas.port_of_mars.tables import (
    TRADE_KINDS,
    player_table,
    summary_by_label,
)
from mesa_dilemmas.dilemmas.port_of_mars.tables import group_name as _group_name
from mesa_dilemmas.viz.print_size import (
    FONT_PT,
    SMALL_PT,
    explained_by,
    figure,
    is_column,
    legend_below,
    legend_space,
    printable,
    title,
    width,
    wrap,
)
from mesa_dilemmas.viz.saving import save

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
    ax: Any,
    table: pd.DataFrame,
    value: str,
    err: str | None,
    labels: list[str],
    groups: list[str],
) -> None:
    width_ = 0.8 / max(1, len(groups))
    x = np.arange(len(labels))
    for j, grp in enumerate(groups):
        sub = table[table["group"] == grp].set_index("label").reindex(labels)
        yerr = sub[err].to_numpy() if err else None
        ax.bar(
            x + (j - (len(groups) - 1) / 2) * width_,
            sub[value].to_numpy(),
            width_,
            yerr=yerr,
            color=f"C{j % 10}",
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


def _label_axis(labels: list[str]) -> str:
    return "SVO angle (degrees)" if labels and labels[0].startswith("svo") else "persona"


def _legend_label(label: str) -> str:
    return f"SVO {label[3:]}°" if label.startswith("svo") else label


def _group_legend(fig: Any, axes: list[Any], groups: list[str]) -> None:
    """The grid cells' colours under the panels (no legend for a single cell: one colour)."""
    if len(groups) > 1:
        handles, texts = axes[0].get_legend_handles_labels()
        legend_below(fig, handles, texts, title="grid cell")


@printable
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
    legend_room = legend_space(groups, titled=True) if len(groups) > 1 else 0.0

    # A: three key metrics per angle
    fig, axes = figure(
        3, aspect=1.0 if is_column() else 0.8, min_panel_width=1.65, extra_height=0.55 + legend_room
    )
    for ax, (value, ylabel) in zip(
        axes,
        (
            ("points_surviving", "points\n(surviving games)"),
            ("pct_dirty", "dirty accomplishments\n(% of purchases)"),
            ("health_spend_per_round", "coins to port health\n(per round)"),
        ),
        strict=True,
    ):
        _bars(ax, table, value, f"{value}_sem", labels, groups)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(_label_axis(labels))
    _group_legend(fig, axes, groups)
    title(
        fig,
        f"Points, dirty accomplishments and health spend by persona (mean ± s.e.m.); "
        f"{_survival_text(runs, cols)}",
    )
    paths.append(save(fig, run_dir / "port_of_mars_svo_A"))

    # B: every player of every run: final points vs health spend and vs dirty cards
    rng = np.random.default_rng(0)
    names = [_legend_label(lab) for lab in labels]
    fig, axes = figure(2, aspect=0.6, min_panel_width=2.3, extra_height=0.6 + legend_space(names))
    colours = colormaps["viridis"].resampled(max(2, len(labels)))
    for i, lab in enumerate(labels):
        sub = players[players["label"] == lab]
        # jittered so equal values do not hide each other; counts never below zero
        jit = rng.uniform(-JITTER, JITTER, size=(len(sub), 3))
        points = np.clip(sub["final_points"].to_numpy() + jit[:, 0], 0, None)
        kw = {"s": 6, "alpha": 0.6, "lw": 0, "color": colours(i), "label": names[i]}
        axes[0].scatter(
            np.clip(sub["health_coins_total"].to_numpy() + jit[:, 1], 0, None), points, **kw
        )
        axes[1].scatter(
            np.clip(sub["dirty_cards_bought"].to_numpy() + jit[:, 2], 0, None), points, **kw
        )
    axes[0].set_xlabel("coins to port health\n(total per game)")
    axes[1].set_xlabel("dirty accomplishments taken\n(per game)")
    for ax in axes:
        ax.set_ylabel("final points\n(0 if the port collapsed)")
        # a little room below zero so dots at zero show whole, and no negative tick
        ax.set_xlim(left=-0.03 * max(1.0, ax.get_xlim()[1]))
        ax.set_ylim(bottom=-0.03 * max(1.0, ax.get_ylim()[1]))
    handles, texts = axes[0].get_legend_handles_labels()
    legend_below(fig, handles, texts, markerscale=1.6)
    title(
        fig,
        f"Every player's points against what they gave and took (one dot per player and "
        f"game; jittered by up to ±{JITTER:g}, never below 0)",
    )
    paths.append(save(fig, run_dir / "port_of_mars_svo_B"))

    # C: trade offers proposed per game, by type
    kinds = [f"{kind} offers" for kind in TRADE_KINDS]
    fig, axes = figure(
        len(groups), aspect=0.7, min_panel_width=2.3, extra_height=0.5 + legend_space(kinds)
    )
    for ax, grp in zip(axes, groups, strict=True):
        sub = table[table["group"] == grp].set_index("label").reindex(labels)
        x = np.arange(len(labels))
        for j, (kind, name) in enumerate(zip(TRADE_KINDS, kinds, strict=True)):
            ax.bar(
                x + (j - 1) * 0.27,
                sub[f"proposed_{kind}"],
                0.27,
                yerr=sub[f"proposed_{kind}_sem"],
                color=f"C{j}",
                label=name,
            )
        ax.set_xticks(x, [short_label(lab) for lab in labels])
        ax.set_xlabel(_label_axis(labels))
        ax.set_ylabel("offers proposed\n(per player and game)")
        if len(groups) > 1:
            ax.set_title(grp)
    handles, texts = axes[0].get_legend_handles_labels()
    legend_below(fig, handles, texts)
    title(fig, "Trade offers proposed, by kind (mean ± s.e.m.)")
    paths.append(save(fig, run_dir / "port_of_mars_svo_C"))
    return paths


#: the largest shift of a dot in the players' scatter (equal values would hide each other)
JITTER = 0.3


def _table_label(label: str) -> str:
    """A persona's name in a table cell: ``SVO 15°``, or a two-word group on two lines at
    column width."""
    if label.startswith("svo"):
        return _legend_label(label)
    return label.replace("-", "-\n", 1) if is_column() else label


@printable
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
    narrow = is_column()
    sep = "\n" if narrow else " "
    header = [
        "persona",
        f"points{sep}(surviving)",
        "% dirty",
        f"coins to{sep}port health",
    ]
    for grp, sub in table.groupby("group", sort=False):
        cells = [
            [
                _table_label(r["label"]),
                f"{r['points_surviving']:.1f} ± {r['points_surviving_sem']:.1f}"
                f"{sep}(rank {int(r['points_surviving_rank'])})",
                f"{r['pct_dirty']:.0f}% ± {r['pct_dirty_sem']:.0f}"
                f"{sep}(rank {int(r['pct_dirty_rank'])})",
                f"{r['health_spend_total']:.1f} ± {r['health_spend_total_sem']:.1f}"
                f"{sep}(rank {int(r['health_spend_total_rank'])})",
            ]
            for _, r in sub.iterrows()
        ]
        lines = 2 if narrow else 1
        row_height = 0.08 + 0.13 * lines
        caption = wrap(
            f"Personas ranked on points, dirty accomplishments (% of purchases) and coins to "
            f"port health per game (mean ± s.e.m.; rank 1 = highest); {_survival_text(runs, cols)}"
            + ("" if grp == "all" else f" ({grp})"),
            width() - 0.2,
        )
        caption_height = 0.16 * (caption.count("\n") + 1) + 0.1
        fig, (ax,) = figure(
            1, aspect=0.0, extra_height=caption_height + row_height * (len(cells) + 1)
        )
        ax.axis("off")
        longest = [
            max(len(line) for text in column for line in text.split("\n"))
            for column in zip(header, *cells, strict=True)
        ]
        tab = ax.table(
            cellText=cells,
            colLabels=header,
            colWidths=[(n + 2) / sum(longest) for n in longest],
            cellLoc="center",
            bbox=(0.0, 0.0, 1.0, 1.0),
        )
        tab.auto_set_font_size(False)
        tab.set_fontsize(SMALL_PT)
        for (row, _), cell in tab.get_celld().items():
            cell.set_linewidth(0.4)
            if row == 0:
                cell.set_text_props(fontweight="bold")
        ax.set_title(caption, fontsize=FONT_PT)
        name = "port_of_mars_table1" if grp == "all" else f"port_of_mars_table1_{len(paths) - 3}"
        paths.append(save(fig, run_dir / name))
    return paths


@printable
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
    groups = list(data.groupby(cols, sort=False)) if cols else [((), data)]
    single = len(groups) == 1
    entries: dict[str, Any] = {}
    # what the lines and bands are (every group draws both)
    kinds = {
        "line": "lines: mean health; share of games still running",
        "band": "bands: middle half of the games (IQR); ± s.e.m.",
    }
    names = [
        _group_name(dict(zip(cols, n if isinstance(n, tuple) else (n,), strict=False)), cols)
        for n, _ in groups
    ]
    legend_labels = list(kinds.values()) if single else [*names, *kinds.values()]
    fig, axes = figure(
        2, aspect=0.62, min_panel_width=2.3, extra_height=0.45 + legend_space(legend_labels)
    )
    for k, ((_, g), label) in enumerate(zip(groups, names, strict=True)):
        colour = f"C{k % 10}"
        by_round = g.groupby("round")["port_health"]
        mean, q1, q3 = by_round.mean(), by_round.quantile(0.25), by_round.quantile(0.75)
        text = kinds["line"] if single else label
        (line,) = axes[0].plot(mean.index, mean.to_numpy(), marker="o", color=colour, label=text)
        band = axes[0].fill_between(
            mean.index,
            q1.to_numpy(),
            q3.to_numpy(),
            alpha=0.2,
            lw=0,
            color=colour,
            label=kinds["band"] if single else label,
        )
        if single:
            entries[kinds["line"]], entries[kinds["band"]] = line, band
        else:
            entries[label] = (line, band)
        if "RunId" in g.columns:
            n_runs = g["RunId"].nunique()
            alive = g[g["alive"].astype(bool)].groupby("round")["RunId"].nunique() / n_runs
            axes[1].step(alive.index, alive.to_numpy(), where="post", color=colour, label=text)
            err = np.sqrt(alive * (1 - alive) / n_runs)  # binomial s.e.m. over the games
            axes[1].fill_between(
                alive.index,
                (alive - err).to_numpy(),
                (alive + err).to_numpy(),
                step="post",
                alpha=0.2,
                lw=0,
                color=colour,
                label=kinds["band"] if single else label,
            )
    if not single:  # the colours name the grid cells; grey keys say what a line and a band are
        entries[kinds["line"]] = Line2D([], [], color="0.35", marker="o")
        entries[kinds["band"]] = Patch(color="0.35", alpha=0.25, lw=0)
    for level, text in HEALTH_LINES:
        ref = axes[0].axhline(level, color="grey" if level else "firebrick", lw=0.8, ls="--")
        explained_by(ref, "annotation")
        axes[0].annotate(
            text,
            (0.0, level),
            xycoords=("axes fraction", "data"),
            xytext=(3, 2),
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=SMALL_PT,
            color="dimgrey",
        )
    axes[0].set_xlabel("round")
    axes[0].set_ylabel("port health at the end\nof the round (0-100)")
    axes[1].set_xlabel("round")
    axes[1].set_ylabel("share of games\nstill running")
    axes[1].set_ylim(0, 1.05)
    legend_below(fig, list(entries.values()), list(entries), ncol=1 if single else None)
    games = data["RunId"].nunique() if "RunId" in data else len(runs)
    title(fig, f"Port health and survival by round ({games} games)")
    return [save(fig, run_dir / "port_of_mars_health")]


#: reference lines of the health panel: the event-count thresholds and the collapse
HEALTH_LINES = (
    (65, "65: below, two events a round"),
    (35, "35: below, three events a round"),
    (0, "0: the port collapses"),
)
