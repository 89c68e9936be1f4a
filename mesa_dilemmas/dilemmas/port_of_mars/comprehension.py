"""Port of Mars's comprehension battery: questions about its rules at random states, each answer
computed by :class:`~.model.PortOfMarsModel` itself at that state.

Every item builds a model (the roles seated as the question needs, no meeting), puts the state
in place (port health, coins, resources, this round's events resolved by the game's own event
resolvers) and reads the answer off the model's own code: its prices (``coin_costs``,
``health_cost``), a player's ``invest`` and ``purchase``, the budget spec an investment is
checked against, ``events_count``, the round's phases (wear and tear, the end-of-round
settlement) and the accomplishment cards of ``data/rules.json``.  The framing is the rules text
every LLM player reads as its system prompt (``prompts/parts/rules.txt``); a question adds the
role, the prices, the cards and the events in the words the game's prompts use.

Entry point: ``mesa_dilemmas.comprehension`` -> ``port_of_mars`` (see
:mod:`mesa_dilemmas.dilemmas.comprehension`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from mesa_dilemmas.agents.decisions import InvalidAnswer
from mesa_dilemmas.dilemmas.comprehension import (
    Item,
    Maker,
    Skill,
    choice_item,
    collect,
    number_item,
    yes_no,
)
from mesa_dilemmas.dilemmas.port_of_mars.cards import (
    RESOURCES,
    ROLES,
    accomplishment_cards,
    bundle_text,
    event_cards,
    resource_name,
)

GAME = "port_of_mars"

SKILLS: tuple[Skill, ...] = (
    Skill("investment_cost", "the coins a purchase of resources and port health costs a role"),
    Skill("can_buy", "whether a role can buy a resource with coins this round"),
    Skill("max_units", "the most units of a resource a role's coins buy"),
    Skill("affordable", "whether one's resources complete an accomplishment card"),
    Skill("accomplishment_points", "the points two completed accomplishments earn"),
    Skill("events_count", "how many events are drawn at a port health"),
    Skill("upkeep", "port health after the next round's wear and tear"),
    Skill("end_of_round", "port health after the round's investments and dirty accomplishments"),
    Skill("event_effect", "what an event does to port health or to one's coins"),
    Skill("collapse", "whether the port is lost at the start of the next round"),
)

#: events that change what a role may buy, or the price of port health
PRICE_EVENTS = ("difficultConditions", "interdisciplinary", "stymied")
HEALTH_EVENTS = ("cropFailure", "hullBreach", "sandstorm", "solarFlare")


def _model(rng: np.random.Generator, role: str | None = None) -> Any:
    """A five-seat game without a meeting; ``role`` sits at seat 0."""
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

    roles = list(ROLES)
    if role is not None:
        roles.remove(role)
        roles.insert(0, role)
    return PortOfMarsModel(rng=int(rng.integers(2**31)), meeting=False, roles=roles)


@cache
def _rules() -> str:
    from mesa_dilemmas.dilemmas.port_of_mars import text

    return text.rules_text(_model(np.random.default_rng(0)).rules_numbers())


def framing() -> dict[str, str]:
    """The fields of the game's system text (``{obs[common]}``: the rules every LLM player
    reads first, the game's own text and numbers, without a persona)."""
    return {"common": _rules()}


def _role(rng: np.random.Generator) -> str:
    return str(rng.choice(ROLES))


def _event(model: Any, eid: str) -> Any:
    from mesa_dilemmas.dilemmas.port_of_mars.events import resolve_event

    card = event_cards()[eid]
    resolve_event(model, card)
    return card


def _event_line(card: Any) -> str:
    return f'This round\'s event is "{card.display_name}": {card.description}'


def _normal_prices(model: Any, seat: int) -> str:
    """A role's usual prices in the game's words (before this round's events)."""
    spec = model.role_spec(seat)
    parts = [f"{resource_name(r)} at {c} coins a unit" for r, c in spec.costs.items() if c]
    cannot = " or ".join(resource_name(r) for r in spec.trade_only)
    return (
        f"You are the {spec.name} (specialty: {resource_name(spec.specialty)}). You normally buy "
        f"{'; '.join(parts)}, and port health at 1 coin a point; you cannot buy {cannot}."
    )


def _price_round(rng: np.random.Generator) -> tuple[Any, str, str]:
    """A model at seat 0's role with no event or one price event resolved, and its words."""
    m = _model(rng, _role(rng))
    eid = str(rng.choice([*PRICE_EVENTS, "", ""]))
    line = _event_line(_event(m, eid)) if eid else "No event changes prices this round."
    return m, eid, f"{_normal_prices(m, 0)} {line}"


def _state(**values: Any) -> dict[str, Any]:
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in values.items()}


# -- the skills ------------------------------------------------------------------------------


