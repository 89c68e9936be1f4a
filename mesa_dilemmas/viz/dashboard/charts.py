"""The charts' data types: a line (:class:`Series`), a reference line (:class:`Ref`), the palette.

The pages draw their charts in the browser from Vega-Lite specs built from these
(:mod:`.vega`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


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
