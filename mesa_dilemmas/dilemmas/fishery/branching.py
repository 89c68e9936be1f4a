"""What a branch of a fishery run changes beside ``model.p`` (see ``mesa-dilemmas branch``).

* A seat swapped between a rule villager and a language (LLM) villager changes what its norms
  are: a language villager's are text (its persona's strategy, or one drawn for its
  disposition), a rule villager's are numbers.
* A message becomes the community's norm: the shared policy every villager is shown from then
  on (as if the group had voted it; a cap it states in fish becomes the group's cap), in the norm history with the round it was put there.

The lake, the group and the initial strategies are drawn when a run starts; a branch refuses
to change the parameters that only shape them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

#: parameters read only when a run starts (a branch refuses to change them)
FIXED_PARAMS = (
    "n_agents",
    "initial_stock",
    "initial_wealth",
    "population",
    "altruism_ratio",
    "punisher_profile",
    "monitoring_min",
    "monitoring_max",
    "players",
)


def swap_seat(model: Any, villager: Any, policy: Any, persona: Any) -> None:
    """Seat ``policy`` at ``villager``'s seat; its norms become text for a language model."""
    from mesa_dilemmas.dilemmas.fishery.language import initial_strategy

    language = bool(getattr(policy, "reads_text", False))
    if language and not villager.language:
        text = persona.strategy_text or initial_strategy(persona.disposition, model.rng)
        persona = replace(persona, strategy_text=text)
        villager.norm_text = text
    elif not language:
        villager.norm_text = None
    villager.language = language
    villager.persona = persona
    villager.policy = policy
    policy.bind(villager)


def inject_message(model: Any, text: str) -> None:
    """``text`` becomes the community's norm from the next round on."""
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("message: empty")
    from mesa_dilemmas.dilemmas.fishery.norms import stated_cap

    model.shared_policy = text
    cap = stated_cap(text)
    if cap is not None:  # a norm that states a cap in fish sets the group's cap, as a vote does
        model.group_norm = cap
    model.norm_history.append((model.round, text))
