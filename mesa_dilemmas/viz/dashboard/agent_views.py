"""Agent views: the agents themselves, as SolaraViz components a user can put on their own page.

Each view is a Solara component taking the model, drawn client-side by Vega-Lite
(hover any mark for its values; the ``...`` menu saves it as SVG or PNG), so it
fits Mesa's component area::

    from mesa.visualization import SolaraViz, make_plot_component
    from mesa_dilemmas.dilemmas.fishery import FisheryModel
    from mesa_dilemmas.viz.dashboard.agent_views import FisheryLake

    page = SolaraViz(FisheryModel(rng=42), components=[FisheryLake, make_plot_component("stock")])

The model is either the game (a user's page) or the dashboard's
:class:`~.runtime.DashboardModel` that holds it (this package's pages); with the
latter a view reads the game only between rounds.  Next to every chart the view
puts ``data-view`` / ``data-agents`` / ``data-round`` attributes for the browser tests.

* :func:`FisheryLake` -- the lake (its fill is the stock) with the villagers around it:
  size is wealth, colour is effort, a square is an LLM villager, a red ring means
  punished this round, a red arrow runs from punisher to punished, a faded grey mark
  starved; the shared norm and who punished whom in the caption;
* :func:`PortOfMarsSeats` -- the five seats around the port (its fill is port health):
  coins, resources, points and dirty purchases per seat, this round's accepted
  trades as arrows, the leader as a diamond, the meeting's text below;
* :func:`BinaryPopulation` -- the players grouped by strategy, coloured by their last
  action (C green, D red); for the common pool also the stock and its depletion.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

import solara

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


def _version(model: Any) -> Any:
    """Changes whenever the view must be redrawn (never in the middle of a round)."""
    if isinstance(model, DashboardModel):
        return model.token
    return (id(model), getattr(model, "time", None), getattr(model, "running", None))


def _ring(i: int, n: int, radius: float = 1.0) -> tuple[float, float]:
    angle = math.pi / 2 - 2 * math.pi * i / max(n, 1)
    return round(radius * math.cos(angle), 4), round(radius * math.sin(angle), 4)


def _centre(fill: float, label: str, color: str, area: float) -> list[Spec]:
    """Layers of a disc in the middle whose area is ``fill`` (0..1) of its full size, labelled."""
    data = {"values": [{"x": 0, "y": 0, "fill": max(0.0, min(1.0, fill)), "label": label}]}
    return [
        {"data": data, "mark": {"type": "circle", "color": color, "opacity": 0.12, "size": area},
         "encoding": XY},
        {"data": data, "mark": {"type": "circle", "color": color, "opacity": 0.55},
         "encoding": {**XY, "size": {"field": "fill", "type": "quantitative", "legend": None,
                                     "scale": {"domain": [0, 1], "range": [0, area]}},
                      "tooltip": [{"field": "label", "title": "now"}]}},
        {"data": data, "mark": {"type": "text", "fontSize": 12, "fontWeight": "bold", "color": "#1f3d5a"},
         "encoding": {**XY, "text": {"field": "label"}}},
    ]  # fmt: skip


def _arrow(a: int, b: int, n: int, **fields: Any) -> dict[str, Any]:
    """A row for an arrow from ring place ``a`` to ``b`` that stops short of both marks."""
    (x1, y1), (x2, y2) = _ring(a, n), _ring(b, n)
    return {
        "x": x1 + 0.22 * (x2 - x1), "y": y1 + 0.22 * (y2 - y1),
        "x2": x1 + 0.78 * (x2 - x1), "y2": y1 + 0.78 * (y2 - y1),
        "angle": (90 - math.degrees(math.atan2(y2 - y1, x2 - x1))) % 360, **fields,
    }  # fmt: skip


def _arrow_layers(rows: list[dict[str, Any]], color: str, tip: list[str]) -> list[Spec]:
    """A line and an arrow head per row of :func:`_arrow` (hover: the ``tip`` fields); the
    layers are there with no rows too, so a round without arrows changes only the rows (the
    chart widget then updates the drawn view instead of embedding it anew)."""
    data = {"values": rows}
    tooltip = [{"field": f} for f in tip]
    return [
        {"data": data, "mark": {"type": "rule", "color": color, "strokeWidth": 2},
         "encoding": {**XY, "x2": {"field": "x2"}, "y2": {"field": "y2"}, "tooltip": tooltip}},
        {"data": data, "mark": {"type": "point", "shape": "triangle-up", "filled": True,
                                "size": 120, "color": color},
         "encoding": {"x": {**XY["x"], "field": "x2"}, "y": {**XY["y"], "field": "y2"},
                      "angle": {"field": "angle", "type": "quantitative", "scale": None},
                      "tooltip": tooltip}},
    ]  # fmt: skip


def _tooltip(rows: list[dict[str, Any]], skip: tuple[str, ...] = ("x", "y")) -> list[Spec]:
    return [{"field": k} for k in (rows[0] if rows else {}) if k not in skip]


def _ring_spec(title: str, subtitle: str, layers: list[Spec], width: int = 380) -> Spec:
    return {
        "$schema": SCHEMA,
        "title": {"text": title, "subtitle": subtitle, "fontSize": 13},
        "width": width, "height": 330,
        "layer": layers,
        "resolve": {"scale": {"size": "independent", "color": "independent", "shape": "independent"}},
        "config": {"view": {"stroke": None}, "legend": {"orient": "right"}},
    }  # fmt: skip


@solara.component
def _Figure(kind: str, model: Any, draw: Draw, version: Any = None) -> None:
    """Draw ``draw(game)`` once per round; while a round is played keep the last drawing.

    It does not subscribe to Mesa's update counter itself: the views below are plain
    functions, which Mesa's component area wraps in a component that does, and this
    package's pages re-render them with the rest of the page (a second subscription
    would cost every round an extra render pass).  ``version`` (:func:`_version`) changes
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
        make, dependencies=[kind, "busy" if busy else _version(model)]
    )
    last.current = (spec, agents, caption, played)
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
            VegaChart.element(spec=with_token(spec, token))
        if caption:
            solara.HTML(tag="div", unsafe_innerHTML=caption, classes=["mdd-caption"])


