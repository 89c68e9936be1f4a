"""The one agent class every game uses: a Mesa agent holding a persona and a policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mesa

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy

if TYPE_CHECKING:
    from mesa_dilemmas.agents.decisions import Decision


class DilemmaAgent(mesa.Agent):
    """A player. Game state lives on the model (often in numpy arrays indexed by
    ``slot``); the agent carries identity, persona and policy, so the dashboard
    and the DataCollector see ordinary Mesa agents."""

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
