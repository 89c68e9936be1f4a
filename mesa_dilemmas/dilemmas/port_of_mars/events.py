"""The mechanics of all 24 Port of Mars event types.

Each event id maps to a resolver ``f(model, card)`` called when the event is
revealed.  Resolvers change the round's :class:`RoundEffects` (closed markets,
silenced meeting, coin costs, ...), port health, inventories or hands, and ask
players for the decisions some events need (votes, choices) through the model's
broker.  Effects the online game applies only when the events phase ends are
queued and applied by :func:`resolve_deferred` in the game's order: Personal
Gain first, Out of Commission in the middle, Lost Time and Compulsive
Philanthropy last.

Choices made where the original is ambiguous (see ``docs/port_of_mars.md``):

* Stymied and Interdisciplinary commute: Stymied always blocks the specialty,
  Interdisciplinary only opens the two resources a role normally cannot buy
  (the online game re-opens a stymied specialty at 3 coins if Interdisciplinary
  is resolved after it).
* Hero or Pariah and Compulsive Philanthropy break vote ties uniformly among
  the *tied* players (the online game picks among all five in Hero or Pariah).
* Votes and choices are asked when the event is revealed; their effects follow
  the online game's timing.
* Breakdown of Trust falls back to keeping the first two units in resource
  order (the reference bot's choice) rather than losing everything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.agents.decisions import ChoiceSpec, NumberSpec
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES, EventCard
from mesa_dilemmas.dilemmas.port_of_mars.specs import BudgetSpec
from mesa_dilemmas.dilemmas.voting import plurality_vote

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

HEALTH_DAMAGE: dict[str, int] = {
    "cropFailure": -20,
    "hullBreach": -7,
    "sandstorm": -10,
    "solarFlare": -5,
}
SANDSTORM_ROUNDS = 3
PERSONAL_GAIN_COINS = 6
PERSONAL_GAIN_HEALTH = -6
OUT_OF_COMMISSION_COINS = 3
LOST_TIME_COINS = 5
HERO_GAIN = 4
BREAKDOWN_KEEP = 2
INTERDISCIPLINARY_COST = 3
MURPHY_EXTRA = 2
CHANGING_TIDES_DRAW = 1


@dataclass
class RoundEffects:
    """What this round's events changed; reset at the start of every round."""

    trade_closed: bool = False
    chat_closed: bool = False
    audit: bool = False
    health_cost_factor: int = 1
    interdisciplinary: bool = False
    stymied: bool = False
    personal_gain_yes: list[int] = field(default_factory=list)
    out_of_commission: list[str] = field(default_factory=list)
    lost_time: int = 0
    compulsive_votes: int = 0
    forced_full_health: set[int] = field(default_factory=set)
    log: list[str] = field(default_factory=list)


Resolver = Callable[["PortOfMarsModel", EventCard], None]


def _health(model: PortOfMarsModel, card: EventCard) -> None:
    model.change_health(HEALTH_DAMAGE[card.id])


def _sandstorm(model: PortOfMarsModel, card: EventCard) -> None:
    model.change_health(HEALTH_DAMAGE["sandstorm"])
    model.ongoing.append([card, SANDSTORM_ROUNDS - 1])


def _solar_flare(model: PortOfMarsModel, card: EventCard) -> None:
    model.change_health(HEALTH_DAMAGE["solarFlare"])
    model.effects.trade_closed = True
    model.effects.chat_closed = True


def _audit(model: PortOfMarsModel, card: EventCard) -> None:
    model.effects.audit = True


def _nothing(model: PortOfMarsModel, card: EventCard) -> None:
    return None


def _markets_closed(model: PortOfMarsModel, card: EventCard) -> None:
    model.effects.trade_closed = True


def _difficult_conditions(model: PortOfMarsModel, card: EventCard) -> None:
    model.effects.health_cost_factor *= 2


def _interdisciplinary(model: PortOfMarsModel, card: EventCard) -> None:
    model.effects.interdisciplinary = True


def _stymied(model: PortOfMarsModel, card: EventCard) -> None:
    model.effects.stymied = True


def _murphys_law(model: PortOfMarsModel, card: EventCard) -> None:
    model.extra_draws += MURPHY_EXTRA


def _lost_time(model: PortOfMarsModel, card: EventCard) -> None:
    model.effects.lost_time += 1


