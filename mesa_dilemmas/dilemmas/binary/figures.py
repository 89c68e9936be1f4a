"""Figures of the binary-action games (paper 002): self-play curves, evolution, strategy PCA.

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas -- no
pyplot global state, so they are safe in workers and headless runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from mesa_dilemmas.dilemmas.binary.rules import game_title
from mesa_dilemmas.viz.saving import save


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols)
    return fig, axes


def _game(scenario: Any) -> str:
    return getattr(scenario, "game", "") if scenario is not None else ""


def _title(scenario: Any) -> str:
    """The scenario's game by its title (``TITLE`` of its rules), else by name."""
    game = _game(scenario)
    return game_title(game) if game else game


def self_play(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame | None, scenario: Any
) -> list[Path]:
    """Mean normalised reward vs share of collective agents, one line per group size (Figs. 2-4).

    Grey horizontal lines: the minimum and maximum possible mean normalised
    reward (dashed per group size when they differ between sizes).
    """
    run_dir = Path(run_dir)
    fig, ax = _figure(6.0, 4.0)
    sizes = sorted(runs["group_size"].unique())
    colours = _colours(len(sizes))
    bounds = runs.groupby("group_size")[["min_possible", "max_possible"]].first()
    for n, colour in zip(sizes, colours, strict=True):
        grp = runs[runs["group_size"] == n].groupby("frac_collective")["normalised_payoff"]
        mean, sem = grp.mean(), grp.sem().fillna(0.0)
        ax.plot(
            mean.index,
            mean.to_numpy(),
            marker="o" if len(mean) < 30 else None,
            ms=3,
            color=colour,
            label=f"n = {n}",
        )
        ax.fill_between(mean.index, mean - sem, mean + sem, color=colour, alpha=0.2, lw=0)
    names = {"min_possible": "lowest possible", "max_possible": "highest possible"}
    for column in bounds.columns:  # grey when a bound is the same for every size, else per size
        values = bounds[column]
        if np.allclose(values.to_numpy(), values.iloc[0]):
            ax.axhline(values.iloc[0], color="grey", lw=1.0)
            ax.annotate(
                f"{names.get(column, column)} ({values.iloc[0]:.3g})",
                (0.01, values.iloc[0]),
                xycoords=("axes fraction", "data"),
                xytext=(0, 2 if column == "min_possible" else -2),
                textcoords="offset points",
                va="bottom" if column == "min_possible" else "top",
                fontsize=7,
                color="dimgrey",
            )
        else:
            for n, colour in zip(sizes, colours, strict=True):
                ax.axhline(
                    values.loc[n],
                    color=colour,
                    ls=":",
                    lw=0.9,
                    alpha=0.8,
                    label=f"{names.get(column, column)}, n = {n}",
                )
    ax.set_xlabel("share of collective agents")
    ax.set_ylabel("mean normalised reward (± s.e.m.)")
    ax.set_xlim(0, 1)
    ax.set_title(f"Self-play: {_title(scenario)}")
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return [save(fig, run_dir / "self_play")]


def cultural_evolution(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame | None, scenario: Any
) -> list[Path]:
    """Winning genes per group size (Table 2) and gene frequencies of one run (Appendix C)."""
    run_dir = Path(run_dir)
    genes = [c[len("freq:") :] for c in runs.columns if c.startswith("freq:")]
    sizes = sorted(runs["group_size"].unique())
    fig, axes = _figure(6.0 + 3.0 * len(sizes), 4.0, ncols=1 + len(sizes))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    colours = dict(zip(genes, _colours(len(genes)), strict=True))
    x = np.arange(len(sizes))
    bottom = np.zeros(len(sizes))
    for gene in genes:
        counts = np.array([(runs[runs["group_size"] == n]["winner"] == gene).sum() for n in sizes])
        ax.bar(x, counts, bottom=bottom, color=colours[gene], label=gene)
        bottom += counts
    ax.set_xticks(x, [f"n = {n}" for n in sizes])
    ax.set_ylabel("runs won")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(f"Winning genes: {_title(scenario)}")
    ax.legend(frameon=False, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)
    if steps is not None and len(steps):
        for ax, n in zip(axes[1:], sizes, strict=True):
            first_run = runs[runs["group_size"] == n].sort_values("run").iloc[0]
            traj = steps[(steps["group_size"] == n) & (steps["run"] == first_run["run"])]
            for gene in genes:
                # frequencies of the populations that played, then the final population
                xs = [*traj["Step"], int(traj["Step"].max()) + 1]
                ys = [*traj[f"freq:{gene}"], first_run[f"freq:{gene}"]]
                ax.plot(xs, ys, color=colours[gene], label=gene)
            threshold = getattr(getattr(scenario, "options", None), "get", lambda *_: None)(
                "threshold"
            )
            if threshold:  # named on the line (the genes' colours are in the first panel)
                ax.axhline(threshold, color="grey", ls=":", lw=0.8)
                ax.annotate(
                    f"dominance threshold {threshold:.0%}",
                    (0.01, threshold),
                    xycoords=("axes fraction", "data"),
                    xytext=(0, 2),
                    textcoords="offset points",
                    fontsize=7,
                    color="dimgrey",
                )
            ax.set_ylim(0, 1)
            ax.set_xlabel("generation")
            ax.set_ylabel("gene frequency")
            ax.set_title(f"run {int(first_run['run'])}, n = {n}: {first_run['winner']} wins")
    return [save(fig, run_dir / "cultural_evolution")]


def pca_scatter(
    path: Path,
    coords: np.ndarray,
    set_labels: Sequence[str],
    reference_coords: np.ndarray | None = None,
    reference_labels: Sequence[str] = (),
    explained: Sequence[float] = (),
    title: str = "",
) -> Path:
    """Strategies on the first two principal components, set centroids with 1-sd ellipses (Fig. 1)."""
    fig, ax = _figure(6.5, 5.0)
    names = list(dict.fromkeys(set_labels))
    colours = dict(zip(names, _colours(len(names)), strict=True))
    labels = np.asarray(set_labels)
    for name in names:
        pts = coords[labels == name, :2]
        ax.scatter(pts[:, 0], pts[:, 1], s=10, alpha=0.5, color=colours[name], label=name)
        centre = pts.mean(axis=0)
        ax.scatter(
            [centre[0]], [centre[1]], marker="X", s=80, color=colours[name], edgecolor="black"
        )
        if len(pts) > 2:
            sd = pts.std(axis=0)
            ax.add_patch(
                Ellipse(centre, 2 * sd[0], 2 * sd[1], fill=False, color=colours[name], lw=1.5)
            )
    if reference_coords is not None and len(reference_coords):
        ax.scatter(reference_coords[:, 0], reference_coords[:, 1], marker="^", s=40, color="black")
        for (px, py), text in zip(reference_coords[:, :2], reference_labels, strict=True):
            ax.annotate(text, (px, py), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ev = list(explained) + [float("nan")] * 2
    ax.set_xlabel(f"PC1 ({ev[0]:.1%} of variance)")
    ax.set_ylabel(f"PC2 ({ev[1]:.1%} of variance)")
    ax.set_title(title or "Strategy behaviour: first two principal components")
    ax.legend(frameon=False, fontsize=7)
    return save(fig, Path(path))


def _colours(k: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis" if k > 6 else "tab10"]
    if k > 6:
        return [cmap(x) for x in np.linspace(0.0, 0.9, k)]
    return [cmap(i) for i in range(k)]