# -- the fishery -------------------------------------------------------------


def fishery_villagers(game: Any) -> list[dict[str, Any]]:
    """One row per villager: where it sits around the lake and what the view shows of it."""
    villagers = list(game.villagers)
    language = getattr(game, "language", None)
    rows = []
    for v in villagers:
        s = v.slot
        x, y = _ring(s, len(villagers))
        alive = bool(game.alive[s])
        punished = int(game.punished[s])
        text_norm = getattr(v, "norm_text", None)
        rows.append({
            "x": x, "y": y, "villager": int(v.unique_id),
            "kind": "LLM" if language is not None and language[s] else "rule",
            "disposition": str(v.persona.disposition),
            "state": "starved" if not alive else ("punished this round" if punished else "fishing"),
            "effort": round(float(game.effort[s]), 3),
            "catch": round(float(game.harvest[s]), 2),
            "wealth": round(float(game.wealth[s]), 1),
            "punished this round": punished,
            "punishes with probability": round(float(game.punish_p[s]), 2),
            "personal norm": text_norm or f"catch at most {float(game.norm[s]):.2f}",
        })  # fmt: skip
    return rows


def fishery_chart(game: Any) -> tuple[Spec, int, str]:
    rows = fishery_villagers(game)
    stock, capacity = float(game.stock), float(game.capacity)
    punished = "datum['punished this round'] > 0"
    data = {"values": rows}
    villagers = {
        "data": data,
        "mark": {"type": "point", "filled": True},
        "encoding": {
            **XY,
            "shape": {"field": "kind", "type": "nominal", "title": None,
                      "scale": {"domain": ["rule", "LLM"], "range": ["circle", "square"]}},
            "color": {"field": "effort", "type": "quantitative", "title": "effort",
                      "scale": {"scheme": "purples", "domain": [0, 1]}},
            "size": {"field": "wealth", "type": "quantitative", "legend": None,
                     "scale": {"range": [60, 600]}},
            "opacity": {"condition": {"test": "datum.state == 'starved'", "value": 0.25}, "value": 0.95},
            "stroke": {"condition": {"test": punished, "value": PUNISHED}, "value": "#444444"},
            "strokeWidth": {"condition": {"test": punished, "value": 3}, "value": 0.6},
            "tooltip": _tooltip(rows),
        },
    }  # fmt: skip
    labels = {"data": data, "mark": {"type": "text", "dy": -17, "fontSize": 9, "color": "#888888"},
              "encoding": {**XY, "text": {"field": "villager"}}}  # fmt: skip
    lake = _centre(
        stock / capacity if capacity else 0.0, f"lake {stock:.0f} / {capacity:.0f}", "#2b7bba", 9000
    )
    row_of = {v.slot: rows[i] for i, v in enumerate(game.villagers)}
    pairs = [(row_of[a], row_of[b], a, b) for a, b in fishery_sanctions(game)]
    arrows = [
        _arrow(a, b, len(rows), sanction=f"villager {p['villager']} punished villager "
               f"{q['villager']} (who caught {q['catch']})")
        for p, q, a, b in pairs
    ]  # fmt: skip
    spec = _ring_spec(
        "The lake and its villagers",
        "size: wealth · colour: effort · square: LLM · red ring: punished · red arrow: "
        "punisher → punished · faded: starved",
        [*lake, *_arrow_layers(arrows, PUNISHED, ["sanction"]), villagers, labels],
    )
    starved = sum(r["state"] == "starved" for r in rows)
    caption = f"<b>shared norm:</b> {html.escape(str(game.shared_policy))} · starved: {starved}"
    text = sanctions_text([(p["villager"], q["villager"]) for p, q, _, _ in pairs])
    caption += f'<div data-text="sanctions" data-count="{len(pairs)}">{html.escape(text)}</div>'
    return spec, len(rows), caption