def _out_of_commission(model: PortOfMarsModel, card: EventCard) -> None:
    assert card.target_role is not None
    model.effects.out_of_commission.append(card.target_role)


def _changing_tides(model: PortOfMarsModel, card: EventCard) -> None:
    model.seats.do("return_hand").do("draw", CHANGING_TIDES_DRAW)


def _bonding(model: PortOfMarsModel, card: EventCard) -> None:
    spec = ChoiceSpec(RESOURCES)
    decisions = [
        model.event_decision(
            p.seat,
            "port_of_mars.event_choice",
            spec,
            fallback=model.role_spec(p.seat).specialty,
            card=card,
            question="Choose one resource to receive 1 unit of.",
            options=list(RESOURCES),
        )
        for p in model.seats
    ]
    for p, choice in zip(model.seats, model.ask_all(decisions), strict=True):
        p.resources[choice] += 1


def _breakdown_of_trust(model: PortOfMarsModel, card: EventCard) -> None:
    decisions, who = [], []
    for p in model.seats:
        held = sum(p.resources.values())
        if held <= BREAKDOWN_KEEP:
            continue  # keeps everything; nothing to decide
        fields = {
            r: NumberSpec(0, min(p.resources[r], BREAKDOWN_KEEP), integer=True) for r in RESOURCES
        }
        spec = BudgetSpec(
            fields,
            optional=frozenset(RESOURCES),
            costs={r: 1 for r in RESOURCES},
            budget=BREAKDOWN_KEEP,
            unit="units",
        )
        fallback, left = {}, BREAKDOWN_KEEP
        for r in RESOURCES:
            take = min(left, p.resources[r])
            if take:
                fallback[r] = take
                left -= take
        who.append(p)
        decisions.append(
            model.event_decision(
                p.seat,
                "port_of_mars.keep_resources",
                spec,
                fallback=fallback,
                card=card,
                question=f"Choose at most {BREAKDOWN_KEEP} units of your resources to keep; the rest are lost.",
            )
        )
    for p, keep in zip(who, model.ask_all(decisions), strict=True):
        for r in RESOURCES:
            p.resources[r] = min(p.resources[r], int(keep.get(r, 0)))


def _efforts_wasted(model: PortOfMarsModel, card: EventCard) -> None:
    decisions, who = [], []
    for p in model.seats:
        if not p.purchased:
            continue
        names = tuple(dict.fromkeys(c.name for c in p.purchased))
        who.append(p)
        decisions.append(
            model.event_decision(
                p.seat,
                "port_of_mars.event_choice",
                ChoiceSpec(names),
                fallback=p.purchased[0].name,
                card=card,
                question="Choose one of your completed accomplishments to give back (you lose its points).",
                options=list(names),
                points={c.name: c.points for c in p.purchased},
            )
        )
    for p, name in zip(who, model.ask_all(decisions), strict=True):
        idx = next(i for i, c in enumerate(p.purchased) if c.name == name)
        lost = p.purchased.pop(idx)
        p.points -= lost.points
        p.deck.put_bottom(lost)
        p.cards_returned += 1


def _personal_gain(model: PortOfMarsModel, card: EventCard) -> None:
    spec = ChoiceSpec(("yes", "no"))
    decisions = [
        model.event_decision(
            p.seat,
            "port_of_mars.event_choice",
            spec,
            fallback="no",
            card=card,
            question=(
                f"Secretly choose: 'yes' gives you {PERSONAL_GAIN_COINS} extra coins this round "
                f"and lowers port health by {-PERSONAL_GAIN_HEALTH}; 'no' changes nothing."
            ),
            options=["yes", "no"],
        )
        for p in model.seats
    ]
    for p, ans in zip(model.seats, model.ask_all(decisions), strict=True):
        if ans == "yes":
            model.effects.personal_gain_yes.append(p.seat)
            p.personal_gain_yes += 1


def _vote_for_player(model: PortOfMarsModel, card: EventCard, question: str, stage: str) -> int:
    roles = tuple(model.roles)
    decisions = [
        model.event_decision(
            p.seat,
            "port_of_mars.vote",
            ChoiceSpec(roles),
            fallback=p.role,
            card=card,
            question=question,
            options=list(roles),
            stage=stage,
        )
        for p in model.seats
    ]
    winner = plurality_vote(model.ask_all(decisions), model.rng)
    return model.roles.index(winner)


