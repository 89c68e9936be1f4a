"""The dashboard's charts as Vega-Lite specs: drawn in the browser, with hover values.

The specs are plain dicts written here rather than built with Altair: Altair's
objects validate and deep-copy on every call (~0.2 s for one small layered
chart), which would cap a page at a few rounds per second; a dict costs well
under a millisecond.  :class:`~.vega_widget.VegaChart` draws them with the Vega
files the asset prefetch installs, updating a chart in place when only its rows change.
Line charts zoom (wheel) and pan (drag); a double-click resets them.

The chart kinds: :func:`line`, :func:`bars`, :func:`stack`, :func:`actions`; their
data types (:class:`~.charts.Series`, :class:`~.charts.Ref`) are in :mod:`.charts`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mesa_dilemmas.viz.dashboard.charts import PALETTE, Ref, Series

Spec = dict[str, Any]
WIDTH, HEIGHT = "container", 210
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"


def _num(value: Any) -> float | None:
    """JSON-safe number (NaN and None are gaps)."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def _base(title: str, subtitle: str = "") -> Spec:
    return {
        "$schema": SCHEMA,
        "title": {"text": title, **({"subtitle": subtitle} if subtitle else {}), "fontSize": 13},
        "width": WIDTH,
        "height": HEIGHT,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "config": {
            "legend": {
                "orient": "bottom",
                "labelFontSize": 11,
                "symbolSize": 60,
                "labelLimit": 320,
            },
            "axis": {"labelFontSize": 10, "titleFontSize": 11},
            "view": {"stroke": None},
        },
    }


def empty(title: str, text: str = "no rounds played yet") -> Spec:
    return {
        **_base(title),
        "data": {"values": [{"text": text}]},
        "mark": {"type": "text", "color": "#888888", "fontSize": 13},
        "encoding": {"text": {"field": "text"}},
    }


def line(
    title: str,
    series: Sequence[Series],
    refs: Sequence[Ref] = (),
    *,
    ylabel: str = "",
    xlabel: str = "round",
    ylim: tuple[float | None, float | None] | None = None,
    subtitle: str = "",
) -> Spec:
    """Lines over rounds (hover: the values of every series at that round) and labelled
    horizontal reference lines; the legend sits below the plot, never over the data."""
    rows, names, colors, dashes = [], [], [], []
    for i, s in enumerate(series):
        dashes.append([1, 0] if s.style == "-" else [5, 4] if s.style == "--" else [2, 3])
        x = list(s.x) if s.x is not None else list(range(len(s.y)))
        rows += [
            {"x": _num(a), "y": _num(b), "series": s.label} for a, b in zip(x, s.y, strict=False)
        ]
        names.append(s.label)
        colors.append(s.color or PALETTE[i % len(PALETTE)])
    if not rows:
        return empty(title)
    y: Spec = {"field": "y", "type": "quantitative", "title": ylabel}
    if ylim is not None and None not in ylim:
        # no clamp: zoomed in, a line outside the view is clipped away, not drawn at its edge
        y["scale"] = {"domain": list(ylim)}
    elif refs:  # keep the reference lines in view
        y["scale"] = {"zero": False}
    # whole rounds only; nothing here depends on the number of rows, so a new round changes the
    # spec's rows alone and the chart widget updates the drawn chart in place
    # (a tick between two rounds, which Vega draws at a zoom or on a one-round chart, is unlabelled)
    x_axis: Spec = {
        "format": "d",
        "tickMinStep": 1,
        "labelExpr": "datum.value % 1 ? '' : datum.label",
    }
    layers: list[Spec] = [
        {
            # wheel to zoom, drag to pan, double-click to reset; the chart widget updates its rows
            # in place (``vega_widget``), so a zoom survives the next rounds
            "params": [{"name": "zoom", "select": "interval", "bind": "scales"}],
            "mark": {"type": "line", "point": {"size": 16}, "strokeWidth": 2},
            "encoding": {
                "x": {"field": "x", "type": "quantitative", "title": xlabel, "axis": x_axis},
                "y": y,
                "color": {
                    "field": "series",
                    "type": "nominal",
                    "title": None,
                    "scale": {"domain": names, "range": colors},
                    "legend": None
                    if len(names) < 2
                    else {"orient": "bottom", "columns": legend_columns(names)},
                },
                "tooltip": [
                    {"field": "series", "title": "series"},
                    {"field": "x", "title": xlabel},
                    {"field": "y", "title": ylabel or "value", "format": ".4~g"},
                ],
            },
        }
    ]
    if any(d != [1, 0] for d in dashes):  # dashed series (bounds drawn as lines)
        layers[0]["encoding"]["strokeDash"] = {
            "field": "series",
            "type": "nominal",
            "legend": None,
            "scale": {"domain": names, "range": dashes},
        }
    if refs:
        layers += ref_layers(refs, rows, ylim)
    return {
        **_base(title, subtitle),
        "data": {"values": rows},
        "layer": layers,
        "resolve": {"scale": {"color": "independent"}},
    }


