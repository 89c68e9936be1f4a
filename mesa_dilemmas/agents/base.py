"""The one agent class every game uses: a Mesa agent holding a persona and a policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mesa

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy

if TYPE_CHECKING:
    from mesa_dilemmas.agents.decisions import Decision


class DilemmaAgent(mesa.Agent):
    """A player: identity (``unique_id``, its seat ``slot``), persona and policy.  A game
    subclasses it to keep the player's own state on the agent, so the DataCollector and the
    dashboard read ordinary Mesa agents; a fast array engine (``dilemmas/<game>/vector.py``)
    is separate and tested equal to the model."""

    def __init__(self, model: mesa.Model, policy: Policy, persona: Persona | None = None):
        super().__init__(model)
        self.persona = persona or Persona()
        self.policy = policy
        self.slot: int = -1
        policy.bind(self)

    @property
    def policy_name(self) -> str:
        return self.policy.name

    def ask(self, decision: Decision) -> Any:
        """Answer one decision through the model's broker (counted and validated)."""
        return self.model.broker.ask(decision)