def investment_cost(rng: np.random.Generator) -> Item:
    m, eid, words = _price_round(rng)
    costs = {"port_health": m.health_cost(), **m.coin_costs(0)}
    buyable = [r for r in RESOURCES if r in costs]
    picks = rng.choice(buyable, size=min(len(buyable), int(rng.integers(1, 3))), replace=False)
    bundle = {str(r): int(rng.integers(1, 4)) for r in picks}
    health = int(rng.integers(0, 6))
    player = m.player(0)
    player.coins = 100
    player.invest({**bundle, "port_health": health}, costs)
    spent = 100 - player.coins
    q = (
        f"{words} How many coins does it cost you to buy {bundle_text(bundle)} and "
        f"{health} point{'s' if health != 1 else ''} of port health this round?"
    )
    return number_item(
        GAME,
        "investment_cost",
        q,
        spent,
        low=0,
        high=100,
        tolerance=0,
        integer=True,
        framing=framing(),
        state=_state(role=player.role, event=eid, bundle=bundle, health=health),
    )


def can_buy(rng: np.random.Generator) -> Item:
    m, eid, words = _price_round(rng)
    resource = str(rng.choice(RESOURCES))
    q = f"{words} Can you buy {resource_name(resource)} with coins this round?"
    return choice_item(
        GAME,
        "can_buy",
        q,
        yes_no(resource in m.coin_costs(0)),
        framing=framing(),
        state=_state(role=m.player(0).role, event=eid, resource=resource),
    )


def max_units(rng: np.random.Generator) -> Item:
    from mesa_dilemmas.dilemmas.port_of_mars.specs import budget_spec

    m, eid, words = _price_round(rng)
    coins = int(rng.integers(3, 17))
    costs = {"port_health": m.health_cost(), **m.coin_costs(0)}
    resource = str(rng.choice([r for r in RESOURCES if r in costs]))
    spec = budget_spec(costs, coins)
    units = 0  # the largest purchase the game's budget check lets through
    while True:
        try:
            spec.validate({resource: units + 1})
        except InvalidAnswer:
            break
        units += 1
    q = (
        f"{words} You have {coins} coins this round. If you spend them on "
        f"{resource_name(resource)} alone, how many units can you buy at most?"
    )
    return number_item(
        GAME,
        "max_units",
        q,
        units,
        low=0,
        high=coins,
        tolerance=0,
        integer=True,
        framing=framing(),
        state=_state(role=m.player(0).role, event=eid, coins=coins, resource=resource),
    )


def _card(rng: np.random.Generator, role: str) -> Any:
    """One of the role's cards that costs some resources."""
    cards = [c for c in accomplishment_cards()[role] if c.cost]
    return cards[int(rng.integers(len(cards)))]


def _card_words(card: Any) -> str:
    from mesa_dilemmas.dilemmas.port_of_mars.text import card_line

    return card_line(card.public()).removeprefix("- ")


def affordable(rng: np.random.Generator) -> Item:
    role = _role(rng)
    card = _card(rng, role)
    held = dict.fromkeys(RESOURCES, 0)
    short = bool(rng.random() < 0.5)  # about half the hands miss something
    for r, n in card.cost:
        held[r] = int(n + rng.integers(0, 2))
    if short:
        r = str(rng.choice([r for r, _ in card.cost]))
        held[r] = int(rng.integers(0, card.cost_dict[r]))
    for r in RESOURCES:  # and some of what the card does not need
        if r not in card.cost_dict and rng.random() < 0.4:
            held[r] = int(rng.integers(1, 3))
    q = (
        f"You are the {role}. You hold {bundle_text(held)}. One accomplishment in your hand is "
        f"{_card_words(card)}. Can you complete it now, with what you hold?"
    )
    return choice_item(
        GAME,
        "affordable",
        q,
        yes_no(card.affordable(held)),
        framing=framing(),
        state=_state(role=role, card=card.name, held=held),
    )


def accomplishment_points(rng: np.random.Generator) -> Item:
    role = _role(rng)
    m = _model(rng, role)
    cards = accomplishment_cards()[role]
    a, b = (cards[int(i)] for i in rng.choice(len(cards), size=2, replace=False))
    player = m.player(0)
    player.hand = [a, b]
    player.resources = {r: a.cost_dict.get(r, 0) + b.cost_dict.get(r, 0) for r in RESOURCES}
    before = player.points
    player.purchase([a.name, b.name])
    q = (
        f"You are the {role} and hold exactly what these two accomplishments need together: "
        f"{_card_words(a)}; and {_card_words(b)}. You complete both this round. How many points "
        "do you gain?"
    )
    return number_item(
        GAME,
        "accomplishment_points",
        q,
        player.points - before,
        low=0,
        high=20,
        tolerance=0,
        integer=True,
        framing=framing(),
        state=_state(role=role, cards=[a.name, b.name]),
    )


