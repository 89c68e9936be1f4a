"""Figures sized as a paper prints them: one column (3.5 in) or the full page width (7 in).

A figure function draws inside :func:`printable` (the font sizes below) on a figure from
:func:`figure`, whose width is the current print width (:func:`print_width`; full width
unless a caller asks for a column). Text is set at the size it prints at -- never smaller
than :data:`MIN_FONT_PT` -- because the figure is drawn at the size it is printed, not
scaled down afterwards. Panels wrap onto rows when the width is too narrow for them side by
side, and long titles and labels are wrapped to the space they have (:func:`wrap`).

Marks that a legend does not name say what names them instead (:func:`explained_by`):
reference lines labelled on the plot, a heat map's colour bar, bars named by their tick
labels.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

#: a paper's column and its full text width, inches
COLUMN_WIDTH = 3.5
FULL_WIDTH = 7.0
#: no text of a figure is smaller than this at print size (points)
MIN_FONT_PT = 7.0
#: body text: titles and axis labels; small text: ticks, legends, notes on the plot
FONT_PT = 8.0
SMALL_PT = 7.0
TITLE_PT = 8.5

#: the rcParams every figure function draws under (:func:`printable`)
RC: dict[str, Any] = {
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT,
    "axes.labelsize": FONT_PT,
    "figure.titlesize": TITLE_PT,
    "xtick.labelsize": SMALL_PT,
    "ytick.labelsize": SMALL_PT,
    "legend.fontsize": SMALL_PT,
    "legend.title_fontsize": SMALL_PT,
    "legend.frameon": False,
    "legend.handlelength": 1.6,
    "legend.columnspacing": 1.0,
    "lines.linewidth": 1.2,
    "lines.markersize": 3.5,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "errorbar.capsize": 2,
    "figure.constrained_layout.h_pad": 0.03,
    "figure.constrained_layout.w_pad": 0.03,
}

#: the attribute :func:`explained_by` sets on an artist a legend does not name
EXPLAINED = "_print_explained_by"
#: what may stand in for a legend entry
EXPLANATIONS = ("annotation", "colorbar", "ticks", "caption")

_width: ContextVar[float] = ContextVar("print_width", default=FULL_WIDTH)


@contextmanager
def print_width(inches: float) -> Iterator[None]:
    """Figures drawn inside this block are ``inches`` wide (3.5: a column, 7: the page)."""
    if not 2.0 <= inches <= 12.0:
        raise ValueError(f"print width: {inches} in is not between 2 and 12 inches")
    token = _width.set(float(inches))
    try:
        yield
    finally:
        _width.reset(token)


def width() -> float:
    """The current print width in inches."""
    return _width.get()


def is_column() -> bool:
    """True when figures are drawn for one column (narrower than 5 in)."""
    return width() < 5.0


def printable(fn: Any) -> Any:
    """Decorator: draw the figure function under :data:`RC` (print font sizes)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)

    return wrapper


def columns_for(n_panels: int, min_panel_width: float = 1.6, max_cols: int | None = None) -> int:
    """How many panels fit side by side at the current width, each at least ``min_panel_width``."""
    cols = max(1, int(width() // min_panel_width))
    if max_cols:
        cols = min(cols, max_cols)
    return max(1, min(cols, n_panels))


def figure(
    n_panels: int = 1,
    *,
    aspect: float = 0.72,
    min_panel_width: float = 1.6,
    max_cols: int | None = None,
    extra_height: float = 0.0,
    max_height: float = 9.0,
    max_panel_height: float = 2.8,
) -> tuple[Figure, list[Any]]:
    """A figure of the current print width holding ``n_panels`` axes, as many side by side as
    fit (each at least ``min_panel_width`` wide), height ``aspect`` x a panel's width per row
    (at most ``max_panel_height``) plus ``extra_height`` (room for a legend or a title). Returns the figure and its panels
    (unused grid cells are removed)."""
    w = width()
    cols = columns_for(n_panels, min_panel_width, max_cols)
    rows = math.ceil(n_panels / cols)
    panel = w / cols
    height = min(max_height, rows * min(panel * aspect, max_panel_height) + extra_height)
    fig = Figure(figsize=(w, height), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.subplots(rows, cols, squeeze=False)
    axes = list(grid.flat)
    for ax in axes[n_panels:]:
        ax.remove()
    axes = axes[:n_panels]
    for ax in axes:  # explicit, so the sizes hold when the figure is saved outside printable()
        ax.tick_params(labelsize=SMALL_PT)
    return fig, axes


def chars_per_line(inches: float, fontsize: float = FONT_PT) -> int:
    """About how many characters of DejaVu Sans at ``fontsize`` fit in ``inches``."""
    return max(12, int(inches * 72 / (0.6 * fontsize)))


def wrap(text: str, inches: float | None = None, fontsize: float = FONT_PT) -> str:
    """``text`` broken into lines that fit ``inches`` (default: the print width)."""
    room = chars_per_line(width() if inches is None else inches, fontsize)
    return "\n".join(textwrap.fill(part, room, break_on_hyphens=False) for part in text.split("\n"))


def title(fig: Figure, text: str) -> None:
    """The figure's title, wrapped to its width."""
    fig.suptitle(wrap(text, fig.get_figwidth() - 0.1, TITLE_PT), fontsize=TITLE_PT)


def panel_title(ax: Any, text: str, cols: int = 1) -> None:
    """A panel's title, wrapped to the panel's width (``cols`` panels in a row)."""
    fig = ax.get_figure()
    ax.set_title(wrap(text, fig.get_figwidth() / cols - 0.35, FONT_PT), fontsize=FONT_PT)


def explained_by(artists: Any, how: str) -> None:
    """Mark ``artists`` (one or several) as named by something other than a legend entry:
    ``"annotation"`` (text on the plot beside it), ``"colorbar"``, ``"ticks"`` (its tick
    labels name each mark), ``"caption"`` (the title says what it is)."""
    if how not in EXPLANATIONS:
        raise ValueError(f"explained_by: {how!r} is not one of {', '.join(EXPLANATIONS)}")
    from matplotlib.container import Container

    if isinstance(artists, Container):  # bars or error bars: the container and its pieces
        setattr(artists, EXPLAINED, how)
        artists = artists.get_children()
    if isinstance(artists, list | tuple):
        for artist in artists:
            explained_by(artist, how)
    else:
        setattr(artists, EXPLAINED, how)


def legend_columns(labels: list[str], inches: float | None = None) -> int:
    """How many columns of ``labels`` fit side by side in ``inches`` (default: print width)."""
    longest = max((len(label) for label in labels), default=10)
    room = chars_per_line(width() if inches is None else inches, SMALL_PT)
    return max(1, min(len(labels), room // (longest + 6)))


def legend_space(labels: list[str], titled: bool = False) -> float:
    """The height (inches) :func:`legend_below` needs for ``labels``: room to leave for it."""
    rows = math.ceil(len(labels) / legend_columns(labels))
    return 0.12 + 0.15 * rows + (0.15 if titled else 0.0)


def legend_below(fig: Figure, handles: list[Any], labels: list[str], **kwargs: Any) -> Any:
    """One legend for the whole figure, under its panels, in as many columns as fit."""
    ncol = kwargs.pop("ncol", None) or legend_columns(labels, fig.get_figwidth())
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, **kwargs)
