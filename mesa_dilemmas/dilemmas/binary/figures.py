"""Figures of the binary-action games (paper 002): self-play curves, evolution, strategy PCA.

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas -- no
pyplot global state, so they are safe in workers and headless runs -- at the print width of
:mod:`mesa_dilemmas.viz.print_size`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Ellipse, Patch

from mesa_dilemmas.dilemmas.binary.rules import game_title
from mesa_dilemmas.viz.print_size import (
    SMALL_PT,
    figure,
    legend_below,
    legend_space,
    printable,
    title,
    width,
    wrap,
)
from mesa_dilemmas.viz.saving import save


def _game(scenario: Any) -> str:
    return getattr(scenario, "game", "") if scenario is not None else ""


def _title(scenario: Any) -> str:
    """The scenario's game by its title (``TITLE`` of its rules), else by name."""
    game = _game(scenario)
    return game_title(game) if game else game


@printable
def self_play(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame | None, scenario: Any
) -> list[Path]:
    """Mean normalised reward vs share of collective agents, one line per group size (Figs. 2-4).

    Grey horizontal lines: the minimum and maximum possible mean normalised
    reward (dotted per group size when they differ between sizes).
    """
    run_dir = Path(run_dir)
    sizes = sorted(runs["group_size"].unique())
    names = [f"n = {n} players" for n in sizes]
    fig, (ax,) = figure(1, aspect=0.62, extra_height=0.35 + legend_space([*names, "x" * 24]))
    colours = _colours(len(sizes))
    bounds = runs.groupby("group_size")[["min_possible", "max_possible"]].first()
    entries: dict[str, Any] = {}
    for n, name, colour in zip(sizes, names, colours, strict=True):
        grp = runs[runs["group_size"] == n].groupby("frac_collective")["normalised_payoff"]
        mean, sem = grp.mean(), grp.sem().fillna(0.0)
        (line,) = ax.plot(
            mean.index,
            mean.to_numpy(),
            marker="o" if len(mean) < 30 else None,
            ms=3,
            color=colour,
            label=name,
        )
        band = ax.fill_between(
            mean.index, mean - sem, mean + sem, color=colour, alpha=0.2, lw=0, label=name
        )
        entries[name] = (line, band)
    words = {"min_possible": "lowest possible", "max_possible": "highest possible"}
    for column in bounds.columns:  # grey when a bound is the same for every size, else per size
        values = bounds[column]
        if np.allclose(values.to_numpy(), values.iloc[0]):
            name = f"{words.get(column, column)} reward ({values.iloc[0]:.3g})"
            entries[name] = ax.axhline(
                values.iloc[0],
                color="grey",
                lw=1.0,
                ls="-" if column == "max_possible" else "--",
                label=name,
            )
        else:
            for n, colour in zip(sizes, colours, strict=True):
                name = f"{words.get(column, column)}, n = {n}"
                entries[name] = ax.axhline(
                    values.loc[n], color=colour, ls=":", lw=0.9, alpha=0.8, label=name
                )
    ax.set_xlabel("share of collective agents in the group (0-1)")
    ax.set_ylabel("mean normalised reward\n(per player; no unit)")
    ax.set_xlim(0, 1)
    ax.set_title(wrap(f"Self-play, {_title(scenario)}: reward by the group's mix", width() - 0.4))
    legend_below(fig, list(entries.values()), list(entries), title="lines: mean; bands: ± s.e.m.")
    return [save(fig, run_dir / "self_play")]


@printable
def cultural_evolution(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame | None, scenario: Any
) -> list[Path]:
    """Winning genes per group size (Table 2) and gene frequencies of one run (Appendix C)."""
    run_dir = Path(run_dir)
    genes = [c[len("freq:") :] for c in runs.columns if c.startswith("freq:")]
    sizes = sorted(runs["group_size"].unique())
    trajectories = steps is not None and len(steps) > 0
    threshold = getattr(getattr(scenario, "options", None), "get", lambda *_: None)("threshold")
    labels = [*genes, *([f"dominance threshold ({threshold:.0%})"] if threshold else [])]
    fig, axes = figure(
        1 + len(sizes) if trajectories else 1,
        aspect=0.85,
        min_panel_width=1.7,
        extra_height=0.5 + legend_space(labels),
    )
    ax = axes[0]
    colours = dict(zip(genes, _colours(len(genes)), strict=True))
    x = np.arange(len(sizes))
    bottom = np.zeros(len(sizes))
    for gene in genes:
        counts = np.array([(runs[runs["group_size"] == n]["winner"] == gene).sum() for n in sizes])
        ax.bar(x, counts, bottom=bottom, color=colours[gene], label=gene)
        bottom += counts
    ax.set_xticks(x, [f"{n}" for n in sizes])
    ax.set_xlabel("group size (players)")
    ax.set_ylabel("runs won by the gene")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title("winners")
    entries: dict[str, Any] = {gene: Patch(color=colours[gene]) for gene in genes}
    if trajectories:
        for ax, n in zip(axes[1:], sizes, strict=True):
            first_run = runs[runs["group_size"] == n].sort_values("run").iloc[0]
            traj = steps[(steps["group_size"] == n) & (steps["run"] == first_run["run"])]
            for gene in genes:
                # frequencies of the populations that played, then the final population
                xs = [*traj["Step"], int(traj["Step"].max()) + 1]
                ys = [*traj[f"freq:{gene}"], first_run[f"freq:{gene}"]]
                ax.plot(xs, ys, color=colours[gene], label=gene)
            if threshold:
                name = labels[-1]
                entries[name] = ax.axhline(threshold, color="grey", ls=":", lw=0.8, label=name)
            ax.set_ylim(0, 1)
            ax.set_xlabel("generation")
            ax.set_ylabel("gene frequency (0-1)")
            ax.set_title(f"run {int(first_run['run'])}, n = {n}")
    legend_below(fig, list(entries.values()), list(entries))
    title(fig, f"Cultural evolution, {_title(scenario)}: which gene wins, and one run's course")
    return [save(fig, run_dir / "cultural_evolution")]


