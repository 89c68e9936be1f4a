"""Answer specs Port of Mars needs beyond the shared ones: bundles with a total budget.

The shared :class:`StructSpec` checks each field on its own; an investment
(coins split over port health and resources) and Breakdown of Trust (keep at most
two units in total) also need a constraint *across* fields.  Putting it in the
spec means a rule bug and a malformed LLM answer are caught by the same
validation in the broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mesa_dilemmas.agents.decisions import InvalidAnswer, NumberSpec, StructSpec


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