def fishery_sanctions(game: Any) -> list[tuple[int, int]]:
    """This round's sanctions as (punisher slot, punished slot); [] for a model that keeps none."""
    return [(int(a), int(b)) for a, b in getattr(game, "sanctions", [])]


def sanctions_text(pairs: list[tuple[int, int]]) -> str:
    """'who punished whom this round (3 sanctions): 3, 5 → 7; 2 → 9' from (punisher, punished) ids."""
    if not pairs:
        return "who punished whom this round: nobody punished"
    by_victim: dict[int, list[int]] = {}
    for a, b in pairs:
        by_victim.setdefault(b, []).append(a)
    parts = [
        f"{', '.join(map(str, sorted(punishers)))} → {victim}"
        for victim, punishers in sorted(by_victim.items())
    ]
    return f"who punished whom this round ({len(pairs)} sanctions): " + "; ".join(parts)


def FisheryLake(model: Any) -> Any:
    """The fishery's lake and villagers (a SolaraViz component: ``components=[FisheryLake]``)."""
    return _Figure("fishery-lake", model, fishery_chart, _version(model))


# -- Port of Mars -------------------------------------------------------------


def port_of_mars_seats(game: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one row per seat, one row per accepted trade of this round)."""
    n = len(game.players)
    leader = getattr(game, "leader", None)
    seats = []
    for p in game.players:
        x, y = _ring(p.seat, n)
        seats.append({
            "x": x, "y": y, "seat": p.seat, "role": p.role, "persona": p.label,
            "player": str(game.seats[p.seat].policy_name),
            "leader": bool(leader is not None and p.seat == leader),
            "coins": int(p.coins), "resources": int(sum(p.resources.values())),
            "points": int(p.points), "dirty bought": int(p.dirty_cards_bought),
            "coins to health (total)": int(p.health_coins_total),
            "label": f"{p.points} pts · {p.dirty_cards_bought} dirty",
            "holdings": f"{int(p.coins)} coins · {int(sum(p.resources.values()))} resources",
        })  # fmt: skip
    trades = [
        _arrow(o.sender, o.recipient, n, trade=o.public(game.roles)["text"], kind=o.kind)
        for o in getattr(game, "round_offers", [])
        if o.status == "accepted"
    ]
    return seats, trades


def port_of_mars_chart(game: Any) -> tuple[Spec, int, str]:
    seats, trades = port_of_mars_seats(game)
    health = float(game.health)
    data = {"values": seats}
    is_leader = "datum.leader"
    marks = {
        "data": data,
        "mark": {"type": "point", "filled": True, "size": 800},
        "encoding": {
            **XY,
            "shape": {"condition": {"test": is_leader, "value": "diamond"}, "value": "circle"},
            "color": {"field": "role", "type": "nominal", "legend": None, "scale": {"scheme": "set2"}},
            "stroke": {"condition": {"test": is_leader, "value": "#000000"}, "value": "#666666"},
            "strokeWidth": {"condition": {"test": is_leader, "value": 3}, "value": 0.8},
            "tooltip": _tooltip(seats, ("x", "y", "label", "holdings")),
        },
    }  # fmt: skip

    def text(field: str, dy: int, **mark: Any) -> Spec:
        return {"data": data, "mark": {"type": "text", "dy": dy, "fontSize": 9, **mark},
                "encoding": {**XY, "text": {"field": field}}}  # fmt: skip

    layers = [*_centre(health / 100.0, f"port health {health:.0f}", "#b5651d", 8000), marks,
              text("role", 0, fontSize=10, fontWeight="bold"), text("label", 24),
              text("holdings", 35, color="#888888")]  # fmt: skip
    layers += _arrow_layers(trades, "#1f77b4", ["trade", "kind"])
    spec = _ring_spec(
        "The port and its five seats",
        "points · dirty purchases and holdings under each seat; arrows: trades this round; diamond: leader",
        layers,
    )
    meeting = getattr(game, "meeting_conversation", None)
    caption = f"<b>trades this round:</b> {len(trades)}"
    if meeting:
        when = getattr(game, "meeting_health", None)
        caption += (
            " · <b>this round's planning meeting</b>"
            + (f" (held at port health {when}, after wear and events)" if when is not None else "")
            + f':<div class="mdd-pre" data-text="meeting-view">{html.escape(meeting)}</div>'
        )
    return spec, len(seats), caption


def PortOfMarsSeats(model: Any) -> Any:
    """Port of Mars's seats, trades and meeting (a SolaraViz component)."""
    return _Figure("port-of-mars-seats", model, port_of_mars_chart, _version(model))


