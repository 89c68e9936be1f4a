"""Paper 001's Figs. 2-6 drawn from the tables of ``dilemmas/port_of_mars/tables.py``.

Each function takes the tables (the same frames ``mesa-dilemmas analyse port_of_mars``
writes as CSV) and returns a matplotlib Figure; :func:`paper_figures` decides which the
run's grid supports and says why the others are skipped.  Nothing here computes a number
that is not in a table: a bar's height and its error bar are table cells.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from mesa_dilemmas.dilemmas.port_of_mars.figures import label_order, short_label
from mesa_dilemmas.dilemmas.port_of_mars.tables import MEETING_TEST, group_name
from mesa_dilemmas.viz.print_size import (
    SMALL_PT,
    columns_for,
    explained_by,
    figure,
    legend_below,
    legend_space,
    panel_title,
    printable,
    title,
    width,
    wrap,
)

#: Fig. 2 compares at most this many grid cells side by side (one colour each)
MAX_CELLS_SIDE_BY_SIDE = 4


def _axis_title(labels: list[str]) -> str:
    return "SVO angle (degrees)" if labels and labels[0].startswith("svo") else "persona"


def _grouped_bars(
    ax: Any,
    table: pd.DataFrame,
    value: str,
    err: str,
    labels: list[str],
    hues: list[str],
    hue_col: str = "group",
    scale: float = 1.0,
) -> None:
    """Bars of ``value`` ± ``err`` per label, one colour per ``hue_col`` value."""
    width_ = 0.8 / max(1, len(hues))
    x = np.arange(len(labels))
    for j, hue in enumerate(hues):
        sub = table[table[hue_col] == hue].set_index("label").reindex(labels)
        ax.bar(
            x + (j - (len(hues) - 1) / 2) * width_,
            scale * sub[value].to_numpy(dtype=float),
            width_,
            yerr=scale * sub[err].to_numpy(dtype=float),
            color=f"C{j % 10}",
            label=str(hue),
        )
    ax.set_xticks(x, [short_label(lab) for lab in labels])


def _legend(fig: Figure, ax: Any, title: str) -> None:
    handles, texts = ax.get_legend_handles_labels()
    legend_below(fig, handles, texts, title=title)


@printable
def fig2_by_label(by_label: pd.DataFrame) -> Figure:
    """Fig. 2 panels: points in surviving games, % dirty, health spend, rejections, win rate,
    and the offers proposed per game by type; one colour per grid cell."""
    labels = label_order(by_label["label"].tolist())
    hues = list(dict.fromkeys(by_label["group"]))
    panels = [  # (column, panel title, y label with units)
        ("points_surviving", "points in surviving games", "points"),
        ("pct_dirty", "% dirty accomplishments taken", "% of purchases\nwith one in hand"),
        ("health_spend_per_round", "coins to port health per round", "coins per round"),
        ("reject_rate", "share of offers received rejected", "share (0-1)"),
        ("proposed_fair", "fair offers proposed per game", "offers per game"),
        ("proposed_generous", "generous offers proposed per game", "offers per game"),
        ("proposed_selfish", "selfish offers proposed per game", "offers per game"),
        ("win_rate", "share of games won", "share (0-1)"),
    ]
    legend = legend_space(hues, titled=True) if len(hues) > 1 else 0.0
    fig, axes = figure(len(panels), aspect=0.85, min_panel_width=1.7, extra_height=0.5 + legend)
    cols = columns_for(len(panels), 1.7)
    for ax, (value, name, ylabel) in zip(axes, panels, strict=True):
        _grouped_bars(ax, by_label, value, f"{value}_sem", labels, hues)
        panel_title(ax, name, cols)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(_axis_title(labels))
    if len(hues) > 1:
        _legend(fig, axes[0], "grid cell")
    title(
        fig,
        "Players by persona (bars: mean ± s.e.m. over players; pooled ratios ± ratio s.e. "
        "with players as clusters)",
    )
    return fig


def _p_text(p: float) -> str:
    if not np.isfinite(p):
        return "p = n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


@printable
def fig3_meeting(tests: pd.DataFrame, survival: dict[str, float] | None = None) -> Figure:
    """Fig. 3: per label, coins to port health (total per game) and % dirty with the meeting
    and without it (mean ± s.e.m. over players), the test's p-value above each pair."""
    labels = label_order(tests["label"].tolist())
    table = tests.set_index("label").reindex(labels)
    fig, axes = figure(
        2,
        aspect=0.7,
        min_panel_width=2.6,
        extra_height=0.55 + legend_space(["meeting on", "meeting off"]),
    )
    x = np.arange(len(labels))
    for ax, (name, ylabel) in zip(
        axes,
        (
            ("health_coins_total", "coins to port health\n(per player and game)"),
            ("pct_dirty", "dirty accomplishments\ntaken (% per player)"),
        ),
        strict=True,
    ):
        tops = []
        for j, (cond, text) in enumerate((("on", "meeting on"), ("off", "meeting off"))):
            mean = table[f"{name}_{cond}"].to_numpy(dtype=float)
            err = table[f"{name}_{cond}_sem"].to_numpy(dtype=float)
            ax.bar(x + (j - 0.5) * 0.4, mean, 0.4, yerr=err, color=f"C{j}", label=text)
            tops.append(np.nan_to_num(mean + err))
        top = np.maximum(*tops)
        for i, p in enumerate(table[f"{name}_p"].to_numpy(dtype=float)):
            ax.text(
                x[i],
                top[i] * 1.02 + 0.5,
                _p_text(p),
                ha="center",
                va="bottom",
                fontsize=SMALL_PT,
            )
        ax.set_ylim(0, max(1.0, float(top.max())) * 1.2)
        ax.set_xticks(x, [short_label(lab) for lab in labels])
        ax.set_xlabel(_axis_title(labels))
        ax.set_ylabel(ylabel)
    _legend(fig, axes[0], "")
    surv = ""
    if survival:
        surv = "; survival " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in survival.items())
    title(
        fig,
        f"The meeting on vs off (mean ± s.e.m.; p: {MEETING_TEST} test per persona, "
        f"on vs off){surv}",
    )
    return fig


