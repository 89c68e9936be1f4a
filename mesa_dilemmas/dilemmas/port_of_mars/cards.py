"""Port of Mars game data: roles, coin costs, the event deck and the accomplishment decks.

Everything numeric comes from the shipped ``data/rules.json`` (a
transcription of the public online implementation), so the tables are data, not
code.  This module only turns that data into small immutable objects and decks
that draw from the model's random generator, and holds the *player-facing* text
(the paper's renamings: coins, port health, resources, events, accomplishments)
that observations and later LLM prompts reuse.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import Any

import numpy as np

#: the five resources, in the fixed order used everywhere (player-facing names are capitalised)
RESOURCES: tuple[str, ...] = ("culture", "finance", "government", "legacy", "science")
#: the five roles in the fixed order used for seats and reporters
ROLES: tuple[str, ...] = ("Curator", "Entrepreneur", "Pioneer", "Politician", "Researcher")

#: Appendix A of paper 001 gives the Politician Government at 2 and Culture/Legacy at 3;
#: the online implementation (the default) gives Finance/Science at 3 instead.
PAPER_POLITICIAN_COSTS: dict[str, int | None] = {
    "culture": 3,
    "finance": None,
    "government": 2,
    "legacy": 3,
    "science": None,
}


@cache
def load_rules() -> dict[str, Any]:
    """The rules and card data shipped with the package (parsed once per process)."""
    text = (resources.files("mesa_dilemmas.dilemmas.port_of_mars.data") / "rules.json").read_text(
        encoding="utf-8"
    )
    return json.loads(text)


@dataclass(frozen=True)
class RoleSpec:
    """A role's specialty and coin cost per unit of each resource (``None``: cannot buy)."""

    name: str
    specialty: str
    costs: Mapping[str, int | None]

    @cached_property
    def producible(self) -> tuple[str, ...]:
        return tuple(r for r in RESOURCES if self.costs[r] is not None)

    @cached_property
    def trade_only(self) -> tuple[str, ...]:
        return tuple(r for r in RESOURCES if self.costs[r] is None)


def role_specs(table: str = "online") -> dict[str, RoleSpec]:
    """Role name -> :class:`RoleSpec`; ``table="paper"`` applies paper 001's Politician costs."""
    if table not in ("online", "paper"):
        raise ValueError(f"unknown role table {table!r}; use 'online' or 'paper'")
    out: dict[str, RoleSpec] = {}
    for name, raw in load_rules()["roles"].items():
        costs = {r: raw["time_block_cost_per_unit"][r] for r in RESOURCES}
        if table == "paper" and name == "Politician":
            costs = dict(PAPER_POLITICIAN_COSTS)
        out[name] = RoleSpec(name=name, specialty=raw["specialty"], costs=costs)
    return out


# -- accomplishments ---------------------------------------------------------


@dataclass(frozen=True)
class Accomplishment:
    """One accomplishment card: resources it costs, port health it costs, points it gives.

    A card with a port-health cost is "dirty" (paper 001): points at the expense
    of the shared port.
    """

    id: int
    name: str
    role: str
    cost: tuple[tuple[str, int], ...]
    health_cost: int
    points: int

    @property
    def dirty(self) -> bool:
        return self.health_cost > 0

    @property
    def cost_dict(self) -> dict[str, int]:
        return dict(self.cost)

    @property
    def total_resources(self) -> int:
        return sum(n for _, n in self.cost)

    def affordable(self, inventory: Mapping[str, int]) -> bool:
        return all(inventory[r] >= n for r, n in self.cost)

    def public(self) -> dict[str, Any]:
        """Player-facing description (observation / prompt data)."""
        return {
            "name": self.name,
            "cost": dict(self.cost),
            "port_health_cost": self.health_cost,
            "points": self.points,
            "dirty": self.dirty,
        }


@cache
def accomplishment_cards() -> dict[str, tuple[Accomplishment, ...]]:
    """Role -> its 14 accomplishment cards, in data order."""
    out: dict[str, tuple[Accomplishment, ...]] = {}
    for role, cards in load_rules()["accomplishments"]["by_role"].items():
        out[role] = tuple(
            Accomplishment(
                id=int(c["id"]),
                name=c["name"],
                role=role,
                cost=tuple((r, int(c["cost"].get(r, 0))) for r in RESOURCES if c["cost"].get(r, 0)),
                health_cost=int(c["system_health_cost"]),
                points=int(c["victory_points"]),
            )
            for c in cards
        )
    return out


# -- events ------------------------------------------------------------------

