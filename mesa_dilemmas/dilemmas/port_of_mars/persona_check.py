"""Port of Mars's personas for ``mesa-dilemmas personas check`` (entry point group
``mesa_dilemmas.personas``): the bundled personas, the words an LLM player is told about each
(:func:`.text.persona_text`, exactly what the game's prompts carry) and what each should measure.

The SVO personas: every angle a bundled scenario seats (paper 001's set and the wide set), each
with its angle as the SVO slider target (a value, within the instrument's 15 degrees).

The cultural groups: the two axes of the cultural-orientation scale (``culture_individualism``,
``culture_hierarchy``), each a category read off the group's name (hierarchical / egalitarian,
individualist / communitarian), and the SVO category of the group's SVO-equivalent angle
(:data:`.personas.CULTURAL_PRESETS`: what the rule players encode; individualistic for the two
individualists, prosocial for the two communitarians).

The trait sets: the prosociality battery (``prosocial`` for the cooperative set, ``proself`` for
the selfish one) and the SVO category of the set's angle (altruistic 75, competitive -35)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.dilemmas.port_of_mars.persona import CrewPersona, svo_category
from mesa_dilemmas.dilemmas.port_of_mars.personas import (
    CULTURAL_GROUPS,
    CULTURAL_PRESETS,
    TRAIT_PRESETS,
    cultural_persona,
    svo_persona,
    trait_persona,
)
from mesa_dilemmas.dilemmas.port_of_mars.personas import (
    persona_label as _label,
)
from mesa_dilemmas.dilemmas.port_of_mars.text import persona_text

SCENARIOS = Path(__file__).parent / "scenarios"


def _numbers(value: Any) -> list[float]:
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [float(value)] if isinstance(value, int | float) else []


def bundled_svo_angles() -> list[float]:
    """Every SVO angle the bundled scenarios seat (their ``svo_angles``, as a value or a grid)."""
    found: set[float] = set()
    for path in sorted(SCENARIOS.glob("*.toml")):
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        for table in (raw.get("params", {}), raw.get("grid", {})):
            found.update(_numbers(table.get("svo_angles", [])))
    return sorted(found)


def personas() -> list[Persona]:
    """The SVO personas of the bundled scenarios, the four cultural groups, the two trait sets."""
    return [
        *(svo_persona(a) for a in bundled_svo_angles()),
        *(cultural_persona(g) for g in CULTURAL_GROUPS),
        *(trait_persona(t) for t in sorted(TRAIT_PRESETS)),
    ]


def persona_label(persona: Persona) -> str:
    """``svo-15``, a cultural group, a trait set (what the game's tables group by)."""
    return _label(persona)


def persona_prompt(persona: Persona) -> str:
    """What the game tells an LLM player about this persona (scale and own angle)."""
    return persona_text(persona)


def persona_targets(persona: Persona) -> dict[str, float | str]:
    """Instrument name -> the value (a number) or the category (a string) this persona should
    measure."""
    if not isinstance(persona, CrewPersona):
        return {}
    if persona.svo_angle is not None:
        return {"svo_slider": float(persona.svo_angle)}
    if persona.cultural_group in CULTURAL_PRESETS:
        grid, group = persona.cultural_group.split("-")
        angle, _ = CULTURAL_PRESETS[persona.cultural_group]
        return {
            "culture_individualism": "individualist"
            if group == "individualist"
            else "communitarian",
            "culture_hierarchy": "hierarchical" if grid == "hierarchical" else "egalitarian",
            "svo_slider": svo_category(angle),
        }
    trait_set = persona.extra.get("trait_set")
    if trait_set in TRAIT_PRESETS:
        angle, _ = TRAIT_PRESETS[trait_set]
        return {
            "prosociality": "prosocial" if trait_set == "cooperative" else "proself",
            "svo_slider": svo_category(angle),
        }
    return {}