@printable
def fig4_survival_by_leader(leadership: pd.DataFrame) -> Figure:
    """Fig. 4: survival by the leader's persona, one bar per leadership variant
    (share of runs ± binomial s.e.m.)."""
    leaders = label_order(leadership["leader"].tolist())
    variants = list(dict.fromkeys(leadership["leadership"]))
    fig, (ax,) = figure(
        1, aspect=0.6, extra_height=0.3 + legend_space([str(v) for v in variants], True)
    )
    _grouped_bars(
        ax,
        leadership.rename(columns={"leader": "label"}),
        "survival",
        "survival_sem",
        leaders,
        variants,
        hue_col="leadership",
        scale=100.0,
    )
    ax.set_ylim(0, 105)
    ax.set_ylabel("games the port survived (%)")
    ax.set_xlabel(f"leader's {_axis_title(leaders)}")
    _legend(fig, ax, "leadership")
    n = int(leadership["runs"].min())
    ax.set_title(wrap(f"Survival by who leads ({n}+ games per bar; ± s.e.m.)", width() - 0.4))
    return fig


@printable
def fig5_winners_by_leader(leadership: pd.DataFrame) -> Figure:
    """Fig. 5: per leadership variant, a heatmap of who won (row) by who led (column), in % of
    runs; the leader's own cell outlined."""
    leaders = label_order(leadership["leader"].tolist())
    winners = label_order([c[len("won_") :] for c in leadership.columns if c.startswith("won_")])
    variants = list(dict.fromkeys(leadership["leadership"]))
    fig, axes = figure(
        len(variants),
        aspect=0.9,
        min_panel_width=1.5,
        extra_height=0.9 + legend_space(["the leader's own cell"]),
        max_panel_height=2.6,
    )
    image = None
    outline = None
    for ax, variant in zip(axes, variants, strict=True):
        sub = leadership[leadership["leadership"] == variant].set_index("leader").reindex(leaders)
        values = 100.0 * sub[[f"won_{w}" for w in winners]].to_numpy(dtype=float).T
        image = ax.imshow(values, origin="lower", cmap="viridis", vmin=0, vmax=100)
        explained_by(image, "colorbar")
        for (i, j), v in np.ndenumerate(values):
            if np.isfinite(v):
                ax.text(
                    j,
                    i,
                    f"{v:.0f}",
                    ha="center",
                    va="center",
                    fontsize=SMALL_PT,
                    color="black" if v > 50 else "white",
                )
        for j, lead in enumerate(leaders):
            if lead in winners:
                i = winners.index(lead)
                outline = Rectangle(
                    (j - 0.5, i - 0.5),
                    1,
                    1,
                    fill=False,
                    ec="red",
                    lw=1.5,
                    label="the leader's own cell",
                )
                ax.add_patch(outline)
        ax.set_xticks(range(len(leaders)), [short_label(x) for x in leaders])
        ax.set_yticks(range(len(winners)), [short_label(w) for w in winners])
        ax.set_xlabel(f"leader's {_axis_title(leaders)}".replace(" (", "\n("))
        ax.set_ylabel(f"winner's {_axis_title(winners)}".replace(" (", "\n("))
        ax.set_title(variant)
    if image is not None:
        bar = fig.colorbar(image, ax=axes, shrink=0.9)
        bar.set_label("games won (%)")
        bar.ax.tick_params(labelsize=SMALL_PT)
    if outline is not None:
        legend_below(fig, [Patch(fill=False, ec="red", lw=1.5)], ["the leader's own cell"])
    title(
        fig,
        f"Who won, by who led ({int(leadership['runs'].min())}+ games per column; a column need "
        "not sum to 100: a collapse has no winner, a tie several)",
    )
    return fig


