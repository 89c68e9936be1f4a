"""Port of Mars's agent view: the five seats around the port (its fill is port health).

Coins, resources, points and dirty purchases per seat, this round's accepted trades as
arrows, the leader as a diamond, the meeting's text below.
"""

from __future__ import annotations

import html
from typing import Any

from mesa_dilemmas.viz.dashboard.agent_views import (
    XY,
    Figure,
    arrow,
    arrow_layers,
    centre,
    ring,
    ring_spec,
    tooltip,
    view_version,
)
from mesa_dilemmas.viz.dashboard.vega import Spec


def port_of_mars_seats(game: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one row per seat, one row per accepted trade of this round)."""
    n = len(game.seats)
    leader = getattr(game, "leader", None)
    seats = []
    for p in game.seats:
        x, y = ring(p.seat, n)
        seats.append(
            {
                "x": x,
                "y": y,
                "seat": p.seat,
                "role": p.role,
                "persona": p.label,
                "player": str(p.policy_name),
                "leader": bool(leader is not None and p.seat == leader),
                "coins": int(p.coins),
                "resources": int(sum(p.resources.values())),
                "points": int(p.points),
                "dirty bought": int(p.dirty_cards_bought),
                "coins to health (total)": int(p.health_coins_total),
                "label": f"{p.points} pts · {p.dirty_cards_bought} dirty",
                "holdings": f"{int(p.coins)} coins · {int(sum(p.resources.values()))} resources",
            }
        )
    trades = [
        arrow(o.sender, o.recipient, n, trade=o.public(game.roles)["text"], kind=o.kind)
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
        "mark": {"type": "point", "filled": True, "size": 800, "opacity": 1},
        "encoding": {
            **XY,
            "shape": {"condition": {"test": is_leader, "value": "diamond"}, "value": "circle"},
            "color": {
                "field": "role",
                "type": "nominal",
                "legend": None,
                "scale": {"scheme": "set2"},
            },
            "stroke": {"condition": {"test": is_leader, "value": "#000000"}, "value": "#666666"},
            "strokeWidth": {"condition": {"test": is_leader, "value": 3}, "value": 0.8},
            "tooltip": tooltip(seats, ("x", "y", "label", "holdings")),
        },
    }

    def text(field: str, dy: int, **mark: Any) -> Spec:
        return {
            "data": data,
            "mark": {"type": "text", "dy": dy, "fontSize": 9, **mark},
            "encoding": {**XY, "text": {"field": field}},
        }

    # the role's name above its seat's disc (a long name drawn on the disc ran over its edge,
    # unreadable in the dark theme)
    layers = [
        *centre(health / 100.0, f"port health {health:.0f}", "#b5651d", 8000),
        marks,
        text("role", -22, fontSize=10, fontWeight="bold"),
        text("label", 24),
        text("holdings", 35, color="#666666"),
    ]
    layers += arrow_layers(trades, "#1f77b4", ["trade", "kind"])
    spec = ring_spec(
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
            + f':<div class="mdd-pre mdd-whole" data-text="meeting-view">{html.escape(meeting)}</div>'
        )
    return spec, len(seats), caption


def PortOfMarsSeats(model: Any) -> Any:
    """Port of Mars's seats, trades and meeting (a SolaraViz component)."""
    return Figure("port-of-mars-seats", model, port_of_mars_chart, view_version(model))
