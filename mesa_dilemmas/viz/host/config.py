"""A hosted session's scenario: an ordinary scenario with ``human`` seats and a ``[host]`` table.

::

    name = "four_people"
    game = "<game>"
    seed = 1
    max_steps = 5
    params = { rounds = 5 }

    [population]
    groups = [{ human = "participant", count = 4 }]

    [host]
    groups = 2                 # groups played side by side, each a model of its own
    time_limit_s = 60          # per decision
    on_timeout = "wait"        # "wait" | "stop" | "fallback" (mesa_dilemmas.agents.human)
    consent = "..."            # shown first; the person agrees before anything else
    instructions = "..."       # shown next, before the waiting room
    autostart = false          # start a group as soon as all its people are ready

Bundled hosted scenarios live in a registered game's ``hosted/`` folder beside its
``scenarios/`` (``<game>/hosted/<name>.toml`` is ``<game>/<name>``): they seat people, so
``mesa-dilemmas run`` (which cannot) does not list them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mesa_dilemmas.scenarios.config import ConfigError


class HostSettings(BaseModel):
    """The ``[host]`` table."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    title: str = ""
    groups: Annotated[int, Field(ge=1, le=50)] = 1
    time_limit_s: Annotated[float, Field(gt=0, le=86_400)] | None = 60.0
    on_timeout: Literal["wait", "stop", "fallback"] = "wait"
    consent: str = (
        "This is a research game. You play with other people and with computer players. "
        "No personal data is collected: you are known only by a number for this session. "
        "You may stop at any time."
    )
    instructions: str = "Each round you make a decision. Read what you see, then answer."
    autostart: bool = False


def hosted_scenarios() -> dict[str, Path]:
    """Bundled hosted scenarios: ``<game>/<name>`` -> the file in the game's ``hosted/``."""
    from mesa_dilemmas.scenarios.config import bundled_scenarios

    return bundled_scenarios("hosted")


def read_hosted(name_or_path: str) -> dict[str, Any]:
    """The raw TOML of a hosted scenario (bundled name or file path)."""
    bundled = hosted_scenarios()
    path = bundled.get(name_or_path)
    if path is None:
        path = Path(name_or_path)
        if not path.is_file():
            raise ConfigError(
                f"scenario {name_or_path!r}: no such hosted scenario or file; "
                f"bundled: {', '.join(bundled) or 'none'}"
            )
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"scenario {name_or_path!r}: cannot read it: {exc}") from None
    raw.setdefault(
        "name", name_or_path.replace("/", "-") if path in bundled.values() else path.stem
    )
    return raw


class Hosted(BaseModel):
    """A hosted scenario, checked: the scenario without its people, the people, the host."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    scenario: Any
    population: dict[str, Any]
    host: HostSettings
    raw: dict[str, Any]

    @property
    def params(self) -> dict[str, Any]:
        return {**self.scenario.params, "players": self.population}


def load_hosted(name_or_path: str, overrides: list[str] | None = None) -> Hosted:
    """Read and check a hosted scenario; every problem is one :class:`ConfigError` line."""
    from mesa_dilemmas.scenarios.config import apply_overrides, validate

    raw = apply_overrides(read_hosted(name_or_path), overrides or [])
    body = dict(raw)
    try:
        host = HostSettings.model_validate(body.pop("host", {}))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"host.{where}: {first['msg']}") from None
    population = body.pop("population", None)
    if not population or not any("human" in g for g in population.get("groups", [])):
        raise ConfigError(
            'population: a hosted session seats people: add a group { human = "NAME", count = N }'
        )
    # the rest is an ordinary scenario; the people are checked apart (a game's POLICY_KINDS
    # do not name them) and the non-human groups as in any scenario
    body.pop("experiment", None)
    body.pop("grid", None)
    scenario, _ = validate(body)
    from mesa_dilemmas.agents.population import population_table
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.scenarios.population_check import check_population

    try:
        population_table(population)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    others = {
        **population,
        "groups": [g for g in population.get("groups", []) if "human" not in g],
    }
    model_cls = game_model(scenario.game)
    if others["groups"] or others.get("roles"):
        problems = check_population(model_cls, others)
        if problems:
            raise ConfigError(problems[0])
    return Hosted(scenario=scenario, population=population, host=host, raw=raw)
