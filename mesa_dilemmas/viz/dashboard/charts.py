"""The charts' data types (:class:`Series`, :class:`Ref`) and the charts as PNG bytes.

The pages draw their charts in the browser from Vega-Lite specs (:mod:`.vega`):
six matplotlib PNGs per round took ~0.3 s and capped Play at a few rounds per
second.  The PNG functions (plain matplotlib, a ``Figure`` per call, safe in
worker threads) remain for uses without a browser; no page uses them now.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

SIZE = (5.2, 2.7)
DPI = 90
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip


@dataclass(frozen=True)
class Series:
    """One line: y values (x defaults to 0, 1, 2, ...)."""

    label: str
    y: Sequence[float]
    x: Sequence[float] | None = None
    color: str | None = None
    style: str = "-"


@dataclass(frozen=True)
class Ref:
    """A horizontal reference line (a threshold, an optimum)."""

    label: str
    y: float
    color: str = "#555555"
    style: str = "--"


def _finish(fig: Figure) -> bytes:
    fig.tight_layout(pad=0.6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _empty(ax: object, text: str = "no rounds played yet") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#888888")  # type: ignore[attr-defined]


def line_png(
    title: str,
    series: Sequence[Series],
    refs: Sequence[Ref] = (),
    *,
    ylabel: str = "",
    xlabel: str = "round",
    ylim: tuple[float | None, float | None] | None = None,
) -> bytes:
    """Lines over rounds with optional reference lines; a legend when there is more than one."""
    fig = Figure(figsize=SIZE)
    ax = fig.subplots()
    plotted, xs = 0, []
    for i, s in enumerate(series):
        y = [math.nan if v is None else float(v) for v in s.y]
        if not y:
            continue
        x = list(s.x) if s.x is not None else list(range(len(y)))
        xs += x
        ax.plot(x, y, s.style, color=s.color or PALETTE[i % len(PALETTE)], label=s.label, lw=1.8,
                marker="o" if len(y) <= 12 else None, ms=3)  # fmt: skip
        plotted += 1
    for r in refs:
        ax.axhline(r.y, color=r.color, ls=r.style, lw=1.1, label=r.label)
    if not plotted:
        _empty(ax)
    elif len(set(xs)) < 2:  # a single point: a readable axis around it, not +-0.05
        ax.set_xlim(min(xs) - 0.5, min(xs) + 1.5)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.25)
    if plotted + len(refs) > 1:
        ax.legend(fontsize=7, loc="best", framealpha=0.8)
    return _finish(fig)


def bar_png(
    title: str,
    labels: Sequence[str],
    groups: dict[str, Sequence[float]],
    *,
    ylabel: str = "",
    colors: Sequence[str] | None = None,
) -> bytes:
    """Grouped bars: one group of bars per label, one bar per entry of ``groups``."""
    fig = Figure(figsize=SIZE)
    ax = fig.subplots()
    if not labels or not groups:
        _empty(ax, "nothing to show yet")
    else:
        x = np.arange(len(labels))
        width = 0.8 / len(groups)
        for i, (name, values) in enumerate(groups.items()):
            if colors is not None and len(groups) == 1:
                color: str | list[str] = list(colors)
            else:
                color = PALETTE[i % len(PALETTE)]
            ax.bar(x + (i - (len(groups) - 1) / 2) * width, values, width, label=name, color=color)
        ax.set_xticks(x, labels, fontsize=7, rotation=20 if len(labels) > 6 else 0)
        top = max((float(v) for values in groups.values() for v in values), default=0.0)
        if min((float(v) for values in groups.values() for v in values), default=0.0) >= 0:
            ax.set_ylim(0, max(top * 1.1, 1.0))  # counts and payoffs: from 0, even when all 0
        if len(groups) > 1:
            ax.legend(fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.25, axis="y")
    return _finish(fig)


def stack_png(
    title: str, series: Sequence[Series], *, ylabel: str = "", xlabel: str = "generation"
) -> bytes:
    """Stacked areas (shares that add up to 1, e.g. gene frequencies)."""
    fig = Figure(figsize=SIZE)
    ax = fig.subplots()
    if not series or not len(series[0].y):
        _empty(ax, "no generations played yet")
    else:
        x = list(series[0].x) if series[0].x is not None else list(range(len(series[0].y)))
        ax.stackplot(x, *[list(s.y) for s in series], labels=[s.label for s in series],
                     colors=[s.color or PALETTE[i % len(PALETTE)] for i, s in enumerate(series)],
                     alpha=0.85)  # fmt: skip
        ax.set_ylim(0, 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7, loc="upper left")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    return _finish(fig)


def actions_png(title: str, actions: np.ndarray, player_labels: Sequence[str]) -> bytes:
    """Who cooperated when: players (rows) x rounds (columns), C green, D red."""
    fig = Figure(figsize=SIZE)
    ax = fig.subplots()
    if actions.size == 0:
        _empty(ax)
    else:
        ax.imshow(actions.T.astype(float), aspect="auto", interpolation="nearest",
                  cmap=ListedColormap(["#d62728", "#2ca02c"]), vmin=0, vmax=1)  # fmt: skip
        ax.set_yticks(range(len(player_labels)), player_labels, fontsize=6)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(lambda x, _pos: f"{int(x) + 1}")
        ax.tick_params(labelsize=6)
        ax.set_xlabel("round (green: C, red: D)", fontsize=8)
    ax.set_title(title, fontsize=10)
    return _finish(fig)
