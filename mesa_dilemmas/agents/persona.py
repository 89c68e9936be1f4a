"""Personas: data attached to an agent that both rule and LLM policies read.

A rule policy maps a persona to numbers (an SVO angle to a health-spend share, "altruistic"
to a low fishing effort); an LLM policy renders the same fields into its system prompt.
Nothing here decides anything, and nothing here belongs to one paper: :class:`Persona` holds
what any game's players may carry (trait words, a strategy in words, free extras).  A game
whose players carry more -- a disposition, a social value orientation, a cultural group --
subclasses it in its own folder, adds its fields and their sentences
(:meth:`Persona.identity`), and names the subclass as its model's ``PERSONA``; a
``[population]`` group's ``persona = { ... }`` table may then set those fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Persona:
    """Who an agent is, as far as any policy is concerned (the fields every game shares).

    ``traits``: free-form trait words ("cooperative", "selfish", ...).
    ``strategy_text``: an initial personal strategy in natural language.
    ``extra``: anything else a game or a population attaches (``name``, a preset's key, ...).
    """

    traits: tuple[str, ...] = ()
    strategy_text: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The fields a population's ``persona = { ... }`` table may set for this persona."""
        return tuple(f.name for f in fields(cls))

    def label(self) -> str:
        """A short label for tables and figures ("general" unless a game says more)."""
        return "general"

    def identity(self) -> list[str]:
        """The game's own persona fields as second-person sentences (none here)."""
        return []

    def sentences(self) -> list[str]:
        """The persona as second-person sentences, for a prompt that has no wording of its own:
        the name, the game's fields (:meth:`identity`), the traits, the strategy."""
        parts = []
        name = self.extra.get("name") if self.extra else None
        if name:
            parts.append(f"Your name is {name}.")
        parts += self.identity()
        if self.traits:
            parts.append("Your personality traits: " + ", ".join(self.traits) + ".")
        if self.strategy_text:
            parts.append("Your strategy: " + self.strategy_text.strip())
        return parts
