"""The fishery's personas for ``mesa-dilemmas personas check`` (entry point group
``mesa_dilemmas.personas``): the villager dispositions of the norms paper, the words an LLM
villager is told about each (:meth:`.persona.VillagerPersona.identity`, exactly what the game's
prompts carry) and what each should measure on the prosociality battery.

``altruistic`` should measure ``prosocial`` and ``selfish`` ``proself``.  ``general`` says
nothing about the villager (its prompt adds no sentence): it claims no disposition, so it has no
target and is not checked; a model's own baseline is what the check of a persona-less prompt
would measure, not a manipulation."""

from __future__ import annotations

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.dilemmas.fishery.persona import DISPOSITION_SENTENCES, VillagerPersona

#: disposition -> its category on the prosociality battery
TARGETS: dict[str, str] = {"altruistic": "prosocial", "selfish": "proself"}


def personas() -> list[Persona]:
    return [VillagerPersona(disposition=d) for d in DISPOSITION_SENTENCES]  # type: ignore[arg-type]


def persona_prompt(persona: Persona) -> str:
    """What the game tells an LLM villager about this disposition (empty for ``general``)."""
    return " ".join(persona.identity())


def persona_targets(persona: Persona) -> dict[str, str]:
    if isinstance(persona, VillagerPersona) and persona.disposition in TARGETS:
        return {"prosociality": TARGETS[persona.disposition]}
    return {}
