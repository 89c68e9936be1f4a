"""Who plays: a population described as data, whose policies are built outside the games.

A game never decides on its own which of its seats is an LLM, a rule or a strategy, and it never
imports the LLM layer.  It receives a :class:`Population` (plain data: a scenario's
``[population]`` table, or the same structure in Python) and asks it, seat by seat, for a
policy.  The population builds each policy through a *policy kind*:

``rule``
    the game's own rule players; the value names one of them (``"rule"``, ``"reference_bot"``,
    ``"random"``, ...: each game lists its ``RULES``).
``llm``
    an LLM spec (``"local"``, ``"openai:gpt-4o"``, ``"anthropic:claude-..."``,
    ``"openai:MODEL@http://host/v1"``, ``"replay:local"``); built by :mod:`mesa_dilemmas.llm`.
``strategy``
    a strategy spec of the binary games (``"allc"``, ``"cc(2)"``, ``"SET:NAME"``).
``factory``
    ``"package.module:callable"`` called as ``f(model=, seat=, persona=)`` and returning a
    :class:`~mesa_dilemmas.agents.policy.Policy`.
``human``
    a person at the table, in a session served by ``mesa-dilemmas host``; the value labels the
    seats (``"participant"``).  Built by :mod:`mesa_dilemmas.agents.human`, which posts each
    decision to the seat's inbox on the host's hub; a run without a host refuses it.

Kinds are an open registry: built-in ones below, more from installed packages through the entry
point group ``mesa_dilemmas.policies`` (name -> ``"module:builder"``).

How many play what: a group has ``count``, ``fraction`` (of the game's players) or explicit
``seats``.  Counted groups sit on seats drawn from the model's generator (``placement =
"random"``) or on the first free seats (``"first"``); seats no group claims are played by the
game's default rule player.  ``roles`` hold model-level policies, e.g. a game's meeting
writer (``roles.meeting``).

Example (TOML)::

    [population]
    placement = "random"
    groups = [
      { llm = "openai:gpt-4o", count = 2 },
      { llm = "local", fraction = 0.25, llm_options = { answer_mode = "tags" } },
      { rule = "rule", persona = { disposition = "selfish" }, count = 1 },
    ]
    roles = { meeting = { llm = "local" } }
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.plugins import load_object

if TYPE_CHECKING:
    import mesa
    import numpy as np

KINDS = ("rule", "llm", "strategy", "factory", "human")

#: the policy kinds beyond rule and factory: builders registered by entry point, this
#: package's own ("llm", "strategy" in pyproject.toml) and any installed package's alike
ENTRY_POINT_GROUP = "mesa_dilemmas.policies"


class Group(BaseModel):
    """Some players of one kind: exactly one of ``rule``, ``llm``, ``strategy``, ``factory``,
    ``human`` (people at the table, in a hosted session: ``{ human = "participant", count = 4 }``,
    the value a label for the seats; see :mod:`mesa_dilemmas.agents.human`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str | None = None
    llm: str | None = None
    strategy: str | None = None
    factory: str | None = None
    human: str | None = None
    count: Annotated[int, Field(ge=0, strict=True)] | None = None
    fraction: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | None = None
    seats: list[Annotated[int, Field(ge=0, strict=True)]] | None = None
    #: persona fields that replace the game's (``traits``, and the game's own persona fields)
    persona: dict[str, Any] = Field(default_factory=dict)
    #: per-group LLM settings (``temperature``, ``answer_mode``, ...) over the run's ``[llm]``
    llm_options: dict[str, Any] = Field(default_factory=dict)
    label: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Group:
        kinds = [k for k in KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"a group needs exactly one of {', '.join(KINDS)} (got {kinds or 'none'})"
            )
        sizes = [k for k in ("count", "fraction", "seats") if getattr(self, k) is not None]
        if len(sizes) > 1:
            raise ValueError(
                f"a group takes one of count, fraction, seats (got {', '.join(sizes)})"
            )
        if self.seats is not None and len(set(self.seats)) != len(self.seats):
            raise ValueError("seats: a seat is listed twice")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if getattr(self, k) is not None)

    @property
    def value(self) -> str:
        return getattr(self, self.kind)

    def describe(self) -> str:
        return self.label or f"{self.kind}:{self.value}"

    def size(self, n: int) -> int | None:
        """How many of ``n`` players this group takes (None: only its ``seats``, or the rest)."""
        if self.count is not None:
            return self.count
        if self.fraction is not None:
            return int(math.floor(self.fraction * n + 0.5))
        return None


