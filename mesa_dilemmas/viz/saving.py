"""Where and how figures are written: one format per command (PNG, SVG or PDF), one resolution.

``mesa-dilemmas figures RUN_DIR --format svg`` (and ``run --figures --format``, ``analyse
NAME --format``) set the format for the figure functions they call; each function
names its file without caring about the suffix and saves through :func:`save`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matplotlib is imported when a figure is saved, not with the command line
    from matplotlib.figure import Figure

#: the formats the commands offer (matplotlib writes each without extra dependencies)
FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
#: raster resolution: 150 dots per inch keeps 8-9 pt text legible at 100% zoom
DPI = 150
#: the margin around a figure's tight box, inches: small, so a figure drawn 3.5 in wide
#: (:mod:`mesa_dilemmas.viz.print_size`) prints at its size and not shrunk to fit
PAD = 0.02

_format: ContextVar[str] = ContextVar("figure_format", default="png")
_kept: ContextVar[list[tuple[Path, Figure]] | None] = ContextVar("kept_figures", default=None)


@contextmanager
def figure_format(fmt: str) -> Iterator[None]:
    """Figures saved inside this block are written as ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise ValueError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    token = _format.set(fmt)
    try:
        yield
    finally:
        _format.reset(token)


@contextmanager
def keep_figures() -> Iterator[list[tuple[Path, Figure]]]:
    """Figures saved inside this block stay open and are listed (path, figure): for checks."""
    kept: list[tuple[Path, Figure]] = []
    token = _kept.set(kept)
    try:
        yield kept
    finally:
        _kept.reset(token)


def save(fig: Figure, path: Path | str) -> Path:
    """Write ``fig`` to ``path`` with the current format's suffix; close it; return the path."""
    out = Path(path)
    out = out.with_name(
        f"{out.stem if out.suffix.lstrip('.') in FORMATS else out.name}.{_format.get()}"
    )
    import matplotlib

    # SVG keeps its text as text (searchable, editable), not as glyph outlines
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, dpi=DPI, bbox_inches="tight", pad_inches=PAD)
    kept = _kept.get()
    if kept is not None:
        kept.append((out, fig))
        return out
    if getattr(fig.canvas, "manager", None) is not None:  # made by pyplot: release it
        import matplotlib.pyplot as plt

        plt.close(fig)
    return out