def svo_set(angles: Any) -> str:
    """``"-15..60"`` for an SVO set stored as JSON text or a list."""
    values = json.loads(angles) if isinstance(angles, str) else list(angles)
    return f"{min(values):g}..{max(values):g}" if values else "?"


@printable
def fig6_groups(groups: pd.DataFrame, runs: pd.DataFrame) -> Figure:
    """Fig. 6: per grid cell, Gini of points (x) against coins to port health per game (y),
    the marker's area by mean points, colour by SVO set; every run (its cell in ``group``)
    faint behind."""
    sets = list(dict.fromkeys(svo_set(a) for a in groups["svo_angles"]))
    keys = {
        "cell": "grid cell: mean ± s.e.m. (area: mean points)",
        "game": "one game",
    }
    set_names = [f"SVO set {s}" for s in sets]
    fig, axes = figure(
        2,
        aspect=0.75,
        min_panel_width=2.4,
        extra_height=0.55 + legend_space([*set_names, *keys.values()]),
    )
    colours = {s: f"C{i}" for i, s in enumerate(sets)}
    run_group = runs["group"].tolist()
    size = 12 + 15 * groups["points_mean"].clip(lower=0).to_numpy(dtype=float)
    for ax, (xcol, xlabel) in zip(
        axes,
        (
            ("gini_points", "Gini of the players' points\n(0-1; lower: more equal)"),
            ("points_mean", "mean points per player"),
        ),
        strict=True,
    ):
        for row, s in zip(groups.itertuples(index=False), size, strict=True):
            colour = colours[svo_set(row.svo_angles)]
            mine = runs[[g == row.group for g in run_group]]
            ax.scatter(
                mine[xcol],
                mine["health_coins_total"],
                s=6,
                alpha=0.25,
                color=colour,
                lw=0,
                label=keys["game"],
            )
            ax.errorbar(
                getattr(row, xcol),
                row.health_coins_total,
                xerr=getattr(row, f"{xcol}_sem"),
                yerr=row.health_coins_total_sem,
                color=colour,
                capsize=2,
                lw=1,
                label=keys["cell"],
            )
            ax.scatter(
                [getattr(row, xcol)],
                [row.health_coins_total],
                s=s,
                color=colour,
                edgecolor="black",
                zorder=3,
                label=keys["cell"],
            )
            if len(groups) <= 4:  # name the cell beside its marker, on the side with room
                x = getattr(row, xcol)
                left = x > np.nanmean(runs[xcol].to_numpy(dtype=float))
                ax.annotate(
                    str(row.group).replace(", ", ",\n"),
                    (x, row.health_coins_total),
                    textcoords="offset points",
                    xytext=(-6, 4) if left else (6, 4),
                    ha="right" if left else "left",
                    fontsize=SMALL_PT,
                    zorder=4,
                )
        ax.set_xlabel(xlabel)
        ax.set_ylabel("coins to port health\n(per game, all players)")
    handles = [
        *(Patch(color=colours[s]) for s in sets),
        Line2D([], [], ls="", marker="o", ms=7, color="0.6", markeredgecolor="black"),
        Line2D([], [], ls="", marker="o", ms=3, color="0.6", alpha=0.4),
    ]
    legend_below(fig, handles, [*set_names, *keys.values()])
    title(
        fig,
        "Grid cells by equality and health spend (cells named beside their marker)"
        if len(groups) <= 4
        else "Grid cells by equality and health spend",
    )
    return fig


