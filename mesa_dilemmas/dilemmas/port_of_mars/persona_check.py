"""Port of Mars's personas for ``mesa-dilemmas personas check`` (entry point group
``mesa_dilemmas.personas``): the bundled personas, the words an LLM player is told about each
(:func:`.text.persona_text`, exactly what the game's prompts carry) and what each should measure.

For now the SVO personas only: every angle a bundled scenario seats (paper 001's set and the
wide set), each with its angle as the SVO slider target.  Cultural groups and trait sets wait
for their instruments."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.dilemmas.port_of_mars.persona import CrewPersona
from mesa_dilemmas.dilemmas.port_of_mars.personas import svo_persona
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
    return [svo_persona(a) for a in bundled_svo_angles()]


def persona_prompt(persona: Persona) -> str:
    """What the game tells an LLM player about this persona (scale and own angle)."""
    return persona_text(persona)


def persona_targets(persona: Persona) -> dict[str, float]:
    """Instrument name -> the value this persona should measure."""
    if isinstance(persona, CrewPersona) and persona.svo_angle is not None:
        return {"svo_slider": float(persona.svo_angle)}
    return {}