class Population(BaseModel):
    """Who plays a game: groups of policies, their placement, and model-level roles."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    groups: list[Group] = Field(default_factory=list)
    placement: Literal["random", "first"] = "random"
    roles: dict[str, Group] = Field(default_factory=dict)

    @classmethod
    def coerce(cls, value: Population | Mapping[str, Any] | None) -> Population:
        if value is None:
            return cls()
        if isinstance(value, Population):
            return value
        return cls.model_validate(value)

    def is_empty(self) -> bool:
        return not self.groups and not self.roles

    # -- seats -------------------------------------------------------------
    def check(self, n: int, roles: Iterable[str] | None = ()) -> None:
        """Raise ``ValueError("population...: ...")`` if this population cannot fill ``n`` seats
        or names a role not in ``roles`` (``None``: seats only)."""
        taken: set[int] = set()
        counted = 0
        for i, g in enumerate(self.groups):
            if g.seats is not None:
                bad = [s for s in g.seats if s >= n]
                if bad:
                    raise ValueError(f"population.groups[{i}].seats: seat {bad[0]} >= {n} players")
                clash = taken & set(g.seats)
                if clash:
                    raise ValueError(
                        f"population.groups[{i}].seats: seat {min(clash)} claimed twice"
                    )
                taken |= set(g.seats)
            else:
                size = g.size(n)
                if size is None:
                    raise ValueError(f"population.groups[{i}]: give count, fraction or seats")
                counted += size
        if counted + len(taken) > n:
            raise ValueError(
                f"population.groups: {counted + len(taken)} players asked for, the game has {n}"
            )
        unknown = set(self.roles) - set(roles) if roles is not None else set()
        if unknown:
            allowed = ", ".join(sorted(roles)) or "none"
            raise ValueError(
                f"population.roles.{sorted(unknown)[0]}: unknown role; allowed: {allowed}"
            )

    def assign(self, n: int, rng: np.random.Generator) -> list[Group | None]:
        """The group of each of ``n`` seats (None: the game's default rule player).

        Explicit ``seats`` first; counted groups then take seats in group order, drawn with one
        ``rng.choice`` over the free seats (placement "random") or the first free ones.  No draw
        is made when no group is counted, so a population of defaults consumes no randomness.
        """
        self.check(n, roles=None)  # roles are checked by the game (validate_params)
        out: list[Group | None] = [None] * n
        for g in self.groups:
            for s in g.seats or ():
                out[s] = g
        counted = [(g, g.size(n)) for g in self.groups if g.seats is None]
        total = sum(size or 0 for _, size in counted)
        if not total:
            return out
        free = [s for s in range(n) if out[s] is None]
        if self.placement == "random":
            if len(free) == n:
                picks = rng.choice(n, size=total, replace=False).tolist()
            else:
                picks = [free[i] for i in rng.choice(len(free), size=total, replace=False)]
        else:
            picks = free[:total]
        it = iter(picks)
        for g, size in counted:
            for _ in range(size or 0):
                out[next(it)] = g
        return out

    # -- what a run will call ----------------------------------------------
    def llm_specs(self) -> set[str]:
        groups = [*self.groups, *self.roles.values()]
        return {
            g.llm
            for g in groups
            if g.llm is not None and g.count != 0 and g.fraction != 0 and g.seats != []
        }

    # -- building ----------------------------------------------------------
    def build(
        self,
        group: Group | None,
        *,
        model: mesa.Model,
        seat: int | None,
        persona: Persona,
        rules: Mapping[str, Callable[..., Policy]],
        default: str = "rule",
    ) -> Policy:
        """The policy of one seat (``seat=None`` for a role).  ``rules`` are the game's rule
        players by name, each called as ``f(model=, seat=, persona=)``."""
        if group is None or group.kind == "rule":
            name = default if group is None else group.value
            if name not in rules:
                raise ValueError(
                    f"population: unknown rule player {name!r}; allowed: {', '.join(rules)}"
                )
            return rules[name](model=model, seat=seat, persona=persona)
        if group.kind == "factory":
            policy = load_object(group.value)(model=model, seat=seat, persona=persona)
        else:
            policy = policy_kind(group.kind)(
                group.value, group=group, model=model, seat=seat, persona=persona
            )
        if not isinstance(policy, Policy):
            raise TypeError(f"{group.describe()} built {type(policy).__name__}, not a Policy")
        return policy

    def persona_for(self, group: Group | None, persona: Persona) -> Persona:
        """The game's persona for a seat with the group's persona fields applied."""
        if group is None or not group.persona:
            return persona
        fields = dict(group.persona)
        unknown = sorted(set(fields) - set(persona.field_names()))
        if unknown:
            raise ValueError(
                f"persona: unknown field {unknown[0]!r} for a {type(persona).__name__}; "
                f"allowed: {', '.join(persona.field_names())}"
            )
        if "traits" in fields:
            fields["traits"] = tuple(fields["traits"])
        return replace(persona, **fields)


@cache
def policy_kinds() -> dict[str, str]:
    """Every registered policy kind: name -> ``"module:builder"``."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def policy_kind(kind: str) -> Callable[..., Policy]:
    kinds = policy_kinds()
    if kind not in kinds:
        raise ValueError(
            f"population: unknown policy kind {kind!r}; known: {', '.join(sorted(kinds))}"
        )
    return load_object(kinds[kind])


def population_table(value: Any) -> Population:
    """Validate a ``[population]`` table; errors read ``population.<field>: message``."""
    from pydantic import ValidationError

    try:
        return Population.coerce(value)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        msg = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"population{'.' + loc if loc else ''}: {msg}") from None


__all__ = ["Group", "Population", "load_object", "policy_kind", "policy_kinds", "population_table"]
