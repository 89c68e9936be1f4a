"""Personas: data attached to an agent that both rule and LLM policies read.

A rule policy maps a persona to numbers (an SVO angle to a health-spend share,
"altruistic" to a low fishing effort); an LLM policy renders the same fields
into its system prompt.  Nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Disposition = Literal["general", "altruistic", "selfish"]

#: Social Value Orientation categories by angle (degrees), the standard boundaries of
#: Murphy, Ackermann & Handgraaf (2011), as paper 001 uses them: altruistic above 57.15,
#: prosocial above 22.45 up to 57.15, individualistic above -12.04 up to 22.45, competitive
#: at -12.04 and below.  A boundary angle belongs to the category below it.
SVO_COMPETITIVE_BELOW = -12.04
SVO_PROSOCIAL_ABOVE = 22.45
SVO_ALTRUISTIC_ABOVE = 57.15


def svo_category(angle: float) -> str:
    """The SVO category of an angle: "altruistic", "prosocial", "individualistic" or
    "competitive" (the one category function of the project; boundaries above)."""
    if angle > SVO_ALTRUISTIC_ABOVE:
        return "altruistic"
    if angle > SVO_PROSOCIAL_ABOVE:
        return "prosocial"
    if angle > SVO_COMPETITIVE_BELOW:
        return "individualistic"
    return "competitive"


@dataclass(frozen=True)
class Persona:
    """Who an agent is, as far as any policy is concerned.

    ``disposition``: the norms paper's general / altruistic / selfish types.
    ``svo_angle``: social value orientation in degrees (paper 001).
    ``cultural_group``: e.g. "hierarchical-individualist" (paper 001, Sec. 4.1).
    ``traits``: free-form trait words ("cooperative", "selfish", ...).
    ``strategy_text``: an initial personal strategy in natural language.
    """

    disposition: Disposition = "general"
    svo_angle: float | None = None
    cultural_group: str | None = None
    traits: tuple[str, ...] = ()
    strategy_text: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        if self.svo_angle is not None:
            return f"svo{self.svo_angle:g}"
        if self.cultural_group:
            return self.cultural_group
        return self.disposition
