"""Instruments: standard questionnaires put to an LLM in a persona's words (a manipulation check).

A game says "you are prosocial" and assumes the model then is.  An instrument measures it: the
persona's words go in the system prompt, exactly as the game tells its players, and the
instrument's items are asked as decisions (one :class:`~mesa_dilemmas.agents.decisions.ChoiceSpec`
each), many samples per persona; the measured value is compared with the persona's target.

Two registries, both open:

``INSTRUMENTS``
    instrument name -> ``"module:attr"`` of an :class:`Instrument` (the SVO slider measure,
    :mod:`mesa_dilemmas.instruments.svo_slider`); more instruments are added here.
entry point group ``mesa_dilemmas.personas``
    game name -> a module of the game's own package with ``personas()`` (its bundled personas,
    instances of its model's ``PERSONA``), ``persona_prompt(persona)`` (the words the game's
    LLM players are told about that persona) and ``persona_targets(persona)`` (instrument name
    -> the value the persona should measure).  A game that is not installed with that entry
    point may keep the same module as ``persona_check.py`` beside its model module.

This module stays light (no Mesa, no LLM layer): ``mesa-dilemmas --help`` reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

PERSONAS_GROUP = "mesa_dilemmas.personas"

#: instrument name -> where its :class:`Instrument` lives
INSTRUMENTS: dict[str, str] = {
    "svo_slider": "mesa_dilemmas.instruments.svo_slider:INSTRUMENT",
}


@dataclass(frozen=True)
class Item:
    """One question of an instrument: its text and its answer options (one is chosen)."""

    number: int
    text: str
    options: tuple[str, ...]


class Instrument(Protocol):
    """What the persona check needs of an instrument."""

    name: str
    title: str
    #: the unit of its value ("degrees")
    unit: str
    #: the largest distance from the target that passes
    tolerance: float
    #: fewest valid samples a verdict needs
    min_samples: int

    def items(self) -> Sequence[Item]: ...

    def score(self, answers: Sequence[str]) -> float:
        """One sample's value from its answers (one option per item, in item order)."""
        ...

    def category(self, value: float) -> str: ...


@dataclass(frozen=True)
class PersonaCase:
    """One persona as an instrument meets it: its label, the system prompt (the game's own
    persona wording) and its targets (instrument name -> value)."""

    game: str
    label: str
    prompt: str
    targets: dict[str, float] = field(default_factory=dict)


def load_instrument(name: str) -> Instrument:
    from mesa_dilemmas.plugins import load_object

    if name not in INSTRUMENTS:
        raise LookupError(f"unknown instrument {name!r}; known: {', '.join(INSTRUMENTS)}")
    return load_object(INSTRUMENTS[name])


def persona_module(game: str) -> Any | None:
    """The game's persona hook (see the module docstring), or None when it has none."""
    from importlib import import_module

    from mesa_dilemmas.dilemmas.registry import extensions, game_model

    entry = extensions(PERSONAS_GROUP).get(game)
    if entry is not None:
        return entry.load()
    package = game_model(game).__module__.rpartition(".")[0]
    if not package:  # a game in a top-level module has no folder to look in
        return None
    try:
        return import_module(f"{package}.persona_check")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.persona_check":
            raise
        return None


def persona_games() -> list[str]:
    """The registered games that have bundled personas to check."""
    from mesa_dilemmas.dilemmas.registry import UnknownGame, games

    out = []
    for game in games():
        try:
            if persona_module(game) is not None:
                out.append(game)
        except UnknownGame:
            continue
    return out


def persona_cases(game: str) -> list[PersonaCase]:
    """A game's bundled personas as :class:`PersonaCase` (checked to be its model's
    ``PERSONA``; labelled by the persona's own ``label()``)."""
    from mesa_dilemmas.dilemmas.registry import game_model

    hook = persona_module(game)
    if hook is None:
        raise LookupError(f"game {game!r} has no personas to check (no persona hook)")
    persona_type = getattr(game_model(game), "PERSONA", None)
    out = []
    for persona in hook.personas():
        if persona_type is not None and not isinstance(persona, persona_type):
            raise TypeError(f"{game}: {persona!r} is not the game's {persona_type.__name__}")
        out.append(
            PersonaCase(
                game=game,
                label=persona.label(),
                prompt=hook.persona_prompt(persona),
                targets={k: float(v) for k, v in hook.persona_targets(persona).items()},
            )
        )
    return out