#: player-facing descriptions of every event (our own wording, in the paper's vocabulary)
EVENT_TEXT: dict[str, str] = {
    "audit": "Everyone can see every player's resources, accomplishments and coin spending this round.",
    "bondingThroughAdversity": "Each player chooses one resource and receives 1 unit of it.",
    "breakdownOfTrust": "Each player keeps at most 2 units of resources of their choice; all other resources are lost.",
    "changingTides": "Every player's unpurchased accomplishments go back under their pile; each player draws 1 new accomplishment for this round.",
    "compulsivePhilanthropy": "The players vote for one player, who must spend all of their coins on port health this round.",
    "cropFailure": "Port health falls by 20.",
    "difficultConditions": "Port health costs 2 coins per point this round.",
    "effortsWasted": "Every player who has completed accomplishments must give one back and loses its points.",
    "heroOrPariah": "The players vote on Hero or Pariah, then on a player. A Hero receives 4 units of their specialty resource; a Pariah loses all of their resources.",
    "hullBreach": "Port health falls by 7.",
    "interdisciplinary": "This round each player can also buy the two resources they normally cannot, at 3 coins each.",
    "lifeAsUsual": "Nothing unusual happens.",
    "lostTime": "Every player has 5 fewer coins this round.",
    "marketsClosed": "No trading this round.",
    "murphysLaw": "Two more events happen at once; all of them take effect this round.",
    "outOfCommission": "The {role} has only 3 coins this round.",
    "personalGain": "Each player secretly decides whether to take 6 extra coins this round; every player who does costs the port 6 health.",
    "sandstorm": "Port health falls by 10 this round and in each of the next two rounds.",
    "solarFlare": "Port health falls by 5; there is no meeting and no trading this round.",
    "stymied": "No player can buy their specialty resource this round.",
}


@dataclass(frozen=True)
class EventCard:
    """One event type (the deck holds ``copies`` of it)."""

    id: str
    name: str
    copies: int
    duration: int
    target_role: str | None = None

    @property
    def display_name(self) -> str:
        return f"{self.name} ({self.target_role})" if self.target_role else self.name

    @property
    def description(self) -> str:
        if self.id.startswith("outOfCommission"):
            return EVENT_TEXT["outOfCommission"].format(role=self.target_role)
        return EVENT_TEXT[self.id]

    def public(self, rounds_left: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.display_name, "description": self.description}
        if rounds_left is not None:
            out["rounds_left"] = rounds_left
        return out


@cache
def event_cards() -> dict[str, EventCard]:
    """Event id -> :class:`EventCard` for all 24 event types."""
    out: dict[str, EventCard] = {}
    for c in load_rules()["events"]["cards"]:
        target = None
        if c["id"].startswith("outOfCommission"):
            target = c["id"][len("outOfCommission") :]
        out[c["id"]] = EventCard(
            id=c["id"],
            name=c["name"],
            copies=int(c["copies"]),
            duration=int(c["duration_rounds"]),
            target_role=target,
        )
    return out


EVENT_IDS: tuple[str, ...] = tuple(sorted(event_cards()))


class EventDeck:
    """The shuffled event deck: drawn without replacement, reshuffled in full when exhausted.

    The online game walks a pointer through one shuffled order and wraps around
    (with a quirk that skips cards); drawing without replacement and reshuffling
    when empty is the equivalent the reference file recommends for simulation.
    """

    def __init__(self, rng: np.random.Generator, copies: Mapping[str, int] | None = None) -> None:
        cards = event_cards()
        counts = {eid: card.copies for eid, card in cards.items()}
        for eid, n in (copies or {}).items():
            if eid not in counts:
                raise KeyError(f"unknown event id {eid!r}")
            counts[eid] = int(n)
        self.cards: tuple[str, ...] = tuple(
            eid for eid in sorted(counts) for _ in range(counts[eid])
        )
        if not self.cards:
            raise ValueError("the event deck is empty")
        self.rng = rng
        self.pile: list[str] = []
        self.drawn: list[str] = []  # cards drawn since the last reshuffle
        self.reshuffles = 0
        self._shuffle()

    def _shuffle(self) -> None:
        order = self.rng.permutation(len(self.cards))
        self.pile = [self.cards[i] for i in order]
        self.drawn = []

    def draw(self) -> EventCard:
        if not self.pile:
            self.reshuffles += 1
            self._shuffle()
        eid = self.pile.pop()
        self.drawn.append(eid)
        return event_cards()[eid]

    def __len__(self) -> int:
        return len(self.pile)


class AccomplishmentDeck:
    """One role's own deck: shuffled at game start, drawn from the top, returns go under."""

    def __init__(self, role: str, rng: np.random.Generator) -> None:
        cards = accomplishment_cards()[role]
        order = rng.permutation(len(cards))
        self.role = role
        self.cards: deque[Accomplishment] = deque(cards[i] for i in order)

    def draw(self) -> Accomplishment | None:
        return self.cards.popleft() if self.cards else None

    def put_bottom(self, card: Accomplishment) -> None:
        self.cards.append(card)

    def __len__(self) -> int:
        return len(self.cards)


def resource_name(r: str) -> str:
    """Player-facing resource name ("science" -> "Science")."""
    return r.capitalize()


def bundle_text(bundle: Mapping[str, int]) -> str:
    """``{"science": 2, "culture": 1}`` -> ``"2 Science, 1 Culture"`` (``"nothing"`` when empty)."""
    parts = [f"{n} {resource_name(r)}" for r, n in bundle.items() if n]
    return ", ".join(parts) if parts else "nothing"
