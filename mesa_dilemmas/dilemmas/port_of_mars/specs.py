"""Answer specs Port of Mars needs beyond the shared ones: bundles with a total budget, and the
wider specs its prompts show.

The shared :class:`StructSpec` checks each field on its own; an investment
(coins split over port health and resources) and Breakdown of Trust (keep at most
two units in total) also need a constraint *across* fields.  Putting it in the
spec means a rule bug and a malformed LLM answer are caught by the same
validation in the broker.

A decision's spec is the seat's own (its coins, its cards, its partners); what its prompt shows
is one spec per phase for every seat (``Decision.shown``, built by the ``shown_*`` functions
here), so that every seat's prompt starts the same way and a provider serves that start from its
prompt cache.  The seat's own limits are stated at the end of its prompt, and an answer outside
them is refused by its own spec and asked again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mesa_dilemmas.agents.decisions import (
    InvalidAnswer,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES


@dataclass(frozen=True)
class BudgetSpec(StructSpec):
    """Whole-number fields whose cost-weighted sum must not exceed ``budget``.

    An answer over budget is refused with what it cost ("you spent 13 of your 10 coins (...)"),
    which the LLM policy sends back in its corrective turn.

    Every field is optional; a missing field means 0.  ``costs[name]`` is the
    price of one unit of field ``name`` (coins per unit for an investment, 1 for
    "units kept").
    """

    costs: Mapping[str, int] = field(default_factory=dict)
    budget: int = 0
    unit: str = "coins"

    def validate(self, answer: Any) -> dict[str, int]:
        out = super().validate(answer)
        clean = {k: int(v or 0) for k, v in out.items()}
        total = sum(self.costs.get(k, 1) * v for k, v in clean.items())
        if total > self.budget:
            parts = ", ".join(
                f"{v} {k} at {self.costs.get(k, 1)}" if self.costs.get(k, 1) != 1 else f"{v} {k}"
                for k, v in clean.items()
                if v
            )
            if self.unit == "coins":
                raise InvalidAnswer(f"you spent {total} of your {self.budget} coins ({parts})")
            raise InvalidAnswer(
                f"you kept {total} {self.unit} but may keep at most {self.budget} ({parts})"
            )
        return clean

    def example(self) -> dict[str, int]:
        """A legal, modest example: a third of the budget on the first field, a third of the
        rest on the next (shown to LLM players instead of the generic all-fields example)."""
        out: dict[str, int] = {}
        left = self.budget
        for name, sub in self.fields.items():
            price = max(1, self.costs.get(name, 1))
            n = min(int(sub.high), max(1, left // 3) // price)  # type: ignore[attr-defined]
            if n > 0 and n * price <= left:
                out[name] = n
                left -= n * price
            if len(out) == 2:
                break
        return out

    def sample(self, rng: Any) -> dict[str, int]:
        """A random answer within the budget (for random legal play)."""
        out: dict[str, int] = {}
        left = self.budget
        for name in rng.permutation(list(self.fields)):
            price = max(1, self.costs.get(name, 1))
            high = min(int(self.fields[name].high), left // price)  # type: ignore[attr-defined]
            n = int(rng.integers(0, high + 1)) if high > 0 else 0
            out[str(name)] = n
            left -= n * price
        return out

    def describe(self) -> str:
        prices = ", ".join(f"{k} {self.costs.get(k, 1)}" for k in self.fields)
        return (
            f"an object with whole numbers for any of: {', '.join(self.fields)}; "
            f"{self.unit} per unit: {prices}; at most {self.budget} {self.unit} in total"
        )


def budget_spec(costs: Mapping[str, int], budget: int, unit: str = "coins") -> BudgetSpec:
    """A :class:`BudgetSpec` whose per-field maximum is what the budget alone allows."""
    fields = {
        name: NumberSpec(0, budget // price if price > 0 else budget, integer=True)
        for name, price in costs.items()
    }
    return BudgetSpec(
        fields, optional=frozenset(fields), costs=dict(costs), budget=budget, unit=unit
    )


# -- what prompts show: one spec per phase for every seat ----------------------------------------


@dataclass(frozen=True)
class CardNameSpec(TextSpec):
    """An accomplishment named as printed on its card (shown in place of the seat's own
    choice of names, which its decision's spec checks)."""

    max_chars: int = 60

    def describe(self) -> str:
        return "the name of an accomplishment card, exactly as printed"


@dataclass(frozen=True)
class SpendSpec(StructSpec):
    """Units of port health and of each resource bought with coins (shown in place of the
    seat's own :class:`BudgetSpec`, whose prices and coins its prompt states at the end)."""

    def example(self) -> dict[str, int]:
        return {"port_health": 3, RESOURCES[0]: 1}

    def describe(self) -> str:
        return (
            "an object with whole numbers of units for any of: "
            + ", ".join(self.fields)
            + "; their cost at your prices must be at most your coins"
        )


def shown_coins(max_coins: int) -> NumberSpec:
    """A number of coins (a health plan)."""
    return NumberSpec(0, max_coins, integer=True)


def shown_spend(max_coins: int) -> SpendSpec:
    """An investment: units of port health and of every resource."""
    fields = {name: NumberSpec(0, max_coins, integer=True) for name in ("port_health", *RESOURCES)}
    return SpendSpec(fields, optional=frozenset(fields))


def shown_card() -> CardNameSpec:
    """One accomplishment (a goal)."""
    return CardNameSpec()


def shown_cards(max_items: int) -> ListSpec:
    """Accomplishments (to complete, to discard)."""
    return ListSpec(CardNameSpec(), max_items=max_items)
