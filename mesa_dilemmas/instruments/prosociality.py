"""A forced-choice prosociality battery: eight allocation and donation dilemmas.

Each item sets one option that costs the chooser something and gives others more (a split with
a larger joint payoff, a donation, a contribution to a group fund, restraint at a shared
resource) against one that keeps more for the chooser.  The form follows the standard
decomposed-game and dictator-style allocation tasks of the social-preference literature; the
items are our own words and numbers, written for this project.

A sample's value is the prosociality index: the share of the eight items on which the
prosocial option was chosen, in [0, 1].  Categories: ``proself`` below 0.35, ``prosocial``
above 0.65, ``mixed`` between.  The prosocial option is listed first on odd items and second
on even ones, so a respondent that always takes the first (or the last) option measures 0.5:
``mixed``, never a category it did not choose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mesa_dilemmas.instruments import Item

#: (situation, prosocial option, proself option); points are worth the same to everyone
DILEMMAS: tuple[tuple[str, str, str], ...] = (
    (
        "You decide how some points are split between you and a person you will never meet.",
        "you get 60 points and the other person gets 60",
        "you get 80 points and the other person gets 20",
    ),
    (
        "You have just won 100 points.",
        "give 30 of them to a fund that helps people in need and keep 70",
        "keep all 100 points",
    ),
    (
        "You are one of four members of a group. Each member holds 20 points. Every point put "
        "into a shared project becomes 2 points, divided equally among all four members.",
        "put your 20 points into the shared project",
        "keep your 20 points for yourself",
    ),
    (
        "You fish in a pond that your whole village depends on. Taking more than a share leaves "
        "fewer fish for everyone next year.",
        "take 3 fish, your share, and leave the pond healthy",
        "take 8 fish, more than your share",
    ),
    (
        "You decide how some points are split between you and a person you will never meet.",
        "you get 50 points and the other person gets 50",
        "you get 55 points and the other person gets 10",
    ),
    (
        "You can pay 10 of your points so that another person receives 30 points.",
        "pay the 10 points",
        "keep your 10 points",
    ),
    (
        "A payment system made a mistake in your favour: you were paid 20 points that belong "
        "to a shared group account. Nobody would notice if you kept them.",
        "return the 20 points to the group account",
        "keep the 20 points",
    ),
    (
        "You decide how some points are split between you and a person you will never meet.",
        "you get 70 points and the other person gets 70",
        "you get 75 points and the other person gets 30",
    ),
)

PROSOCIAL_ABOVE = 0.65
PROSELF_BELOW = 0.35

QUESTION = "This is choice {number} of {total}. {situation}\n\nThe options:\n{listing}\n\nWhich do you choose?"


def options_of(number: int) -> tuple[str, str]:
    """Item ``number``'s two options in the order shown: the prosocial one first on odd items."""
    _, pro, self_ = DILEMMAS[number - 1]
    return (pro, self_) if number % 2 == 1 else (self_, pro)


@dataclass(frozen=True)
class Prosociality:
    """The battery as an :class:`~mesa_dilemmas.instruments.Instrument`."""

    name: str = "prosociality"
    title: str = "prosociality index, eight forced-choice allocation and donation dilemmas"
    unit: str = "share of prosocial choices"
    tolerance: float = 0.2
    min_samples: int = 30
    kind: str = "instrument.prosociality"
    reachable: tuple[float, float] = (0.0, 1.0)

    @property
    def categories(self) -> dict[str, tuple[float, float]]:
        return {
            "proself": (0.0, PROSELF_BELOW),
            "mixed": (PROSELF_BELOW, PROSOCIAL_ABOVE),
            "prosocial": (PROSOCIAL_ABOVE, 1.0),
        }

    def items(self) -> list[Item]:
        out = []
        for i, (situation, _, _) in enumerate(DILEMMAS, 1):
            options = options_of(i)
            listing = "\n".join(f"- {o}" for o in options)
            text = QUESTION.format(
                number=i, total=len(DILEMMAS), situation=situation, listing=listing
            )
            out.append(Item(i, text, options))
        return out

    def score(self, answers: Sequence[str]) -> float:
        if len(answers) != len(DILEMMAS):
            raise ValueError(f"prosociality: needs one answer for each of the {len(DILEMMAS)}")
        pro = [a == d[1] for a, d in zip(answers, DILEMMAS, strict=True)]
        return sum(pro) / len(pro)

    def category(self, value: float) -> str:
        if value > PROSOCIAL_ABOVE:
            return "prosocial"
        if value < PROSELF_BELOW:
            return "proself"
        return "mixed"


INSTRUMENT = Prosociality()