@printable
def pca_scatter(
    path: Path,
    coords: np.ndarray,
    set_labels: Sequence[str],
    reference_coords: np.ndarray | None = None,
    reference_labels: Sequence[str] = (),
    explained: Sequence[float] = (),
    title: str = "",
) -> Path:
    """Strategies on the first two principal components, set centroids with 1-sd ellipses (Fig. 1).

    The sets' own strategies are drawn on top; the reference strategies are hollow grey
    triangles behind them, each named."""
    names = list(dict.fromkeys(set_labels))
    refs = reference_coords is not None and len(reference_coords) > 0
    keys = {
        "centroid": "set centroid (mean)",
        "ellipse": "± 1 s.d. around the centroid",
        "reference": "reference strategy",
    }
    labels = [*names, *keys.values()]
    fig, (ax,) = figure(1, aspect=0.8, extra_height=0.35 + legend_space(labels))
    colours = dict(zip(names, _colours(len(names)), strict=True))
    labels_ = np.asarray(set_labels)
    entries: dict[str, Any] = {}
    if refs:
        ax.scatter(
            reference_coords[:, 0],
            reference_coords[:, 1],
            marker="^",
            s=22,
            facecolor="none",
            edgecolor="0.45",
            lw=0.8,
            zorder=1,
            label=keys["reference"],
        )
        entries[keys["reference"]] = ax.collections[-1]
        for (px, py), text in zip(reference_coords[:, :2], reference_labels, strict=True):
            ax.annotate(
                text,
                (px, py),
                textcoords="offset points",
                xytext=(3, -7),
                fontsize=SMALL_PT,
                color="0.35",
                zorder=1,
            )
    for name in names:
        pts = coords[labels_ == name, :2]
        entries[name] = ax.scatter(
            pts[:, 0],
            pts[:, 1],
            s=12,
            alpha=0.75,
            color=colours[name],
            edgecolor="white",
            lw=0.3,
            zorder=4,
            label=name,
        )
        centre = pts.mean(axis=0)
        centroid = ax.scatter(
            [centre[0]],
            [centre[1]],
            marker="X",
            s=60,
            color=colours[name],
            edgecolor="black",
            lw=0.6,
            zorder=5,
            label=keys["centroid"],
        )
        entries.setdefault(keys["centroid"], centroid)
        if len(pts) > 2:
            sd = pts.std(axis=0)
            ellipse = Ellipse(
                centre,
                2 * sd[0],
                2 * sd[1],
                fill=False,
                color=colours[name],
                lw=1.2,
                zorder=3,
                label=keys["ellipse"],
            )
            ax.add_patch(ellipse)
            entries.setdefault(keys["ellipse"], ellipse)
    # the keys of centroid and ellipse in black: their colour is the set's
    if keys["centroid"] in entries:
        entries[keys["centroid"]] = Line2D(
            [], [], ls="", marker="X", ms=7, color="0.5", markeredgecolor="black"
        )
    if keys["ellipse"] in entries:
        entries[keys["ellipse"]] = Patch(fill=False, edgecolor="0.3", lw=1.2)
    ev = list(explained) + [float("nan")] * 2
    ax.set_xlabel(f"PC1 ({ev[0]:.1%} of variance)")
    ax.set_ylabel(f"PC2 ({ev[1]:.1%} of variance)")
    ax.set_title(wrap(title or "Strategy behaviour: first two principal components", width() - 0.4))
    order = [*names, *(k for k in keys.values() if k in entries)]
    legend_below(fig, [entries[k] for k in order], order)
    return save(fig, Path(path))


def _colours(k: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis" if k > 6 else "tab10"]
    if k > 6:
        return [cmap(x) for x in np.linspace(0.0, 0.9, k)]
    return [cmap(i) for i in range(k)]
