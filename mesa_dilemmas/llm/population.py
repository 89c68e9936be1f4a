"""The ``llm`` policy kind of a population: an LLM policy for a seat or a model-level role.

A game's prompt templates live beside the game: a model class names their directory with
``PROMPTS_DIR`` (and its decision-kind prefix with ``GAME``); they are registered the first time
a policy is built for that game, so the LLM layer never imports a game.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mesa_dilemmas.llm import make_policy
from mesa_dilemmas.llm.policy import LLMPolicy
from mesa_dilemmas.llm.prompts import register_templates

if TYPE_CHECKING:
    from mesa_dilemmas.agents.persona import Persona
    from mesa_dilemmas.agents.population import Group

_registered: set[tuple[str, str]] = set()


def register_game_prompts(model_cls: type) -> None:
    """Register a game's bundled templates (``PROMPTS_DIR``) as ``<GAME>.<kind>``, once."""
    directory = getattr(model_cls, "PROMPTS_DIR", None)
    prefix = getattr(model_cls, "GAME", "")
    if directory is None or not prefix or (prefix, str(directory)) in _registered:
        return
    register_templates(prefix, directory)
    _registered.add((prefix, str(directory)))


def build_llm_policy(
    spec: str,
    *,
    group: Group,
    model: Any,
    seat: int | None,
    persona: Persona,
) -> LLMPolicy:
    """The policy of an ``llm`` group: ``spec`` with the group's ``llm_options`` over the run's
    ``[llm]`` settings.  A role (``seat=None``) has no agent to read the run seed from, so it
    gets the model's."""
    register_game_prompts(type(model))
    run_seed = getattr(model, "run_seed", None) if seat is None else None
    return make_policy(spec, run_seed=run_seed, **group.llm_options)