def paper_figures(
    tables: dict[str, pd.DataFrame],
    runs: pd.DataFrame,
    grid: list[str],
    compared: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> tuple[dict[str, Figure], list[str]]:
    """The figures the run's grid supports (file stem -> Figure) and, for each other one, why
    it was skipped.  ``compared``: Fig. 6's cells and runs over this run and others
    (:func:`~mesa_dilemmas.dilemmas.port_of_mars.tables.groups_across`)."""
    figures: dict[str, Figure] = {}
    skipped: list[str] = []
    by_label = tables["by_label"]
    n_cells = by_label["group"].nunique()
    if n_cells <= MAX_CELLS_SIDE_BY_SIDE:
        figures["fig2_by_label"] = fig2_by_label(by_label)
    else:
        skipped.append(
            f"Fig. 2 ({n_cells} grid cells are too many side by side; by_label.csv has them)"
        )
    tests = tables.get("meeting_tests")
    if tests is not None and (tests["n_on"] > 0).any() and (tests["n_off"] > 0).any():
        survival = {
            ("meeting on" if bool(k) else "meeting off"): float(g["survived"].mean())
            for k, g in runs.groupby(runs["meeting"].astype(bool), sort=False)
        }
        figures["fig3_meeting"] = fig3_meeting(tests, survival)
    else:
        skipped.append("Fig. 3 (the grid does not run the meeting both on and off)")
    leadership = tables.get("leadership")
    if leadership is not None and (leadership["leader"] != "").any():
        leadership = leadership[leadership["leader"] != ""]
        figures["fig4_survival_by_leader"] = fig4_survival_by_leader(leadership)
        figures["fig5_winners_by_leader"] = fig5_winners_by_leader(leadership)
    else:
        skipped.append("Figs. 4-5 (the grid has no leadership variants with a leader seat)")
    if compared is None:
        groups = tables["groups"]
        fig6_runs = runs.assign(group=[group_name(r, grid) for _, r in runs.iterrows()])
    else:
        groups, fig6_runs = compared
    presets = set(fig6_runs["preset"]) if "preset" in fig6_runs else set()
    if presets == {"svo"} and "svo_angles" in groups:
        figures["fig6_groups"] = fig6_groups(groups, fig6_runs)
        if groups["svo_angles"].nunique() < 2:
            skipped.append(
                "Fig. 6's second SVO set (one set here: add a run of the other set "
                "with --with RUN_DIR, or grid over svo_angles)"
            )
    else:
        skipped.append("Fig. 6 (players are not an SVO set: preset is not 'svo')")
    return figures, skipped
