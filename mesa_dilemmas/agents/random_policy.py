"""A random *legal* player for any game: any valid answer to any decision, drawn at random.

It is the noise baseline a rule or LLM player must beat, and the driver of property-based
tests (random legal play must never break a game's invariants).  Answers are built from the
decision's spec alone, so it works for every decision kind, including ones added later; a
game's own spec type with constraints of its own (a budget, a non-empty trade) draws its
answers with a ``sample(rng)`` method.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mesa_dilemmas.agents.decisions import (
    AnswerSpec,
    ChoiceSpec,
    Decision,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.agents.policy import Policy


def random_answer(spec: AnswerSpec, rng: np.random.Generator) -> Any:
    """A random answer that satisfies ``spec``."""
    sample = getattr(spec, "sample", None)
    if sample is not None:
        return sample(rng)
    if isinstance(spec, NumberSpec):
        if spec.integer:
            return int(rng.integers(int(spec.low), int(spec.high) + 1))
        return float(rng.uniform(spec.low, spec.high))
    if isinstance(spec, ChoiceSpec):
        return spec.options[int(rng.integers(len(spec.options)))]
    if isinstance(spec, TextSpec):
        return "random"[: spec.max_chars] or "x"
    if isinstance(spec, ListSpec):
        n = int(rng.integers(0, spec.max_items + 1))
        if isinstance(spec.item, ChoiceSpec):
            picks = rng.permutation(len(spec.item.options))[: min(n, len(spec.item.options))]
            return [spec.item.options[int(i)] for i in picks]
        return [random_answer(spec.item, rng) for _ in range(n)]
    if isinstance(spec, StructSpec):
        return {
            name: random_answer(sub, rng)
            for name, sub in spec.fields.items()
            if name not in spec.optional or rng.random() < 0.7
        }
    raise TypeError(f"no random answer for {type(spec).__name__}")


class RandomLegalPolicy(Policy):
    """Answers every decision with a uniformly drawn legal answer (from the model's generator,
    or its own seeded one when unbound)."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self._own = np.random.default_rng(seed) if seed is not None else None

    def decide(self, decision: Decision) -> Any:
        rng = self._own
        if rng is None:
            rng = self.agent.model.rng if self.agent is not None else np.random.default_rng(0)
        return random_answer(decision.spec, rng)
