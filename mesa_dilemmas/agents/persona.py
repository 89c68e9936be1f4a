"""Personas: data attached to an agent that both rule and LLM policies read.

A rule policy maps a persona to numbers (an SVO angle to a health-spend share,
"altruistic" to a low fishing effort); an LLM policy renders the same fields
into its system prompt.  Nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Disposition = Literal["general", "altruistic", "selfish"]


@dataclass(frozen=True)
class Persona:
    """Who an agent is, as far as any policy is concerned.

    ``disposition``: the norms paper's general / altruistic / selfish types.
    ``svo_angle``: social value orientation in degrees (Port of Mars, paper 001).
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
