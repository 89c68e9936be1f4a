"""What a Port of Mars player reads: the game's words rendered from an observation.

The rules engine hands every decision a plain-data observation (``PortOfMarsModel.observe``);
rule players read the data, LLM players read the texts this module adds to it:

``rules``
    the rules (``prompts/parts/rules.txt``), word for word the same for every player: the
    system prompt of every template;
``identity``
    who the player is: its role and specialty, its persona (``parts/personas.toml``) and what
    it is told about leadership (``parts/leadership.toml``); ``briefing`` is both, in that
    order (for templates of one's own that want them in one piece);
``situation``
    this round's state as the player sees it: port health, coins, points, resources, this
    round's prices, the accomplishments in hand, the goal, the events, the summary of last
    round carried forward and this round's meeting summary.

The bundled templates read the same information cut where players' prompts part ways, so a
provider's prompt cache serves the longest start every seat of a phase shares:

``common``
    what every player reads alike all game: the rules, and what every player with a persona
    of this kind is told (the SVO scale) -- the system prompt;
``public``
    this round as every player sees it alike (port health, events, last round's totals and
    trades, everyone's points) -- then the template's task and answer format, alike too;
``own``
    last, the player's own part: role, persona, leadership notice, meeting notes, prices,
    hand, goal, plan, coins and resources.

All are pure functions of the observation and the persona, so a template set in a scenario's
``templates_dir`` can use them or ignore them and build its own text from ``obs[...]``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from typing import Any

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.dilemmas.port_of_mars.cards import bundle_text
from mesa_dilemmas.dilemmas.port_of_mars.persona import svo_category
from mesa_dilemmas.dilemmas.port_of_mars.prompts import PARTS_DIR


@cache
def part(name: str) -> Any:
    """A shared prompt piece: ``name.txt`` as text, ``name.toml`` as a table."""
    txt = PARTS_DIR / f"{name}.txt"
    if txt.exists():
        return txt.read_text(encoding="utf-8").strip()
    return tomllib.loads((PARTS_DIR / f"{name}.toml").read_text(encoding="utf-8"))


def cap(resource: str) -> str:
    return resource.capitalize()


def persona_scale(persona: Persona | None) -> str:
    """What every player with a persona of this kind is told alike (the SVO scale), or ''."""
    if persona is None or persona.svo_angle is None:
        return ""
    return part("personas")["svo_scale"]


def persona_text(persona: Persona | None, scale: bool = True) -> str:
    """A Port of Mars persona as second-person sentences (SVO, cultural group or trait set);
    ``scale=False`` leaves out what :func:`persona_scale` tells every such player alike."""
    if persona is None:
        return ""
    texts = part("personas")
    parts: list[str] = []
    if persona.svo_angle is not None:
        if scale:
            parts.append(texts["svo_scale"])
        parts.append(
            texts["svo_own"].format(
                angle=f"{persona.svo_angle:g}", category=svo_category(persona.svo_angle)
            )
        )
    if persona.cultural_group:
        key = persona.cultural_group.strip().lower().replace(" ", "-").replace("_", "-")
        parts.append(texts["cultural"].get(key, f"Your cultural group: {persona.cultural_group}."))
    trait_set = persona.extra.get("trait_set") if persona.extra else None
    if trait_set in texts["traits"]:
        parts.append(texts["traits"][trait_set])
    elif persona.traits:
        parts.append(texts["trait_prefix"].format(traits=", ".join(persona.traits)))
    if persona.strategy_text:
        parts.append("Your strategy: " + persona.strategy_text.strip())
    return " ".join(parts)


def leadership_text(info: Mapping[str, Any], variant: str) -> str:
    """What this player is told about leadership (empty when nothing)."""
    texts = part("leadership")
    if info.get("you_are_leader"):
        return texts.get(f"{variant}_leader", "")
    if info.get("leader"):
        return texts.get(f"{variant}_other", "").format(leader=info["leader"])
    return ""


def prices_text(obs: Mapping[str, Any]) -> str:
    costs = obs["coin_costs"]
    if not costs:
        return "nothing this round"
    parts = [f"{cap(r)} at {c} coin{'s' if c != 1 else ''} a unit" for r, c in costs.items()]
    hc = obs["port_health_coin_cost"]
    parts.append(f"port health at {hc} coin{'s' if hc != 1 else ''} a point")
    return "; ".join(parts)


def buying_limits(obs: Mapping[str, Any]) -> str:
    """The resources this player cannot buy this round (it must trade for them)."""
    trade_only = obs["trade_only"]
    if trade_only:
        return "You cannot buy " + " or ".join(cap(r) for r in trade_only) + ": trade for them."
    return "You can buy every resource this round."


def rules_text(rules: Mapping[str, Any]) -> str:
    """The rules, word for word the same for every player."""
    return part("rules").format(two_events_below_minus=rules["two_events_below"] - 1, **rules)


def identity(
    obs: Mapping[str, Any],
    persona: Persona | None,
    rules: Mapping[str, Any],
    scale: bool = True,
) -> str:
    """Who this player is, all game long: role and specialty, persona, what it is told about
    leadership (this round's prices are in the :func:`situation`); ``scale=False`` leaves out
    what every player of the persona's kind is told alike (:func:`persona_scale`)."""
    out = [part("role").format(role=obs["role"], specialty=cap(obs["specialty"]))]
    text = persona_text(persona, scale)
    if text:
        out.append(text)
    lead = leadership_text(obs["leadership"], rules["leadership"])
    if lead:
        out.append(lead)
    return "\n\n".join(out)


def briefing(obs: Mapping[str, Any], persona: Persona | None, rules: Mapping[str, Any]) -> str:
    """The rules, then who this player is."""
    return f"{rules_text(rules)}\n\n{identity(obs, persona, rules)}"


def common(persona: Persona | None, rules: Mapping[str, Any]) -> str:
    """What every player of the game reads alike, all game long: the rules, then what every
    player with a persona of this kind is told (the SVO scale)."""
    scale = persona_scale(persona)
    return f"{rules_text(rules)}\n\n{scale}" if scale else rules_text(rules)


def card_line(card: Mapping[str, Any]) -> str:
    harm = f"; HARMS THE PORT: -{card['port_health_cost']} port health" if card.get("dirty") else ""
    return f"- {card['name']}: needs {bundle_text(card['cost'])}; {card['points']} points{harm}"


def events_text(obs: Mapping[str, Any]) -> str:
    events = obs.get("events") or []
    if not events:
        return "No events this round."
    return "Events this round:\n" + "\n".join(
        f"- {e['name']}: {e.get('description', '')}".rstrip(": ") for e in events
    )


def _last_round_totals(last: Mapping[str, Any], mine: int | None = None) -> list[str]:
    """Last round as every player saw it (with ``mine``, this player's port-health coins)."""
    you = "" if mine is None else f" (you: {mine})"
    trades = [t["text"] for t in last.get("trades") or []]
    return [
        f"Last round (round {last['round']}): the players put {last['port_health_coins_total']} "
        f"coins into port health{you}; completed accomplishments that harm the port took "
        f"{last['port_health_lost_to_accomplishments']} port health; port health ended at "
        f"{last['port_health_at_end']}.",
        "Accepted trades: " + ("; ".join(trades) if trades else "none") + ".",
    ]


def _last_round_notes(obs: Mapping[str, Any], last: Mapping[str, Any]) -> list[str]:
    """This player's notes from last round's meeting (none when there were none)."""
    summary = (last.get("meeting_summaries") or {}).get(obs["role"])
    return [f"Your notes from last round's meeting: {summary}"] if summary else []


def _coins_last_round(obs: Mapping[str, Any]) -> int:
    mine = obs.get("port_health_coins_last_round")
    return mine if mine is not None else 0


def last_round_text(obs: Mapping[str, Any]) -> str:
    """The summary of last round carried forward (never the meeting transcript)."""
    last = obs.get("last_round")
    if not last:
        return ""
    lines = _last_round_totals(last, _coins_last_round(obs)) + _last_round_notes(obs, last)
    return "\n".join(lines)


def _round_head(obs: Mapping[str, Any]) -> list[str]:
    """The round, port health, the events and whether trading is open."""
    lines = [f"Round {obs['round']}. Port health is {obs['port_health']}.", events_text(obs)]
    if not obs.get("markets_open", True):
        lines.append("Trading is closed this round.")
    return lines


def public_round(obs: Mapping[str, Any]) -> str:
    """This round as every player sees it alike: port health, the events, what the round's
    rules change, last round's totals and trades, the points of every role."""
    points = ", ".join(f"{r} {n}" for r, n in obs["points_by_role"].items())
    lines = _round_head(obs)
    last = obs.get("last_round")
    if last:
        lines += _last_round_totals(last)
    lines.append(f"Points so far: {points}.")
    return "\n".join(lines)


def own_round(obs: Mapping[str, Any], persona: Persona | None, rules: Mapping[str, Any]) -> str:
    """This player's own part: who it is (without what :func:`common` tells every player),
    then its own view of the round (its meeting notes, what it put into port health last
    round, its prices, hand, goal, plan, coins and resources)."""
    lines = [identity(obs, persona, rules, scale=False), ""]
    if obs.get("must_spend_all_on_port_health"):
        lines.append("This round you must put all your coins into port health.")
    last = obs.get("last_round")
    if last:
        lines.append(f"Last round you put {_coins_last_round(obs)} coins into port health.")
        lines += _last_round_notes(obs, last)
    if obs.get("meeting_summary"):
        lines.append(f"Your notes from this round's meeting: {obs['meeting_summary']}")
    lines.append(f"This round you can buy: {prices_text(obs)}. {buying_limits(obs)}")
    lines += _holdings(obs)
    return "\n".join(lines)


def _holdings(obs: Mapping[str, Any]) -> list[str]:
    """The lines the round's phases change: cards in hand, goal, plan, coins, resources."""
    cards = obs["accomplishments"]
    lines = [
        "Your accomplishments in hand:" if cards else "You hold no accomplishments.",
        *(card_line(c) for c in cards),
    ]
    if obs.get("goal"):
        missing = bundle_text(obs.get("goal_missing") or {})
        lines.append(f"Your goal: {obs['goal']} (still missing: {missing}).")
    if obs.get("health_plan") is not None:
        lines.append(f"Your plan: {obs['health_plan']} coins to port health this round.")
    lines += [
        f"You have {obs['coins']} coins and {obs['points']} points.",
        f"Your resources: {bundle_text(obs['resources'])}.",
    ]
    if obs.get("audit"):
        held = "; ".join(f"{r}: {bundle_text(v['resources'])}" for r, v in obs["audit"].items())
        lines.append(f"Everyone's resources (audit): {held}.")
    return lines


def situation(obs: Mapping[str, Any]) -> str:
    """This round's state as the player sees it: first what stays the same all round (port
    health, the events, last round, the meeting's notes, this round's prices), then what the
    round's phases change (points, cards, goal, plan, coins, resources) -- so a prompt later in
    the round starts as the player's earlier ones did (a provider's prompt cache)."""
    points = ", ".join(f"{r} {n}" for r, n in obs["points_by_role"].items())
    lines = _round_head(obs)
    if obs.get("must_spend_all_on_port_health"):
        lines.append("This round you must put all your coins into port health.")
    last = last_round_text(obs)
    if last:
        lines.append(last)
    if obs.get("meeting_summary"):
        lines.append(f"Your notes from this round's meeting: {obs['meeting_summary']}")
    lines += [
        f"This round you can buy: {prices_text(obs)}. {buying_limits(obs)}",
        f"Points so far: {points}.",
        *_holdings(obs),
    ]
    return "\n".join(lines)


def offer_text(offer: Mapping[str, Any]) -> str:
    return (
        f"The {offer['from']} offers you {bundle_text(offer['give'])} "
        f"and asks you for {bundle_text(offer['receive'])} in return."
    )


def meeting_brief(obs: Mapping[str, Any], personas: Mapping[str, str]) -> str:
    """What the meeting writer is shown: public state, roles and personalities, earlier
    summaries -- never the players' hands or needs."""
    lines = [
        f"Round {obs['round']}. Port health is {obs['port_health']}; wear and tear takes "
        f"{obs['wear_per_round']} at the start of every round. "
        f"Each player has up to {obs['coins_per_round']} coins this round.",
        events_text(obs),
        "The players:",
    ]
    for p in obs["players"]:
        text = personas.get(p["role"]) or "no stated personality"
        lines.append(
            f"- {p['role']} (specialty {cap(p['specialty'])}, {p['points']} points): {text}"
        )
    lead = obs.get("leadership") or {}
    if lead.get("leader"):
        lines.append(f"Leadership: the {lead['leader']} leads the group ({lead['variant']}).")
    last = obs.get("last_round")
    if last:
        lines.append(
            f"Last round the players put {last['port_health_coins_total']} coins into port "
            f"health and port health ended at {last['port_health_at_end']}."
        )
        for role, summary in (last.get("meeting_summaries") or {}).items():
            lines.append(f"- {role}'s notes from last meeting: {summary}")
    return "\n".join(lines)


def short_persona(persona: Persona | None) -> str:
    """A persona in one short clause, for the meeting writer's list of players."""
    if persona is None:
        return ""
    if persona.svo_angle is not None:
        return f"SVO angle {persona.svo_angle:g} degrees ({svo_category(persona.svo_angle)})"
    texts = part("personas")
    if persona.cultural_group:
        key = persona.cultural_group.strip().lower().replace(" ", "-").replace("_", "-")
        return texts["cultural"].get(key, persona.cultural_group)
    trait_set = persona.extra.get("trait_set") if persona.extra else None
    if trait_set in texts["traits"]:
        return texts["traits"][trait_set]
    if persona.traits:
        return ", ".join(persona.traits)
    return ""
