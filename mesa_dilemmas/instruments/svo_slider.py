"""The Social Value Orientation slider measure, its six primary items.

Source: the SVO Slider Measure of Murphy, Ackermann & Handgraaf (2011; JDM 6(8), 771-781).
Each primary item is a line between two allocations of money (what the chooser gets, what an unknown other person gets); the
chooser picks one of nine points evenly spaced along it (the published values are those points
rounded half up, :func:`spaced`).  The chooser's angle is the direction, seen from (50, 50), of
its mean allocation over the six items: ``atan2(mean_other - 50, mean_self - 50)`` in degrees.
The published category boundaries are -12.04, 22.45 and 57.15 degrees.

Reference choosers computed from the table (see the tests): one who always maximises the
other's payoff measures 61.39 degrees; one who minimises the difference between the two
(breaking ties by the larger joint payoff) 37.48; one who maximises its own (ties broken
against the other) -7.82; one who maximises its own minus the other's -16.26.  The measure
cannot go beyond these ends: a target below -16.26 or above 61.39 degrees can only be approached.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mesa_dilemmas.instruments import Item

#: the six primary items: (first endpoint, last endpoint), each an allocation (self, other)
ENDPOINTS: tuple[tuple[tuple[int, int], tuple[int, int]], ...] = (
    ((85, 85), (85, 15)),
    ((85, 15), (100, 50)),
    ((50, 100), (85, 85)),
    ((50, 100), (85, 15)),
    ((100, 50), (50, 100)),
    ((100, 50), (85, 85)),
)
#: options per item
POINTS = 9

#: the published category boundaries (degrees): a boundary angle belongs to the category below
ALTRUISTIC_ABOVE = 57.15
PROSOCIAL_ABOVE = 22.45
COMPETITIVE_AT_OR_BELOW = -12.04

#: the decision kind of an item (a template of that name in ``[llm] templates_dir`` wins)
KIND = "instrument.svo_slider"


def spaced(first: tuple[int, int], last: tuple[int, int], n: int = POINTS) -> list[tuple[int, int]]:
    """``n`` allocations evenly spaced from ``first`` to ``last``, rounded half up."""
    return [
        tuple(math.floor(a + (b - a) * k / (n - 1) + 0.5) for a, b in zip(first, last, strict=True))
        for k in range(n)
    ]


#: the nine allocations of each item, in order from its first endpoint to its last
ITEMS: tuple[tuple[tuple[int, int], ...], ...] = tuple(
    tuple(spaced(first, last)) for first, last in ENDPOINTS
)


def angle(choices: Sequence[tuple[float, float]]) -> float:
    """The SVO angle (degrees) of one allocation chosen per primary item, in item order."""
    if len(choices) != len(ITEMS):
        raise ValueError(f"the angle needs one choice for each of the {len(ITEMS)} items")
    mean_self = sum(c[0] for c in choices) / len(choices)
    mean_other = sum(c[1] for c in choices) / len(choices)
    return math.degrees(math.atan2(mean_other - 50.0, mean_self - 50.0))


def category(value: float) -> str:
    """ "altruistic", "prosocial", "individualistic" or "competitive"."""
    if value > ALTRUISTIC_ABOVE:
        return "altruistic"
    if value > PROSOCIAL_ABOVE:
        return "prosocial"
    if value > COMPETITIVE_AT_OR_BELOW:
        return "individualistic"
    return "competitive"


def option_text(allocation: tuple[int, int]) -> str:
    you, other = allocation
    return f"you get {you} and the other gets {other}"


_OPTION = re.compile(r"you get (\d+) and the other gets (\d+)")


def allocation_of(option: str) -> tuple[int, int]:
    """The allocation an option's text names."""
    m = _OPTION.fullmatch(option.strip())
    if m is None:
        raise ValueError(f"not an SVO slider option: {option!r}")
    return int(m.group(1)), int(m.group(2))


QUESTION = (
    "This is question {number} of {total}. You are paired with another person whom you do not "
    "know and will never meet; they will not learn who you are. You decide how an amount of "
    "points is split between the two of you; the points are worth the same to each of you. "
    "Here are the nine possible splits:\n{listing}\n\nWhich split do you choose?"
)


@dataclass(frozen=True)
class SVOSlider:
    """The SVO slider measure as an :class:`~mesa_dilemmas.instruments.Instrument`."""

    name: str = "svo_slider"
    title: str = "SVO slider measure (Murphy, Ackermann & Handgraaf 2011), six primary items"
    unit: str = "degrees"
    tolerance: float = 15.0
    min_samples: int = 30
    kind: str = KIND
    #: the least and the most any choice of options measures (the competitor, the altruist)
    reachable: tuple[float, float] = (-16.26, 61.39)

    def items(self) -> list[Item]:
        out = []
        for i, allocations in enumerate(ITEMS, 1):
            options = tuple(option_text(a) for a in allocations)
            listing = "\n".join(f"- {o}" for o in options)
            out.append(
                Item(i, QUESTION.format(number=i, total=len(ITEMS), listing=listing), options)
            )
        return out

    def score(self, answers: Sequence[str]) -> float:
        return angle([allocation_of(a) for a in answers])

    def category(self, value: float) -> str:
        return category(value)

    @property
    def categories(self) -> dict[str, tuple[float, float]]:
        """Each category's range of angles (the published boundaries, to the reachable ends)."""
        lo, hi = self.reachable
        return {
            "competitive": (lo, COMPETITIVE_AT_OR_BELOW),
            "individualistic": (COMPETITIVE_AT_OR_BELOW, PROSOCIAL_ABOVE),
            "prosocial": (PROSOCIAL_ABOVE, ALTRUISTIC_ABOVE),
            "altruistic": (ALTRUISTIC_ABOVE, hi),
        }


INSTRUMENT = SVOSlider()


def measure(spec: str, cases: Sequence[Any], **kwargs: Any) -> list[dict[str, Any]]:
    """Measure the SVO angle of each persona case (:class:`~mesa_dilemmas.instruments.PersonaCase`)
    with model ``spec``: the rows of :func:`mesa_dilemmas.instruments.persona_check.check`."""
    from mesa_dilemmas.instruments.persona_check import check

    return check(spec, cases, instruments=[INSTRUMENT], **kwargs)
