"""Comprehension items: questions about a game whose answers the game's own rules compute.

Before a society of language models plays a game, a referee wants to know that the model can
work out what the rules say: its own catch at a given effort, what a fine costs, whether a
threshold is reached, whether it can afford a card.  A game (or a family of games) provides a
*battery*: a module registered under the entry point group ``mesa_dilemmas.comprehension``
(game name -> module) with

``battery(game: str, rng: numpy.random.Generator, n: int) -> list[Item]``
    ``n`` questions at random states of ``game`` drawn from ``rng``, each with its answer
    computed by the game's own code (its model played at that state, its rule functions,
    its data), never by a formula written again for the question;
``skills(game: str) -> tuple[Skill, ...]``
    the skills (:class:`Skill`) its items test, in the order the battery takes them.

The types live here, in the shared core of the games (beside ``base.py`` and ``voting.py``), so
a game can import them without reaching above its own layer; ``mesa-dilemmas comprehension``
(:mod:`mesa_dilemmas.instruments.comprehension`) asks the items and scores the answers.  This
module imports no game and no language model.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mesa_dilemmas.agents.decisions import ChoiceSpec, InvalidAnswer, NumberSpec

#: the entry point group of the batteries (game name -> module)
COMPREHENSION_GROUP = "mesa_dilemmas.comprehension"

#: the two answers of a yes/no item
YES_NO = ChoiceSpec(("yes", "no"))


@dataclass(frozen=True)
class Skill:
    """One thing a battery tests (``harvest``: the catch at an effort) and what it means."""

    name: str
    description: str


@dataclass(frozen=True)
class Item:
    """One question with its computed answer.

    ``spec`` is how an answer is given: a :class:`NumberSpec` (a number in a range; correct
    when within ``tolerance`` of ``answer``) or a :class:`ChoiceSpec` (one of its options;
    correct when it is ``answer``).  The question is asked in the game's own framing: the
    system text of the game's prompt templates (in the run's prompt variant), filled from
    ``framing`` (the fields that text reads, e.g. the rules text); ``context`` is what the
    question needs beyond that framing (a game whose templates carry no rules puts its rules
    here), shown before the question.  ``state`` is the random state the answer was computed at
    (kept for the record and for tests, never shown)."""

    game: str
    skill: str
    question: str
    spec: NumberSpec | ChoiceSpec
    answer: float | str
    tolerance: float = 0.0
    context: str = ""
    framing: Mapping[str, Any] = field(default_factory=dict)
    state: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.spec, NumberSpec | ChoiceSpec):
            raise TypeError(f"{self.skill}: an item's spec is a NumberSpec or a ChoiceSpec")
        if not self.tolerance >= 0:
            raise ValueError(f"{self.skill}: tolerance must be >= 0 (got {self.tolerance})")
        try:
            self.spec.validate(self.answer)
        except InvalidAnswer as exc:
            raise ValueError(
                f"{self.skill}: the computed answer is not a legal one: {exc}"
            ) from None

    @property
    def key(self) -> str:
        """A short stable id of the item (game, skill and question text)."""
        text = f"{self.game}\n{self.skill}\n{self.question}"
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def correct(self, value: Any) -> bool:
        """Whether ``value`` (an answer already valid under ``spec``) is right."""
        if value is None:
            return False
        if isinstance(self.spec, ChoiceSpec):
            return str(value) == self.answer
        return abs(float(value) - float(self.answer)) <= self.tolerance + 1e-9

    def chance(self) -> float:
        """The probability that an answer drawn uniformly from the legal ones is right: 1 over
        the options of a choice; for a number, the share of the range (of the whole numbers in
        it, for an integer spec) within ``tolerance`` of the answer."""
        spec = self.spec
        if isinstance(spec, ChoiceSpec):
            return 1.0 / len(spec.options)
        a, tol = float(self.answer), self.tolerance + 1e-9
        low, high = max(spec.low, a - tol), min(spec.high, a + tol)
        if spec.integer:
            hits = math.floor(high) - math.ceil(low) + 1
            return max(0, hits) / (math.floor(spec.high) - math.ceil(spec.low) + 1)
        return max(0.0, high - low) / (spec.high - spec.low) if spec.high > spec.low else 1.0


def number_item(
    game: str,
    skill: str,
    question: str,
    answer: float,
    *,
    low: float,
    high: float,
    tolerance: float,
    context: str = "",
    framing: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
    integer: bool = False,
) -> Item:
    """A numeric item; ``answer`` is rounded to 6 digits (a float's noise is no part of it)."""
    value: float = int(round(answer)) if integer else round(float(answer), 6)
    return Item(
        game=game,
        skill=skill,
        question=question,
        spec=NumberSpec(low, high, integer=integer),
        answer=value,
        tolerance=tolerance,
        context=context,
        framing=dict(framing or {}),
        state=dict(state or {}),
    )


def choice_item(
    game: str,
    skill: str,
    question: str,
    answer: str,
    options: Sequence[str] = YES_NO.options,
    *,
    context: str = "",
    framing: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
) -> Item:
    return Item(
        game=game,
        skill=skill,
        question=question,
        spec=ChoiceSpec(tuple(options)),
        answer=answer,
        context=context,
        framing=dict(framing or {}),
        state=dict(state or {}),
    )


#: a maker of one item of one skill at a random state: ``f(rng) -> Item``
Maker = Callable[[np.random.Generator], Item]


def collect(makers: Sequence[Maker], rng: np.random.Generator, n: int) -> list[Item]:
    """``n`` distinct items (by question text), the makers taken in turn so every skill gets
    its share; the states drawn from ``rng`` alone.  A maker whose states run out of new
    questions is dropped after many tries (a small state space), never looped on."""
    if n < 1:
        raise ValueError(f"n: a battery needs at least 1 item (got {n})")
    if not makers:
        raise ValueError("a battery needs at least one skill")
    items: list[Item] = []
    seen: set[str] = set()
    live = list(makers)
    misses: dict[int, int] = {}  # repeats per maker
    i = 0
    while len(items) < n and live:
        k = i % len(live)
        item = live[k](rng)
        i += 1
        if item.question in seen:
            misses[id(live[k])] = misses.get(id(live[k]), 0) + 1
            if misses[id(live[k])] > 200:
                live.pop(k)
            continue
        seen.add(item.question)
        items.append(item)
    if len(items) < n:
        raise ValueError(f"the battery has only {len(items)} distinct items (asked for {n})")
    return items


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


__all__ = [
    "COMPREHENSION_GROUP",
    "YES_NO",
    "Item",
    "Maker",
    "Skill",
    "choice_item",
    "collect",
    "number_item",
    "yes_no",
]