#: a text's width in pixels per character at the charts' 11 px legend font (an overestimate:
#: a legend that is estimated too wide gets one more row, never a clipped entry)
CHAR_PX = 6.6
#: the narrowest plot a chart has (two charts a row at 1400 px, one at 900 px)
NARROWEST_PX = 360


def legend_columns(names: Sequence[str], width: float = NARROWEST_PX) -> int:
    """How many legend entries fit side by side (at most 3) in the narrowest chart: the common
    pool's long entries ("most possible (all defect: stock ÷ n)") go one a row, short ones
    share a row."""
    widest = max((len(n) for n in names), default=0) * CHAR_PX + 30  # symbol and gap
    return max(1, min(len(names), 3, int(width // widest)))


#: the part of the y range near its top where a reference line's label goes below the line
#: (above it, it would leave the plot and be clipped)
TOP_BAND = 0.12
#: the colour drawn around a label so that a line running through it does not strike it out
#: (the chart widget swaps it for the dark card's colour in the dark theme)
HALO = "#ffffff"


def _y_range(
    rows: Sequence[dict[str, Any]],
    refs: Sequence[Ref],
    ylim: tuple[float | None, float | None] | None,
) -> tuple[float, float]:
    """The y range the chart shows (its ``ylim``, else what its lines and references span)."""
    if ylim is not None and None not in ylim:
        return float(ylim[0]), float(ylim[1])  # type: ignore[arg-type]
    ys = [r["y"] for r in rows if r["y"] is not None] + [float(r.y) for r in refs]
    return (min(ys), max(ys)) if ys else (0.0, 1.0)


def ref_layers(
    refs: Sequence[Ref],
    rows: Sequence[dict[str, Any]] = (),
    ylim: tuple[float | None, float | None] | None = None,
) -> list[Spec]:
    """Dashed horizontal lines, each labelled on the plot at its left end: above the line, or
    below it when the line is near the top of the range (so the label stays inside the plot,
    where the zoom's clip would cut it off); every label on a halo of the background, so a
    data line that crosses it does not strike it out."""
    low, high = _y_range(rows, refs, ylim)
    band = TOP_BAND * (high - low) if high > low else 0.0
    ref_rows = [
        {
            "y": r.y,
            "label": r.label,
            "color": r.color,
            "place": "below" if r.y >= high - band else "above",
        }
        for r in refs
    ]
    data = {"values": ref_rows}
    layers: list[Spec] = [
        {
            "data": data,
            "mark": {"type": "rule", "strokeDash": [5, 4], "strokeWidth": 1.2},
            "encoding": {
                "y": {"field": "y", "type": "quantitative"},
                "color": {"field": "color", "type": "nominal", "scale": None},
                "tooltip": [{"field": "label", "title": "reference"}],
            },
        }
    ]
    for place, baseline, dy in (("above", "bottom", -2), ("below", "top", 3)):
        where = {"filter": f"datum.place === '{place}'"}
        text = {
            "type": "text",
            "align": "left",
            "baseline": baseline,
            "dx": 3,
            "dy": dy,
            "fontSize": 10,
        }
        position = {"y": {"field": "y", "type": "quantitative"}, "x": {"value": 0}}
        layers += [
            {  # the halo: the label drawn thick in the background's colour, under the label
                "data": data,
                "transform": [where],
                "mark": {
                    **text,
                    "fill": HALO,
                    "stroke": HALO,
                    "strokeWidth": 6,  # wide enough to close the gaps between letters
                    "strokeJoin": "round",
                },
                "encoding": {**position, "text": {"field": "label"}},
            },
            {
                "data": data,
                "transform": [where],
                "mark": text,
                "encoding": {
                    **position,
                    "text": {"field": "label"},
                    "color": {"field": "color", "type": "nominal", "scale": None},
                },
            },
        ]
    return layers


def bars(
    title: str,
    labels: Sequence[str],
    groups: dict[str, Sequence[float]],
    *,
    ylabel: str = "",
    colors: Sequence[str] | None = None,
) -> Spec:
    """Grouped bars: one group per label, one bar per entry of ``groups`` (hover: the value)."""
    if not labels or not groups:
        return empty(title, "nothing to show yet")
    rows = [
        {"label": str(label), "group": name, "value": _num(v), "i": i}
        for name, values in groups.items()
        for i, (label, v) in enumerate(zip(labels, values, strict=False))
    ]
    single = len(groups) == 1
    if single and colors is not None:
        color: Spec = {
            "field": "label",
            "type": "nominal",
            "legend": None,
            "scale": {"domain": [str(x) for x in labels], "range": list(colors)},
        }
    else:
        color = {
            "field": "group",
            "type": "nominal",
            "title": None,
            "scale": {"range": list(PALETTE)},
            "legend": None if single else {},
        }
    return {
        **_base(title),
        "data": {"values": rows},
        "mark": {"type": "bar"},
        "encoding": {
            "x": {
                "field": "label",
                "type": "nominal",
                "title": None,
                "sort": None,
                "axis": {"labelAngle": -20 if len(labels) > 6 else 0},
            },
            "xOffset": {"field": "group", "type": "nominal"},
            "y": {"field": "value", "type": "quantitative", "title": ylabel},
            "color": color,
            "tooltip": [
                {"field": "label", "title": "of"},
                {"field": "group", "title": "what"},
                {"field": "value", "format": ".4~g"},
            ],
        },
    }


def stack(
    title: str, series: Sequence[Series], *, ylabel: str = "", xlabel: str = "generation"
) -> Spec:
    """Stacked areas of shares that add up to 1 (gene frequencies)."""
    if not series or not len(series[0].y):
        return empty(title, "no generations played yet")
    names = [s.label for s in series]
    colors = [s.color or PALETTE[i % len(PALETTE)] for i, s in enumerate(series)]
    rows = []
    for s in series:
        x = list(s.x) if s.x is not None else list(range(len(s.y)))
        rows += [
            {"x": _num(a), "share": _num(b), "series": s.label}
            for a, b in zip(x, s.y, strict=False)
        ]
    return {
        **_base(title),
        "data": {"values": rows},
        "mark": {"type": "area", "opacity": 0.85},
        "encoding": {
            "x": {"field": "x", "type": "quantitative", "title": xlabel, "axis": {"format": "d"}},
            "y": {
                "field": "share",
                "type": "quantitative",
                "stack": "zero",
                "title": ylabel,
                "scale": {"domain": [0, 1]},
            },
            "color": {
                "field": "series",
                "type": "nominal",
                "title": None,
                "scale": {"domain": names, "range": colors},
            },
            "order": {"field": "series"},
            "tooltip": [
                {"field": "series"},
                {"field": "x", "title": xlabel},
                {"field": "share", "format": ".3f"},
            ],
        },
    }


def actions(title: str, matrix: np.ndarray, player_labels: Sequence[str]) -> Spec:
    """Who cooperated when: players (rows) x rounds (columns), C green, D red."""
    if matrix.size == 0:
        return empty(title)
    rows = [
        {"round": t + 1, "player": player_labels[i], "action": "C" if matrix[t, i] else "D"}
        for t in range(matrix.shape[0])
        for i in range(matrix.shape[1])
    ]
    return {
        **_base(title),
        "data": {"values": rows},
        "mark": {"type": "rect"},
        "encoding": {
            "x": {
                "field": "round",
                "type": "ordinal",
                "title": "round",
                "axis": {"labelOverlap": True, "labelAngle": 0},
            },
            "y": {"field": "player", "type": "nominal", "title": None, "sort": list(player_labels)},
            "color": {
                "field": "action",
                "type": "nominal",
                "title": None,
                "scale": {"domain": ["C", "D"], "range": ["#2ca02c", "#d62728"]},
            },
            "tooltip": [{"field": "player"}, {"field": "round"}, {"field": "action"}],
        },
    }


def strip(
    title: str,
    rows: Sequence[dict[str, Any]],
    genes: Sequence[str],
    *,
    columns: int = 64,
    subtitle: str = "",
) -> Spec:
    """A population as a strip of cells, one per agent, coloured by gene (the colours of
    :func:`stack`); ``rows`` are dicts with a ``gene`` plus anything to show on hover."""
    if not rows:
        return empty(title, "no population yet")
    cols = max(1, min(columns, len(rows)))
    values = [{**r, "col": i % cols, "row": i // cols, "agent": i} for i, r in enumerate(rows)]
    tip = [{"field": "agent"}, *({"field": k} for k in rows[0] if k not in ("col", "row"))]
    return {
        **_base(title, subtitle),
        "height": {"step": 12},
        "width": "container",
        "data": {"values": values},
        "mark": {"type": "rect", "stroke": "#ffffff", "strokeWidth": 0.5},
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "axis": None},
            "y": {"field": "row", "type": "ordinal", "axis": None},
            "color": {
                "field": "gene",
                "type": "nominal",
                "title": None,
                "scale": {
                    "domain": list(genes),
                    "range": [PALETTE[i % len(PALETTE)] for i in range(len(genes))],
                },
            },
            "tooltip": tip,
        },
    }