# -- the binary games -------------------------------------------------------------


def binary_players(game: Any) -> list[dict[str, Any]]:
    """One row per player: strategy, last action and payoff so far, stacked by strategy."""
    played = game.actions  # rounds x players
    totals = game.total_payoffs()
    rows, stacked = [], {}
    for i, agent in enumerate(game.players):
        name = str(getattr(agent.policy, "name", ""))
        strategy = "LLM" if name.startswith("llm:") else name.removeprefix("strategy:")
        last = ("C" if played[-1, i] else "D") if len(played) else "not yet"
        stacked[strategy] = stacked.get(strategy, 0) + 1
        coop = round(float(played[:, i].mean()), 2) if len(played) else None
        rows.append({
            "strategy": strategy, "place": stacked[strategy], "player": i, "last action": last,
            "cooperated (share of rounds)": coop, "payoff so far": round(float(totals[i]), 2),
        })  # fmt: skip
    return rows


def binary_chart(game: Any) -> tuple[Spec, int, str]:
    rows = binary_players(game)
    players = {
        "title": "Players by strategy, coloured by last action",
        "data": {"values": rows},
        "mark": {"type": "square", "size": 300},
        "width": {"step": 70}, "height": 200,
        "encoding": {
            "x": {"field": "strategy", "type": "nominal", "title": None, "axis": {"labelAngle": 0}},
            "y": {"field": "place", "type": "ordinal", "title": None, "axis": None, "sort": "descending"},
            "color": {"field": "last action", "type": "nominal",
                      "scale": {"domain": list(ACTION_COLORS), "range": list(ACTION_COLORS.values())},
                      "legend": {"orient": "bottom"}},
            "tooltip": _tooltip(rows, ("place",)),
        },
    }  # fmt: skip
    t = game.store.round
    cooperated = sum(r["last action"] == "C" for r in rows)
    caption = f"round {t}: {cooperated} of {len(rows)} cooperated" if t else "no round played yet"
    m = getattr(game.rules, "m", None)
    if m:  # collective risk: did this round reach the threshold?
        met = "met" if cooperated >= m else "missed"
        caption += f" (threshold m = {m}: {met})" if t else f" · threshold m = {m}"
    stock = getattr(game.store, "stock", None)
    if stock is None:
        return {"$schema": SCHEMA, **players}, len(rows), caption
    level = float(stock[0, t])
    capacity = float(getattr(game.rules, "capacity", 0) or max(level, 1.0))
    pool = {
        "title": "Common pool",
        "data": {"values": [{"what": "stock", "amount": level, "capacity": capacity}]},
        "width": 60, "height": 200,
        "encoding": {"x": {"field": "what", "type": "nominal", "title": None}},
        "layer": [
            {"mark": {"type": "bar", "color": "#eeeeee", "stroke": "#999999"},
             "encoding": {"y": {"field": "capacity", "type": "quantitative", "title": "stock",
                                "scale": {"domain": [0, capacity]}}}},
            {"mark": {"type": "bar", "color": "#2b7bba"},
             "encoding": {"y": {"field": "amount", "type": "quantitative"},
                          "tooltip": [{"field": "amount"}, {"field": "capacity"}]}},
        ],
    }  # fmt: skip
    caption += f" · stock {level:.3g} of {capacity:.3g}"
    if level <= 0:
        caption += " · <b>the pool is depleted</b>"
    return {"$schema": SCHEMA, "hconcat": [players, pool]}, len(rows), caption


def BinaryPopulation(model: Any) -> Any:
    """A binary game's players by strategy and last action, and the stock (a SolaraViz component)."""
    return _Figure("binary-population", model, binary_chart, _version(model))
