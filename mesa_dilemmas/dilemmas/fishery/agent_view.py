"""The fishery's agent view: the lake (its fill is the stock) with the villagers around it.

Size is wealth, colour is effort, a square is an LLM villager, a red ring means punished
this round, a red arrow runs from punisher to punished, a faded grey mark starved; the shared
norm and who punished whom in the caption.
"""

from __future__ import annotations

import html
import re
from typing import Any

from mesa_dilemmas.dilemmas.fishery.norms import cap_sentence
from mesa_dilemmas.viz.dashboard.agent_views import (
    PUNISHED,
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

#: the game's canonical cap sentence ("... at most 4.06 fish per day."), its number a group
_CAP_SENTENCE = re.compile(
    re.escape(cap_sentence(0.0)).replace(re.escape("0.00"), r"(\d+(?:\.\d+)?)")
)


def policy_words(text: str) -> str:
    """A shared policy as the page shows it: the game's own cap sentence counts in rounds, as
    the page does ("at most 4.06 fish per round"; the game says "per day", its prompts' words
    for a round); a policy an LLM wrote is shown as written."""
    match = _CAP_SENTENCE.fullmatch(str(text).strip())
    if match is None:
        return str(text)
    return cap_sentence(float(match.group(1))).replace(" per day", " per round")


def fishery_villagers(game: Any) -> list[dict[str, Any]]:
    """One row per villager: where it sits around the lake and what the view shows of it."""
    villagers = list(game.villagers)
    rows = []
    for v in villagers:
        x, y = ring(v.slot, len(villagers))
        alive = bool(v.alive)
        punished = int(v.punished)
        text_norm = getattr(v, "norm_text", None)
        rows.append(
            {
                "x": x,
                "y": y,
                "villager": int(v.unique_id),
                "kind": "LLM" if v.language else "rule",
                "disposition": str(v.persona.disposition),
                "state": "starved"
                if not alive
                else ("punished this round" if punished else "fishing"),
                "effort": round(float(v.effort), 3),
                "catch": round(float(v.harvest), 2),
                "wealth": round(float(v.wealth), 1),
                "punished this round": punished,
                "punishes with probability": round(float(v.punishing), 2),
                "personal norm": text_norm or f"catch at most {float(v.personal_norm):.2f}",
            }
        )
    return rows


def fishery_chart(game: Any) -> tuple[Spec, int, str]:
    rows = fishery_villagers(game)
    stock, capacity = float(game.stock), float(game.p.capacity)
    punished = "datum['punished this round'] > 0"
    data = {"values": rows}
    villagers = {
        "data": data,
        "mark": {"type": "point", "filled": True},
        "encoding": {
            **XY,
            "shape": {
                "field": "kind",
                "type": "nominal",
                "title": None,
                "scale": {"domain": ["rule", "LLM"], "range": ["circle", "square"]},
            },
            "color": {
                "field": "effort",
                "type": "quantitative",
                "title": "effort",
                "scale": {"scheme": "purples", "domain": [0, 1]},
            },
            "size": {
                "field": "wealth",
                "type": "quantitative",
                "legend": None,
                "scale": {"range": [60, 600]},
            },
            "opacity": {
                "condition": {"test": "datum.state == 'starved'", "value": 0.25},
                "value": 0.95,
            },
            "stroke": {"condition": {"test": punished, "value": PUNISHED}, "value": "#444444"},
            "strokeWidth": {"condition": {"test": punished, "value": 3}, "value": 0.6},
            "tooltip": tooltip(rows),
        },
    }
    labels = {
        "data": data,
        "mark": {"type": "text", "dy": -17, "fontSize": 9, "color": "#666666"},
        "encoding": {**XY, "text": {"field": "villager"}},
    }
    lake = centre(
        stock / capacity if capacity else 0.0, f"lake {stock:.0f} / {capacity:.0f}", "#2b7bba", 9000
    )
    row_of = {v.slot: rows[i] for i, v in enumerate(game.villagers)}
    pairs = [(row_of[a], row_of[b], a, b) for a, b in fishery_sanctions(game)]
    arrows = [
        arrow(
            a,
            b,
            len(rows),
            sanction=f"villager {p['villager']} punished villager "
            f"{q['villager']} (who caught {q['catch']})",
        )
        for p, q, a, b in pairs
    ]
    spec = ring_spec(
        "The lake and its villagers",
        "size: wealth · colour: effort · square: LLM · red ring: punished · red arrow: "
        "punisher → punished · faded: starved",
        [*lake, *arrow_layers(arrows, PUNISHED, ["sanction"]), villagers, labels],
    )
    starved = sum(r["state"] == "starved" for r in rows)
    caption = (
        f"<b>shared norm:</b> {html.escape(policy_words(game.shared_policy))} · starved: {starved}"
    )
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
    return Figure("fishery-lake", model, fishery_chart, view_version(model))
