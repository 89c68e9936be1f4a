"""Port of Mars's persona: paper 001's SVO angles and cultural groups on the shared base."""

from __future__ import annotations

from dataclasses import dataclass

from mesa_dilemmas.agents.persona import Persona

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
class CrewPersona(Persona):
    """A Port of Mars player: ``svo_angle`` in degrees (Sec. 4.2) and ``cultural_group``,
    e.g. "hierarchical-individualist" (Sec. 4.1); trait sets use the shared ``traits``."""

    svo_angle: float | None = None
    cultural_group: str | None = None

    def label(self) -> str:
        if self.svo_angle is not None:
            return f"svo{self.svo_angle:g}"
        if self.cultural_group:
            return self.cultural_group
        return "general"

    def identity(self) -> list[str]:
        parts = []
        if self.svo_angle is not None:
            parts.append(
                f"Your social value orientation (SVO) angle is {self.svo_angle:g} degrees "
                f"({svo_category(self.svo_angle)})."
            )
        if self.cultural_group:
            parts.append(f"Your cultural group: {self.cultural_group}.")
        return parts
