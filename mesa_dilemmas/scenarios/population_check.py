"""A scenario's ``[population]`` checked against its game before anything runs or is written:
every mistake one line naming the group and what is allowed.

The population's own schema (``agents/population.py``) checks its shape; this checks it against
the game: the kinds of group the game can seat (``POLICY_KINDS``), its rule players' names
(``rule_players()``), that a factory can be imported and called as ``f(model=, seat=,
persona=)``, that a strategy resolves (the game's ``check_strategy``), that an LLM group's
``llm_options`` are settings, and that persona fields hold allowed values.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.population import Group, Population, load_object


def check_population(model_cls: type, table: Any, where: str = "population") -> list[str]:
    """Problems of ``table`` for ``model_cls``, each one line (empty: none)."""
    try:
        population = Population.coerce(table)
    except Exception:  # noqa: BLE001 - the schema check reports the shape in its own words
        return []
    problems: list[str] = []
    groups = [(f"{where}.groups[{i}]", g) for i, g in enumerate(population.groups)]
    groups += [(f"{where}.roles.{name}", g) for name, g in population.roles.items()]
    fractions = sum(g.fraction or 0.0 for g in population.groups)
    if fractions > 1.0 + 1e-9:
        problems.append(
            f"{where}.groups: the fractions add up to {fractions:g}, more than the whole group (1)"
        )
    kinds = tuple(getattr(model_cls, "POLICY_KINDS", ("rule", "llm", "strategy", "factory")))
    rules = rule_players(model_cls)
    for at, group in groups:
        problem = _group_problem(model_cls, group, kinds, rules)
        if problem:
            problems.append(f"{at}: {problem}")
    return problems


def rule_players(model_cls: type) -> Mapping[str, Any]:
    """The game's rule players by name (``{}`` when it declares none)."""
    found = getattr(model_cls, "rule_players", None)
    return dict(found()) if callable(found) else {}


def _group_problem(
    model_cls: type, group: Group, kinds: tuple[str, ...], rules: Mapping[str, Any]
) -> str | None:
    if group.seats == []:
        return "seats: give at least one seat (or leave seats out)"
    problem = _persona_problem(group.persona, getattr(model_cls, "PERSONA", Persona))
    if problem:
        return problem
    if group.kind == "human":  # a person answers from a browser page: a hosted session
        return (
            f"human = {group.value!r}: people sit at hosted sessions; start one with "
            "`mesa-dilemmas host SCENARIO` (`mesa-dilemmas run` cannot seat them)"
        )
    if group.kind not in kinds:
        return (
            f"{group.kind} = {group.value!r}: this game seats no {group.kind} players; "
            f"allowed kinds: {', '.join(kinds)}"
        )
    if group.kind == "rule" and rules and group.value not in rules:
        return f"rule = {group.value!r}: unknown rule player; allowed: {', '.join(rules)}"
    if group.kind == "factory":
        return _factory_problem(group.value)
    if group.kind == "strategy":
        check = getattr(model_cls, "check_strategy", None)
        if check is not None:
            try:
                check(group.value)
            except Exception as exc:  # noqa: BLE001 - user specs and files fail in any way
                return f"strategy = {group.value!r}: {' '.join(str(exc).split())}"
    if group.kind == "llm" and group.llm_options:
        return _llm_options_problem(group.llm_options)
    return None


def _persona_problem(persona: Mapping[str, Any], persona_type: type[Persona]) -> str | None:
    """What is wrong with a group's ``persona`` table for the game's persona type."""
    unknown = sorted(set(persona) - set(persona_type.field_names()))
    if unknown:
        return (
            f"persona: unknown field {unknown[0]!r} for this game's players; "
            f"allowed: {', '.join(persona_type.field_names())}"
        )
    hints = typing.get_type_hints(persona_type)
    for field in fields(persona_type):
        if field.name not in persona:
            continue
        allowed = typing.get_args(hints[field.name])
        if typing.get_origin(hints[field.name]) is typing.Literal and (
            persona[field.name] not in allowed
        ):
            return (
                f"persona.{field.name}: {persona[field.name]!r} is not one of "
                f"{', '.join(map(str, allowed))}"
            )
    return None


def _factory_problem(path: str) -> str | None:
    if ":" not in path or path.startswith("."):
        return f"factory = {path!r}: give 'package.module:callable' (absolute module names)"
    try:
        factory = load_object(path)
    except Exception as exc:  # noqa: BLE001 - a user module can fail in any way on import
        return f"factory = {path!r}: cannot load it: {' '.join(str(exc).split())}"
    if not callable(factory):
        return f"factory = {path!r}: is a {type(factory).__name__}, not a callable"
    try:
        inspect.signature(factory).bind(model=None, seat=0, persona=Persona())
    except TypeError:
        return f"factory = {path!r}: must accept f(model=, seat=, persona=)"
    except ValueError:  # no signature to read (a builtin): it is called and checked at run time
        return None
    return None


def _llm_options_problem(options: Mapping[str, Any]) -> str | None:
    from mesa_dilemmas.llm import LLMSettings

    allowed = sorted(LLMSettings.model_fields)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        return f"llm_options.{unknown[0]}: unknown setting; allowed: {', '.join(allowed)}"
    return None
