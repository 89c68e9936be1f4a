"""Agent views: the agents themselves, as SolaraViz components a user can put on their own page.

This module holds what every game's view shares -- the ring layout (agents on a circle, the
common resource in the middle), arrows between agents, tooltips, and :func:`Figure`, which
draws a view once per round. Each game's own view lives in its package
(``dilemmas/<game>/agent_view.py``) and is a Solara component taking the model, drawn
client-side by Vega-Lite (hover any mark for its values; the ``...`` menu saves it as SVG or
PNG), so it fits Mesa's component area::

    from mesa.visualization import SolaraViz, make_plot_component
    page = SolaraViz(MyModel(rng=42), components=[MyView, make_plot_component("stock")])

The model is either the game (a user's page) or the dashboard's
:class:`~.runtime.DashboardModel` that holds it (this package's pages); with the
latter a view reads the game only between rounds.  Next to every chart the view
puts ``data-view`` / ``data-agents`` / ``data-round`` attributes for the browser tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import solara

from mesa_dilemmas.viz.dashboard.components import PageModel, chart_filename
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel
from mesa_dilemmas.viz.dashboard.vega import SCHEMA, Spec
from mesa_dilemmas.viz.dashboard.vega_widget import VegaChart, with_token

#: the colours of the two actions everywhere on the dashboard (strategies never use them)
ACTION_COLORS = {"C": "#2ca02c", "D": "#d62728", "not yet": "#bbbbbb"}
PUNISHED = "#d62728"
#: both axes of the ring views (agents on the unit circle, the common resource in the middle)
RING = {"domain": [-1.6, 1.6], "nice": False, "zero": False}
XY = {
    "x": {"field": "x", "type": "quantitative", "scale": RING, "axis": None},
    "y": {"field": "y", "type": "quantitative", "scale": RING, "axis": None},
}
#: what a view draws: game -> (Vega-Lite spec, number of agents, caption HTML)
Draw = Callable[[Any], tuple[Spec, int, str]]


def game_of(model: Any) -> Any:
    """The game a view shows: the model itself, or the game a dashboard model holds."""
    return model.game if isinstance(model, DashboardModel) else model


def view_version(model: Any) -> Any:
    """Changes whenever the view must be redrawn (never in the middle of a round)."""
    if isinstance(model, DashboardModel):
        return model.token
    return (id(model), getattr(model, "time", None), getattr(model, "running", None))


def ring(i: int, n: int, radius: float = 1.0) -> tuple[float, float]:
    angle = math.pi / 2 - 2 * math.pi * i / max(n, 1)
    return round(radius * math.cos(angle), 4), round(radius * math.sin(angle), 4)


def centre(fill: float, label: str, color: str, area: float) -> list[Spec]:
    """Layers of a disc in the middle whose area is ``fill`` (0..1) of its full size, labelled."""
    data = {"values": [{"x": 0, "y": 0, "fill": max(0.0, min(1.0, fill)), "label": label}]}
    return [
        {
            "data": data,
            "mark": {"type": "circle", "color": color, "opacity": 0.12, "size": area},
            "encoding": XY,
        },
        {
            "data": data,
            "mark": {"type": "circle", "color": color, "opacity": 0.55},
            "encoding": {
                **XY,
                "size": {
                    "field": "fill",
                    "type": "quantitative",
                    "legend": None,
                    "scale": {"domain": [0, 1], "range": [0, area]},
                },
                "tooltip": [{"field": "label", "title": "now"}],
            },
        },
        {
            "data": data,
            "mark": {"type": "text", "fontSize": 12, "fontWeight": "bold", "color": "#1f3d5a"},
            "encoding": {**XY, "text": {"field": "label"}},
        },
    ]


def arrow(a: int, b: int, n: int, **fields: Any) -> dict[str, Any]:
    """A row for an arrow from ring place ``a`` to ``b`` that stops short of both marks."""
    (x1, y1), (x2, y2) = ring(a, n), ring(b, n)
    return {
        "x": x1 + 0.22 * (x2 - x1),
        "y": y1 + 0.22 * (y2 - y1),
        "x2": x1 + 0.78 * (x2 - x1),
        "y2": y1 + 0.78 * (y2 - y1),
        "angle": (90 - math.degrees(math.atan2(y2 - y1, x2 - x1))) % 360,
        **fields,
    }


def arrow_layers(rows: list[dict[str, Any]], color: str, tip: list[str]) -> list[Spec]:
    """A line and an arrow head per row of :func:`_arrow` (hover: the ``tip`` fields); the
    layers are there with no rows too, so a round without arrows changes only the rows (the
    chart widget then updates the drawn view instead of embedding it anew)."""
    data = {"values": rows}
    tooltip = [{"field": f} for f in tip]
    return [
        {
            "data": data,
            "mark": {"type": "rule", "color": color, "strokeWidth": 2},
            "encoding": {**XY, "x2": {"field": "x2"}, "y2": {"field": "y2"}, "tooltip": tooltip},
        },
        {
            "data": data,
            "mark": {
                "type": "point",
                "shape": "triangle-up",
                "filled": True,
                "size": 120,
                "color": color,
            },
            "encoding": {
                "x": {**XY["x"], "field": "x2"},
                "y": {**XY["y"], "field": "y2"},
                "angle": {"field": "angle", "type": "quantitative", "scale": None},
                "tooltip": tooltip,
            },
        },
    ]


def tooltip(rows: list[dict[str, Any]], skip: tuple[str, ...] = ("x", "y")) -> list[Spec]:
    return [{"field": k} for k in (rows[0] if rows else {}) if k not in skip]


#: the widest a subtitle line of a ring view may be, in characters (about 340 px at its 11 px
#: font: within the view's width, so the view fits half of a 900 px page, the compare page's
#: two lakes side by side)
SUBTITLE_CHARS = 58


def wrap(text: str, chars: int = SUBTITLE_CHARS, sep: str = " · ") -> list[str]:
    """``text`` as lines of at most ``chars`` characters, broken at ``sep`` (then at spaces)."""
    lines: list[str] = []
    for part in text.split(sep):
        if lines and len(lines[-1]) + len(sep) + len(part) <= chars:
            lines[-1] += sep + part
            continue
        words, line = part.split(" "), ""
        for word in words:
            if line and len(line) + 1 + len(word) > chars:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return lines


def ring_spec(title: str, subtitle: str, layers: list[Spec], width: int = 340) -> Spec:
    """A ring view: its subtitle in lines no wider than the view and its legends below it, so
    the whole drawing is about ``width`` + 20 px wide (it fits half of a 900 px page)."""
    return {
        "$schema": SCHEMA,
        "title": {"text": title, "subtitle": wrap(subtitle), "fontSize": 13},
        "width": width,
        "height": 300,
        "layer": layers,
        "resolve": {
            "scale": {"size": "independent", "color": "independent", "shape": "independent"}
        },
        "config": {
            "view": {"stroke": None},
            "legend": {"orient": "bottom", "direction": "horizontal"},
        },
    }


@solara.component
def Figure(kind: str, model: Any, draw: Draw, version: Any = None) -> None:
    """Draw ``draw(game)`` once per round; while a round is played keep the last drawing.

    It does not subscribe to Mesa's update counter itself: the views below are plain
    functions, which Mesa's component area wraps in a component that does, and this
    package's pages re-render them with the rest of the page (a second subscription
    would cost every round an extra render pass).  ``version`` (:func:`view_version`) changes
    after every round, which is what makes it re-render."""
    game = game_of(model)
    busy = isinstance(model, DashboardModel) and model.busy
    last = solara.use_ref((None, 0, "", -1))

    def make() -> tuple[Spec | None, int, str, int]:
        if busy or game is None:
            return last.current
        spec, agents, caption = draw(game)
        return spec, agents, caption, int(getattr(game, "round", getattr(game, "time", 0)))

    spec, agents, caption, played = solara.use_memo(
        make, dependencies=[kind, "busy" if busy else view_version(model)]
    )
    last.current = (spec, agents, caption, played)
    # the name it downloads under: the page's game and seed, and on the compare page the setting
    page_model = solara.use_context(PageModel)
    sides = getattr(page_model, "sides", {})
    side = next((name for name, m in sides.items() if m is model), "")
    filename = chart_filename(page_model if side else model, kind, side)
    with solara.Div(
        classes=["mdd-agent-view"],
        attributes={
            "data-view": kind,
            "data-agents": str(agents),
            "data-round": str(played),
            **(
                {"data-token": model.token}
                if isinstance(model, DashboardModel) and not busy
                else {}
            ),
        },
    ):
        if spec is None:
            solara.Text("nothing to show (the game could not be built)")
        else:
            token = model.token if isinstance(model, DashboardModel) else str(played)
            VegaChart.element(spec=with_token(spec, token, filename))
        if caption:
            solara.HTML(tag="div", unsafe_innerHTML=caption, classes=["mdd-caption"])
