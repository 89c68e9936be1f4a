"""The C/D games' agent view: the players grouped by strategy, coloured by their last action
(C green, D red); for a game with a stock also the stock and its depletion.
"""

from __future__ import annotations

from typing import Any

from mesa_dilemmas.viz.dashboard.agent_views import (
    ACTION_COLORS,
    Figure,
    tooltip,
    view_version,
)
from mesa_dilemmas.viz.dashboard.vega import SCHEMA, Spec


def binary_players(game: Any) -> list[dict[str, Any]]:
    """One row per player: strategy, last action and payoff so far, stacked by strategy."""
    played = game.actions  # rounds x players
    totals = game.total_payoffs()
    rows, stacked = [], {}
    for i, agent in enumerate(game.seats):
        name = str(getattr(agent.policy, "name", ""))
        strategy = "LLM" if name.startswith("llm:") else name.removeprefix("strategy:")
        last = ("C" if played[-1, i] else "D") if len(played) else "not yet"
        stacked[strategy] = stacked.get(strategy, 0) + 1
        coop = round(float(played[:, i].mean()), 2) if len(played) else None
        rows.append(
            {
                "strategy": strategy,
                "place": stacked[strategy],
                "player": i,
                "last action": last,
                "cooperated (share of rounds)": coop,
                "payoff so far": round(float(totals[i]), 2),
            }
        )
    return rows


def binary_chart(game: Any) -> tuple[Spec, int, str]:
    rows = binary_players(game)
    players = {
        "title": "Players by strategy, coloured by last action",
        "data": {"values": rows},
        "mark": {"type": "square", "size": 300},
        "width": {"step": 70},
        "height": 200,
        "encoding": {
            "x": {"field": "strategy", "type": "nominal", "title": None, "axis": {"labelAngle": 0}},
            "y": {
                "field": "place",
                "type": "ordinal",
                "title": None,
                "axis": None,
                "sort": "descending",
            },
            "color": {
                "field": "last action",
                "type": "nominal",
                "scale": {"domain": list(ACTION_COLORS), "range": list(ACTION_COLORS.values())},
                "legend": {"orient": "bottom"},
            },
            "tooltip": tooltip(rows, ("place",)),
        },
    }
    t = game.store.round
    cooperated = sum(r["last action"] == "C" for r in rows)
    caption = f"round {t}: {cooperated} of {len(rows)} cooperated" if t else "no round played yet"
    m = getattr(game.rules, "m", None)
    if m:  # a threshold game: did this round reach the threshold?
        met = "met" if cooperated >= m else "missed"
        caption += f" (threshold m = {m}: {met})" if t else f" · threshold m = {m}"
    stock = getattr(game.store, "stock", None)
    if stock is None:
        return {"$schema": SCHEMA, **players}, len(rows), caption
    level = float(stock[0, t])
    capacity = float(getattr(game.rules, "capacity", 0) or max(level, 1.0))
    pool = {
        "title": "Shared stock",
        "data": {"values": [{"what": "stock", "amount": level, "capacity": capacity}]},
        "width": 60,
        "height": 200,
        "encoding": {"x": {"field": "what", "type": "nominal", "title": None}},
        "layer": [
            {
                "mark": {"type": "bar", "color": "#eeeeee", "stroke": "#999999"},
                "encoding": {
                    "y": {
                        "field": "capacity",
                        "type": "quantitative",
                        "title": "stock",
                        "scale": {"domain": [0, capacity]},
                    }
                },
            },
            {
                "mark": {"type": "bar", "color": "#2b7bba"},
                "encoding": {
                    "y": {"field": "amount", "type": "quantitative"},
                    "tooltip": [{"field": "amount"}, {"field": "capacity"}],
                },
            },
        ],
    }
    caption += f" · stock {level:.3g} of {capacity:.3g}"
    if level <= 0:
        caption += " · <b>the pool is depleted</b>"
    return {"$schema": SCHEMA, "hconcat": [players, pool]}, len(rows), caption


def BinaryPopulation(model: Any) -> Any:
    """A binary game's players by strategy and last action, and the stock (a SolaraViz component)."""
    return Figure("binary-population", model, binary_chart, view_version(model))
