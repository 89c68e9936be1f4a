"""Port of Mars trading: offer specs, validation, classification and atomic execution.

A trade offer is proposed by one player to one other player: a bundle the
sender gives and a bundle the sender asks for (any mix of the five resources).
Rules from the online game (``rules.json`` -> ``trading``): no 0-for-0 offer, the
sender must hold what it offers when sending, and on acceptance both sides are
re-checked and the exchange happens atomically or not at all.  Only resources
can be traded (no coins, port health or accomplishments).

Offers are classified as in paper 001 Sec. 4.2 by counting units: *fair* (as
many units offered as asked), *generous* (more offered than asked) or *selfish*
(fewer offered than asked).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mesa_dilemmas.agents.decisions import (
    ChoiceSpec,
    InvalidAnswer,
    NumberSpec,
    StructSpec,
)
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES, bundle_text

TRADE_KINDS: tuple[str, ...] = ("fair", "generous", "selfish")
#: upper bound on units asked for in one offer (keeps specs finite for LLM schemas)
MAX_UNITS_ASKED = 20


def clean_bundle(bundle: Mapping[str, Any] | None) -> dict[str, int]:
    """A validated bundle with ``None``/missing entries as 0, in resource order."""
    bundle = bundle or {}
    return {r: int(bundle.get(r) or 0) for r in RESOURCES}


def classify(give: Mapping[str, int], receive: Mapping[str, int]) -> str:
    """'fair' (1:1 in units), 'generous' (sender gives more) or 'selfish' (sender asks more)."""
    g, r = sum(give.values()), sum(receive.values())
    if g == r:
        return "fair"
    return "generous" if g > r else "selfish"


@dataclass
class TradeOffer:
    """One offer and what became of it (``status``: open, accepted, rejected, failed)."""

    sender: int
    recipient: int
    give: dict[str, int]
    receive: dict[str, int]
    round: int
    kind: str = field(init=False)
    status: str = "open"

    def __post_init__(self) -> None:
        self.kind = classify(self.give, self.receive)

    def public(self, roles: Sequence[str]) -> dict[str, Any]:
        """Plain-data description using role names (observation / round summary)."""
        return {
            "from": roles[self.sender],
            "to": roles[self.recipient],
            "give": {r: n for r, n in self.give.items() if n},
            "receive": {r: n for r, n in self.receive.items() if n},
            "kind": self.kind,
            "status": self.status,
            "text": f"{roles[self.sender]} offers {bundle_text(self.give)} "
            f"to {roles[self.recipient]} for {bundle_text(self.receive)}",
        }


class TradeOfferSpec(StructSpec):
    """One offer: ``to`` (a role), ``give`` and ``receive`` bundles; 0-for-0 is invalid."""

    def holdings(self) -> dict[str, int]:
        return {r: int(sub.high) for r, sub in self.fields["give"].fields.items()}  # type: ignore[attr-defined]

    def validate(self, answer: Any) -> dict[str, Any]:
        if isinstance(answer, Mapping):  # the two mistakes worth naming precisely
            give, receive = answer.get("give"), answer.get("receive")
            held = self.holdings()
            if isinstance(give, Mapping):
                for r, n in give.items():
                    if r in RESOURCES and isinstance(n, int | float) and n > held.get(r, 0):
                        raise InvalidAnswer(f"you offered {n:g} {r} but hold only {held.get(r, 0)}")
            if isinstance(give, Mapping) and isinstance(receive, Mapping):
                both = sorted(r for r in RESOURCES if give.get(r) and receive.get(r))
                if both:
                    raise InvalidAnswer(
                        f"{both[0]} is on both sides of the offer; a resource goes on one side only"
                    )
            if isinstance(give, Mapping):  # zeros of resources not held are no offer (idempotent)
                answer = {**answer, "give": {r: n for r, n in give.items() if n or r in held}}
        out = super().validate(answer)
        give, receive = clean_bundle(out.get("give")), clean_bundle(out.get("receive"))
        if not any(give.values()) and not any(receive.values()):
            raise InvalidAnswer("an offer cannot give nothing and ask for nothing")
        return {"to": out["to"], "give": give, "receive": receive}

    def describe(self) -> str:
        return (
            super().describe()
            + " (giving nothing and asking nothing is not allowed; a resource goes on one side only)"
        )

    def example(self) -> dict[str, Any]:
        """A legal, fair example: 1 unit of something held for 1 unit of something else
        (``{}``, i.e. no offer, when nothing is held)."""
        held = [r for r, n in self.holdings().items() if n > 0]
        if not held:
            return {}
        other = next(r for r in RESOURCES if r != held[0])
        to = self.fields["to"].options[0]  # type: ignore[attr-defined]
        return {"to": to, "give": {held[0]: 1}, "receive": {other: 1}}

    def sample(self, rng: Any) -> dict[str, Any]:
        """A random non-empty offer of small bundles (for random legal play)."""
        from mesa_dilemmas.agents.random_policy import random_answer

        while True:
            answer = {name: random_answer(sub, rng) for name, sub in self.fields.items()}
            for bundle in ("give", "receive"):
                answer[bundle] = {r: min(n, 3) for r, n in answer[bundle].items()}
            answer["receive"] = {  # a resource on one side only
                r: 0 if answer["give"].get(r) else n for r, n in answer["receive"].items()
            }
            if any(answer["give"].values()) or any(answer["receive"].values()):
                return answer


def offer_spec(partners: Sequence[str], holdings: Mapping[str, int]) -> TradeOfferSpec:
    """The spec of one offer by a player holding ``holdings`` to one of ``partners``."""
    optional = frozenset(RESOURCES)
    held = [r for r in RESOURCES if holdings[r] > 0]  # only what the sender holds can be given
    give = StructSpec(
        {r: NumberSpec(0, holdings[r], integer=True) for r in held}, optional=frozenset(held)
    )
    receive = StructSpec(
        {r: NumberSpec(0, MAX_UNITS_ASKED, integer=True) for r in RESOURCES}, optional=optional
    )
    return TradeOfferSpec({"to": ChoiceSpec(tuple(partners)), "give": give, "receive": receive})


@dataclass(frozen=True)
class BundleSpec(StructSpec):
    """Units of any resources, each a whole number up to the same limit (described in one
    clause, not field by field)."""

    def describe(self) -> str:
        high = max(int(sub.high) for sub in self.fields.values())  # type: ignore[attr-defined]
        return (
            f"an object with a whole number from 0 to {high} for any of: {', '.join(self.fields)}"
        )


def shown_offer_spec(roles: Sequence[str]) -> TradeOfferSpec:
    """The offer a prompt shows every seat: any role, any resource on either side (the seat's
    own :func:`offer_spec` -- its partners, what it holds -- checks the answer)."""
    bundle = {r: NumberSpec(0, MAX_UNITS_ASKED, integer=True) for r in RESOURCES}
    optional = frozenset(RESOURCES)
    return TradeOfferSpec(
        {
            "to": ChoiceSpec(tuple(roles)),
            "give": BundleSpec(bundle, optional=optional),
            "receive": BundleSpec(dict(bundle), optional=optional),
        }
    )


def can_execute(offer: TradeOffer, inventories: Sequence[Mapping[str, int]]) -> bool:
    """Both sides still hold what they would hand over."""
    s, t = inventories[offer.sender], inventories[offer.recipient]
    return all(s[r] >= n for r, n in offer.give.items()) and all(
        t[r] >= n for r, n in offer.receive.items()
    )


def execute(offer: TradeOffer, inventories: Sequence[MutableMapping[str, int]]) -> bool:
    """Swap the bundles atomically; return False (and change nothing) if either side is short."""
    if offer.sender == offer.recipient or not can_execute(offer, inventories):
        return False
    s, t = inventories[offer.sender], inventories[offer.recipient]
    for r in RESOURCES:
        s[r] += offer.receive[r] - offer.give[r]
        t[r] += offer.give[r] - offer.receive[r]
    return True