def events_count(rng: np.random.Generator) -> Item:
    m = _model(rng)
    health = int(rng.integers(1, 101))
    q = (
        f"After this round's wear and tear, port health is {health}. How many events are drawn "
        "this round (not counting any extra an event itself adds)?"
    )
    return number_item(
        GAME,
        "events_count",
        q,
        m.events_count(health),
        low=1,
        high=3,
        tolerance=0,
        integer=True,
        framing=framing(),
        state=_state(health=health),
    )


def upkeep(rng: np.random.Generator) -> Item:
    m = _model(rng)
    health = int(rng.integers(1, 101))
    m.health = health
    m.phase_new_round()
    q = (
        f"Port health is {health} at the end of a round. What is port health after the wear and "
        "tear at the start of the next round?"
    )
    return number_item(
        GAME,
        "upkeep",
        q,
        m.health,
        low=0,
        high=100,
        tolerance=0,
        integer=True,
        framing=framing(),
        state=_state(health=health),
    )


def end_of_round(rng: np.random.Generator) -> Item:
    m = _model(rng)
    health = int(rng.integers(5, 91))
    m.health = health
    coins = [int(rng.integers(0, 6)) for _ in range(5)]
    dirty = int(rng.choice([0, 0, 1, 2, 3, 5]))
    for seat, c in enumerate(coins):
        player = m.player(seat)
        player.coins = 10
        player.invest({"port_health": c}, {"port_health": m.health_cost()})
    m.player(int(rng.integers(5))).dirty_cost_round = dirty
    m.phase_end_round()
    harm = (
        f"and one player completed an accomplishment that harms the port by {dirty} port health"
        if dirty
        else "and nobody completed an accomplishment that harms the port"
    )
    q = (
        f"Port health is {health} after this round's events. This round the five players put "
        f"{', '.join(str(c) for c in coins)} coins into port health (1 coin a point), {harm}. "
        "The game goes on after this round. What is port health at the end of the round?"
    )
    return number_item(
        GAME,
        "end_of_round",
        q,
        m.health,
        low=0,
        high=100,
        tolerance=0,
        integer=True,
        framing=framing(),
        state=_state(health=health, coins=coins, dirty=dirty),
    )


def event_effect(rng: np.random.Generator) -> Item:
    from mesa_dilemmas.dilemmas.port_of_mars.events import resolve_deferred

    role = _role(rng)
    m = _model(rng, role)
    kind = str(rng.choice(["health", "health", "coins"]))
    if kind == "health":
        health = int(rng.integers(21, 101))
        m.health = health
        card = _event(m, str(rng.choice(HEALTH_EVENTS)))
        q = (
            f"Port health is {health} after wear and tear. {_event_line(card)} What is port "
            "health right after this event?"
        )
        return number_item(
            GAME,
            "event_effect",
            q,
            m.health,
            low=0,
            high=100,
            tolerance=0,
            integer=True,
            framing=framing(),
            state=_state(health=health, event=card.id),
        )
    for p in m.seats:
        p.coins = m.COINS_PER_ROUND
    eid = str(rng.choice(["lostTime", f"outOfCommission{role}", f"outOfCommission{_role(rng)}"]))
    card = _event(m, eid)
    resolve_deferred(m)
    q = (
        f"You are the {role} and received your {m.COINS_PER_ROUND} coins for this round. "
        f"{_event_line(card)} How many coins do you have to spend this round?"
    )
    return number_item(
        GAME,
        "event_effect",
        q,
        m.player(0).coins,
        low=0,
        high=16,
        tolerance=0,
        integer=True,
        framing=framing(),
        state=_state(role=role, event=card.id),
    )


def collapse(rng: np.random.Generator) -> Item:
    m = _model(rng)
    health = int(rng.integers(5, 51))
    m.health = health
    m.phase_new_round()
    q = (
        f"Port health is {health} at the end of a round and the game goes on. Is the settlement "
        "lost at the start of the next round, before anyone can invest?"
    )
    return choice_item(
        GAME,
        "collapse",
        q,
        yes_no(m.collapsed),
        framing=framing(),
        state=_state(health=health),
    )


MAKERS: dict[str, Callable[[np.random.Generator], Item]] = {
    "investment_cost": investment_cost,
    "can_buy": can_buy,
    "max_units": max_units,
    "affordable": affordable,
    "accomplishment_points": accomplishment_points,
    "events_count": events_count,
    "upkeep": upkeep,
    "end_of_round": end_of_round,
    "event_effect": event_effect,
    "collapse": collapse,
}


def skills(game: str) -> tuple[Skill, ...]:
    return SKILLS


def battery(game: str, rng: np.random.Generator, n: int) -> list[Item]:
    """``n`` items (every skill in turn) at states drawn from ``rng``."""
    if game != GAME:
        raise ValueError(f"game: this battery is {GAME}'s, not {game!r}")
    makers: list[Maker] = [MAKERS[s.name] for s in SKILLS]
    return collect(makers, rng, n)


__all__ = ["GAME", "MAKERS", "SKILLS", "battery", "framing", "skills"]