def _compulsive_philanthropy(model: PortOfMarsModel, card: EventCard) -> None:
    seat = _vote_for_player(
        model,
        card,
        "Vote for the player who must spend all of their coins on port health this round.",
        stage="player",
    )
    model.effects.compulsive_votes += 1
    model.pending_forced.append(seat)


def _hero_or_pariah(model: PortOfMarsModel, card: EventCard) -> None:
    spec = ChoiceSpec(("Hero", "Pariah"))
    decisions = [
        model.event_decision(
            p.seat,
            "port_of_mars.vote",
            spec,
            fallback="Pariah",
            card=card,
            question=(
                "First vote: Hero (the chosen player receives "
                f"{HERO_GAIN} units of their specialty resource) or Pariah (the chosen player "
                "loses all resources)? Hero needs at least 3 of 5 votes."
            ),
            options=["Hero", "Pariah"],
            stage="hero_or_pariah",
        )
        for p in model.seats
    ]
    hero_votes = sum(v == "Hero" for v in model.ask_all(decisions))
    outcome = "Hero" if hero_votes >= 3 else "Pariah"
    question = f"The group chose {outcome}. Vote for the player who " + (
        f"receives {HERO_GAIN} units of their specialty resource."
        if outcome == "Hero"
        else "loses all of their resources."
    )
    seat = _vote_for_player(model, card, question, stage=outcome.lower())
    target = model.player(seat)
    if outcome == "Hero":
        target.resources[model.role_spec(seat).specialty] += HERO_GAIN
    else:
        for r in RESOURCES:
            target.resources[r] = 0
    model.effects.log.append(f"{outcome}: {target.role}")


RESOLVERS: dict[str, Resolver] = {
    "audit": _audit,
    "bondingThroughAdversity": _bonding,
    "breakdownOfTrust": _breakdown_of_trust,
    "changingTides": _changing_tides,
    "compulsivePhilanthropy": _compulsive_philanthropy,
    "cropFailure": _health,
    "difficultConditions": _difficult_conditions,
    "effortsWasted": _efforts_wasted,
    "heroOrPariah": _hero_or_pariah,
    "hullBreach": _health,
    "interdisciplinary": _interdisciplinary,
    "lifeAsUsual": _nothing,
    "lostTime": _lost_time,
    "marketsClosed": _markets_closed,
    "murphysLaw": _murphys_law,
    "outOfCommissionCurator": _out_of_commission,
    "outOfCommissionEntrepreneur": _out_of_commission,
    "outOfCommissionPioneer": _out_of_commission,
    "outOfCommissionPolitician": _out_of_commission,
    "outOfCommissionResearcher": _out_of_commission,
    "personalGain": _personal_gain,
    "sandstorm": _sandstorm,
    "solarFlare": _solar_flare,
    "stymied": _stymied,
}


def resolve_event(model: PortOfMarsModel, card: EventCard) -> None:
    """Apply a newly revealed event's immediate effect (and queue its deferred one)."""
    RESOLVERS[card.id](model, card)


def apply_ongoing(model: PortOfMarsModel) -> list[dict[str, Any]]:
    """Re-apply multi-round events (Sandstorm) drawn in earlier rounds; return them for display."""
    shown = []
    still = []
    for card, left in model.ongoing:
        model.change_health(HEALTH_DAMAGE[card.id])
        shown.append(card.public(rounds_left=left - 1))
        if left - 1 > 0:
            still.append([card, left - 1])
    model.ongoing = still
    return shown


def resolve_deferred(model: PortOfMarsModel) -> None:
    """End-of-events-phase effects: Personal Gain, then Out of Commission, then Lost Time and
    Compulsive Philanthropy (the online game's FIRST / MIDDLE / LAST order)."""
    eff = model.effects
    for seat in eff.personal_gain_yes:
        model.player(seat).coins += PERSONAL_GAIN_COINS
        model.change_health(PERSONAL_GAIN_HEALTH)
    for role in eff.out_of_commission:
        if role in model.roles:
            model.player(model.roles.index(role)).coins = OUT_OF_COMMISSION_COINS
    for _ in range(eff.lost_time):
        for p in model.seats:
            p.coins = max(0, p.coins - LOST_TIME_COINS)
    for seat in model.pending_forced:
        eff.forced_full_health.add(seat)
    model.pending_forced = []
