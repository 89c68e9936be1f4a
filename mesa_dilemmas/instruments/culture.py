"""A short cultural-orientation scale in two axes: individualism vs collectivism (communitarian)
and hierarchy vs equality.

Modelled on the standard constructs of the horizontal / vertical individualism-collectivism
literature (Triandis & Gelfand 1998: the self as independent or bound to a group, crossed with
whether rank and authority are accepted), which are also the two axes of the grid-group
cultural groups of paper 001's personas (hierarchical / egalitarian x individualist /
communitarian).  The statements are our own words, written for this project; no item is taken
from a published questionnaire.

Each axis is its own :class:`~mesa_dilemmas.instruments.Instrument` (one number per sample):
six statements, three keyed towards each pole, each answered on a five-point agreement scale
scored -2 (strongly disagree) .. +2 (strongly agree); a statement keyed to the other pole counts
negated.  A sample's value is the mean over the six, in [-2, 2]: above +0.25 the first-named
pole (``individualist``, ``hierarchical``), below -0.25 the other (``communitarian``,
``egalitarian``), ``mixed`` between.  Balanced keying means a respondent who gives the same
answer to everything (agrees with all, or always takes the first option) measures 0 on both
axes: ``mixed``, never a pole it did not choose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mesa_dilemmas.instruments import Item

#: the half-width of the ``mixed`` band around 0
MIXED_WITHIN = 0.25

#: the answer options, in order, and their scores
SCALE: tuple[tuple[str, int], ...] = (
    ("strongly disagree", -2),
    ("disagree", -1),
    ("neither agree nor disagree", 0),
    ("agree", 1),
    ("strongly agree", 2),
)
SCORES = dict(SCALE)

#: individualism axis: (statement, +1 when agreeing means individualist, -1 communitarian)
INDIVIDUALISM: tuple[tuple[str, int], ...] = (
    ("I would rather depend on myself than on the people around me.", +1),
    ("What I achieve through my own effort matters more to me than what my group achieves.", +1),
    ("When what I want and what my group needs pull apart, I go with what I want.", +1),
    ("I would give up something I want if that helped the people I live and work with.", -1),
    ("Looking after the wellbeing of my community is one of my duties.", -1),
    ("I am glad to work with others towards a shared aim even when I get less credit.", -1),
)

#: hierarchy axis: (statement, +1 when agreeing means hierarchical, -1 egalitarian)
HIERARCHY: tuple[tuple[str, int], ...] = (
    ("A group works best when it has clear leaders whose decisions are followed.", +1),
    ("People should keep to the roles and ranks they have been given.", +1),
    ("Those who have earned a higher position should have more say than others.", +1),
    ("Everyone should have an equal say in decisions, whatever their position.", -1),
    ("Differences in power and status between people should be kept as small as possible.", -1),
    ("I am uneasy when someone claims authority over other people.", -1),
)

QUESTION = (
    "This is statement {number} of {total}. How much do you agree with it, speaking for "
    'yourself?\n\n"{statement}"\n\nThe possible answers:\n{listing}'
)


@dataclass(frozen=True)
class CultureAxis:
    """One axis of the cultural-orientation scale as an
    :class:`~mesa_dilemmas.instruments.Instrument`."""

    name: str
    title: str
    statements: tuple[tuple[str, int], ...]
    #: the categories above +0.25 and below -0.25 (``mixed`` between)
    positive: str
    negative: str
    unit: str = "scale points (-2..2)"
    tolerance: float = 0.5
    min_samples: int = 30
    reachable: tuple[float, float] = (-2.0, 2.0)

    @property
    def kind(self) -> str:
        return f"instrument.{self.name}"

    @property
    def categories(self) -> dict[str, tuple[float, float]]:
        """category -> its (low, high] range of values."""
        return {
            self.negative: (-2.0, -MIXED_WITHIN),
            "mixed": (-MIXED_WITHIN, MIXED_WITHIN),
            self.positive: (MIXED_WITHIN, 2.0),
        }

    def items(self) -> list[Item]:
        options = tuple(text for text, _ in SCALE)
        listing = "\n".join(f"- {o}" for o in options)
        n = len(self.statements)
        return [
            Item(i, QUESTION.format(number=i, total=n, statement=s, listing=listing), options)
            for i, (s, _) in enumerate(self.statements, 1)
        ]

    def score(self, answers: Sequence[str]) -> float:
        if len(answers) != len(self.statements):
            raise ValueError(
                f"{self.name}: needs one answer for each of the {len(self.statements)}"
            )
        keyed = [SCORES[a] * key for a, (_, key) in zip(answers, self.statements, strict=True)]
        return sum(keyed) / len(keyed)

    def category(self, value: float) -> str:
        if value > MIXED_WITHIN:
            return self.positive
        if value < -MIXED_WITHIN:
            return self.negative
        return "mixed"


INDIVIDUALISM_AXIS = CultureAxis(
    name="culture_individualism",
    title="cultural orientation, individualism vs collectivism (six statements, our wording)",
    statements=INDIVIDUALISM,
    positive="individualist",
    negative="communitarian",
)
HIERARCHY_AXIS = CultureAxis(
    name="culture_hierarchy",
    title="cultural orientation, hierarchy vs equality (six statements, our wording)",
    statements=HIERARCHY,
    positive="hierarchical",
    negative="egalitarian",
)
