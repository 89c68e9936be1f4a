"""The fishery's persona: the norms paper's villager dispositions on the shared base."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mesa_dilemmas.agents.persona import Persona

Disposition = Literal["general", "altruistic", "selfish"]

#: what a disposition says in a prompt without wording of its own ("general" says nothing)
DISPOSITION_SENTENCES: dict[str, str] = {
    "general": "",
    "altruistic": "You care about the welfare of the whole group and about the future as much "
    "as about your own payoff.",
    "selfish": "You care mainly about your own payoff.",
}


@dataclass(frozen=True)
class VillagerPersona(Persona):
    """A villager: ``disposition`` is the general / altruistic / selfish type (Table 3)."""

    disposition: Disposition = "general"

    def label(self) -> str:
        return self.disposition

    def identity(self) -> list[str]:
        sentence = DISPOSITION_SENTENCES.get(self.disposition, "")
        return [sentence] if sentence else []
