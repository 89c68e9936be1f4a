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
    -> its :class:`Target`: a value, with the instrument's tolerance or its own, or a
    category; a bare number is a value).  A hook may also define ``persona_label(persona)``
    (default: the persona's ``label()``).  A game that is not installed with that entry
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
    "culture_individualism": "mesa_dilemmas.instruments.culture:INDIVIDUALISM_AXIS",
    "culture_hierarchy": "mesa_dilemmas.instruments.culture:HIERARCHY_AXIS",
    "prosociality": "mesa_dilemmas.instruments.prosociality:INSTRUMENT",
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
class Target:
    """What a persona should measure on one instrument: a ``value`` (passing within
    ``tolerance``, default the instrument's) or a ``category`` (passing when the mean measures
    in it)."""

    value: float | None = None
    category: str | None = None
    tolerance: float | None = None

    def __post_init__(self) -> None:
        if (self.value is None) == (self.category is None):
            raise ValueError("a target is a value or a category, exactly one")

    def __str__(self) -> str:
        if self.category is not None:
            return self.category
        tol = "" if self.tolerance is None else f" +/- {self.tolerance:g}"
        return f"{self.value:g}{tol}"


def as_target(value: Target | float | str) -> Target:
    """A hook's target: a :class:`Target`, a number (a value) or a string (a category)."""
    if isinstance(value, Target):
        return value
    if isinstance(value, str):
        return Target(category=value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a target is a number, a category or a Target, not {value!r}")
    return Target(value=float(value))


def category_ranges(instrument: Instrument) -> dict[str, tuple[float, float]]:
    """Each category of an instrument and its range of values (the instrument's
    ``categories``, e.g. the SVO slider's published boundaries; none: no categories)."""
    return dict(getattr(instrument, "categories", None) or {})


def target_window(instrument: Instrument, target: Target) -> tuple[float, float]:
    """The values that pass ``target`` on ``instrument``: value +/- tolerance, or the
    category's range."""
    if target.category is not None:
        ranges = category_ranges(instrument)
        if target.category not in ranges:
            known = ", ".join(ranges) or "none"
            raise ValueError(
                f"{instrument.name}: unknown category {target.category!r}; known: {known}"
            )
        return ranges[target.category]
    tol = instrument.tolerance if target.tolerance is None else target.tolerance
    assert target.value is not None
    return target.value - tol, target.value + tol


@dataclass(frozen=True)
class PersonaCase:
    """One persona as an instrument meets it: its label, the system prompt (the game's own
    persona wording) and its targets (instrument name -> :class:`Target`, or a number)."""

    game: str
    label: str
    prompt: str
    targets: dict[str, Any] = field(default_factory=dict)

    def target(self, instrument: str) -> Target:
        return as_target(self.targets[instrument])


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
        label_of = getattr(hook, "persona_label", None)
        out.append(
            PersonaCase(
                game=game,
                label=label_of(persona) if label_of else persona.label(),
                prompt=hook.persona_prompt(persona),
                targets={k: as_target(v) for k, v in hook.persona_targets(persona).items()},
            )
        )
    labels = [c.label for c in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{game}: two bundled personas share a label ({', '.join(labels)})")
    return out
