"""What every game shares: rounds made of named phases, the decision broker, parameter schemas.

A game is a ``DilemmaModel`` subclass that lists its ``PHASES`` in order and
implements one ``phase_<name>`` method per phase.  ``step()`` plays one round.

A game's parameters are one typed object: a :class:`DilemmaParameters` subclass named by the
model's ``Parameters``, whose annotations (``Annotated[float, Field(ge=0, le=1)]``) are the
single source of truth for validation (``params_model``), CLI ``--set`` coercion and dashboard
slider ranges; the model reads them as ``self.p``.  (A game without ``Parameters`` -- a
third-party one written the older way -- has its ``__init__`` keyword parameters read instead.)
Ways of saying who plays other than ``players`` (``llm_agents = 3``) are a game's
``Shorthands``: scenario-level names that :func:`build_model` expands into a ``players``
population before the model is built, so a model only ever sees a population.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, ClassVar, Literal

import mesa
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.agents.broker import DecisionBroker
from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.agents.population import Group, Population, population_table


class DilemmaParameters(BaseModel):
    """A game's parameters as one typed, validated object (subclass it, one annotated field
    per parameter; the CLI, TOML scenarios, sweeps and the dashboard read the fields)."""

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False, frozen=True
    )


class DilemmaModel(mesa.Model):
    """Base model: ordered phases on Mesa's clock, and a broker for decisions."""

    #: the game's parameters (a :class:`DilemmaParameters` subclass): ``DilemmaModel``'s
    #: ``__init__`` validates the keyword parameters into ``self.p``
    Parameters: ClassVar[type[DilemmaParameters] | None] = None
    #: scenario shorthands for who plays (``llm_agents``, ...), a pydantic model of their
    #: fields: :func:`build_model` turns them into ``players`` with
    #: :meth:`population_from_params`, and the model never receives them
    Shorthands: ClassVar[type[BaseModel] | None] = None

    #: phase names in play order; each is implemented by ``phase_<name>``
    PHASES: ClassVar[tuple[str, ...]] = ()
    #: short game name used by scenarios (its registered name, e.g. "my_game")
    GAME: ClassVar[str] = ""
    #: model-level roles a population may fill (e.g. ``("meeting",)``)
    POPULATION_ROLES: ClassVar[tuple[str, ...]] = ()
    #: the directory of this game's LLM prompt templates (registered as ``GAME.<file stem>``)
    PROMPTS_DIR: ClassVar[Any] = None
    #: the persona type of this game's players (a game with its own persona fields names its
    #: :class:`~mesa_dilemmas.agents.persona.Persona` subclass; a population's
    #: ``persona = { ... }`` may set those fields)
    PERSONA: ClassVar[type[Persona]] = Persona
    #: the kinds of ``[population]`` group this game can seat
    POLICY_KINDS: ClassVar[tuple[str, ...]] = ("rule", "llm", "factory")

    @classmethod
    def rule_players(cls) -> Mapping[str, Callable[..., Policy]]:
        """The rule players a population may name (``{ rule = "..." }``): by default the
        ``RULE_PLAYERS`` of the game's model module."""
        import sys

        return getattr(sys.modules[cls.__module__], "RULE_PLAYERS", {})

    def __init__(self, *, rng: Any = None, narrator: Policy | None = None, **params: Any) -> None:
        if self.Parameters is not None:
            try:
                #: the run's parameters (``self.p.n_rounds``)
                self.p = self.Parameters(**params)
            except ValidationError as err:
                unknown = [e["loc"][0] for e in err.errors() if e["type"] == "extra_forbidden"]
                if unknown:  # as for any Python call: an unexpected keyword is a TypeError
                    name = unknown[0]
                    hint = (
                        " (a scenario shorthand: pass players=, or build the model with "
                        "build_model)"
                        if name in shorthand_names(type(self))
                        else ""
                    )
                    raise TypeError(
                        f"{type(self).__name__}: unexpected parameter {name!r}{hint}"
                    ) from None
                raise ValueError(_first_error(err)) from None
        elif params:
            raise TypeError(f"{type(self).__name__}: unexpected parameters {sorted(params)}")
        super().__init__(rng=rng)
        #: the integer seed of this run when given one (LLM sample ids and caching key on it)
        self.run_seed: int | None = int(rng) if isinstance(rng, int) else None
        self.broker = DecisionBroker(narrator=narrator)
        if narrator is not None:
            narrator.bind(None)

    @property
    def round(self) -> int:
        """The round being played (or last played): Mesa's own clock, ``model.time``."""
        return int(self.time)

    # -- decisions -------------------------------------------------------
    @property
    def decision_fallbacks(self) -> int:
        """Decisions of this run answered by their documented fallback (a lenient policy --
        a language model -- whose answer was still unusable after its re-asks)."""
        return self.broker.stats.total("fallbacks")

    def may_fall_back(self) -> bool:
        """Whether a policy of this run may answer with a fallback (a lenient one sits at a
        seat or narrates): games then report ``decision_fallbacks`` per run, the column
        analyses filter on (rule-only runs have no such column)."""
        policies = [getattr(a, "policy", None) for a in self.agents]
        policies.append(self.broker.narrator)
        return any(p is not None and not p.strict for p in policies)

    def ask(self, decision: Decision) -> Any:
        return self.broker.ask(decision)

    def ask_all(self, decisions: Sequence[Decision]) -> list[Any]:
        return self.broker.ask_all(decisions)

    # -- play ------------------------------------------------------------
    def step(self) -> None:
        """One round: every phase in order, then data collection and the stop check.

        Mesa advances ``model.time`` before calling it, so ``self.round`` is this round."""
        for phase in self.PHASES:
            getattr(self, f"phase_{phase}")()
            if not self.running:
                break
        self.end_of_round()

    def end_of_round(self) -> None:
        """Hook: collect data, decide whether to stop. Games override and call super."""
        datacollector = getattr(self, "datacollector", None)
        if datacollector is not None:
            datacollector.collect(self)

    def seat_players(
        self,
        n: int,
        *,
        rules: Mapping[str, Callable[..., Policy]],
        persona_of: Callable[[int, Group | None], Persona] | None = None,
        agent_of: Callable[[int, Policy, Persona], DilemmaAgent] | None = None,
        policy_of: Callable[[int, Group | None, Persona], Policy | None] | None = None,
    ) -> list[DilemmaAgent]:
        """Seat ``n`` players, seat by seat: the population says which group sits where
        (``self.population``), ``persona_of(seat, group)`` gives the seat's persona (default:
        the group's persona fields over a plain one), the group's policy is built for it (a rule
        player from ``rules``, a language model, a strategy), and ``agent_of(seat, policy,
        persona)`` makes the agent (default: a :class:`DilemmaAgent`). A game whose seats hold
        something the population does not build (a strategy, say) passes ``policy_of(seat,
        group, persona)``, which returns the seat's policy or None to let the population build
        it. Each agent knows its ``slot``; every random draw happens in seat order, so a seed
        seats the same players."""
        seated: list[DilemmaAgent] = []
        for seat, group in enumerate(self.population.assign(n, self.rng)):
            persona = (
                self.population.persona_for(group, self.PERSONA())
                if persona_of is None
                else persona_of(seat, group)
            )
            policy = policy_of(seat, group, persona) if policy_of is not None else None
            if policy is None:
                policy = self.population.build(
                    group, model=self, seat=seat, persona=persona, rules=rules
                )
            agent = (
                DilemmaAgent(self, policy, persona)
                if agent_of is None
                else agent_of(seat, policy, persona)
            )
            agent.slot = seat
            seated.append(agent)
        return seated

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> None:
        """Cross-field checks (raise ValueError "field: message"); run before any run starts."""

    @classmethod
    def population_from_params(cls, params: dict[str, Any]) -> Population:
        """Who plays a run with these params: ``params["players"]``; games whose older
        parameters (``llm_agents``, ``llm_players``, ...) are shorthands expand them here."""
        return population_table(params.get("players"))

    @classmethod
    def llm_specs(cls, params: dict[str, Any]) -> set[str]:
        """The LLM specs ("openai:gpt-4o", "local") a run with these params will call.

        The runner checks them (API keys, model files) before anything runs."""
        return cls.population_from_params(params).llm_specs()

    @classmethod
    def run_notes(cls, params: dict[str, Any]) -> list[str]:
        """What a run with these (valid) parameters should say before it starts, one line
        each (e.g. strategies that no seat will play); the runner prints them and keeps them
        in the manifest.  None by default."""
        return []


def _first_error(err: ValidationError) -> str:
    """One line naming the field: ``"n_rounds: Input should be greater than or equal to 1"``."""
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "params"
    return f"{where}: {first['msg']}"


def shorthand_names(model_cls: type) -> tuple[str, ...]:
    """The scenario shorthands a game declares (its ``Shorthands`` fields), in order."""
    shorthands = getattr(model_cls, "Shorthands", None)
    return tuple(shorthands.model_fields) if shorthands is not None else ()


def expand_params(model_cls: type, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the game's shorthands turned into ``players`` (the population its
    ``population_from_params`` reads off them); without shorthands, ``params`` as given."""
    names = shorthand_names(model_cls)
    if not any(name in params for name in names):
        return dict(params)
    model_cls.validate_params(dict(params))  # "llm_agents: 4 exceeds n_agents=3", in its words
    expanded = {k: v for k, v in params.items() if k not in names}
    expanded["players"] = model_cls.population_from_params(dict(params))
    return expanded


def build_model(model_cls: type, params: Mapping[str, Any], rng: Any = None) -> Any:
    """The one way a run's parameters become a model: shorthands expanded, then
    ``model_cls(**params, rng=rng)``."""
    return model_cls(**expand_params(model_cls, params), rng=rng)


def model_factory(model_cls: type) -> Callable[..., Any]:
    """``model_cls`` as Mesa's ``batch_run`` calls it (``factory(**params, rng=...)``), with
    the shorthands expanded by :func:`build_model`; the grid's own names stay the run's
    parameter columns."""
    if not shorthand_names(model_cls):
        return model_cls

    def factory(*, rng: Any = None, **params: Any) -> Any:
        return build_model(model_cls, params, rng)

    factory.__name__ = factory.__qualname__ = model_cls.__name__
    return factory


@cache
def params_model(model_cls: type[mesa.Model]) -> type[BaseModel]:
    """The schema of a game's parameters (extra keys forbidden): its ``Parameters`` with its
    ``Shorthands`` fields added, or, for a game without ``Parameters``, a pydantic model of
    ``__init__``'s keyword parameters."""
    parameters = getattr(model_cls, "Parameters", None)
    if parameters is not None:
        shorthands = getattr(model_cls, "Shorthands", None)
        if shorthands is None:
            return parameters
        extra = {n: (f.annotation, f) for n, f in shorthands.model_fields.items()}
        return create_model(f"{model_cls.__name__}ScenarioParams", __base__=parameters, **extra)
    fields: dict[str, Any] = {}
    hints = inspect.get_annotations(model_cls.__init__, eval_str=True)
    for name, param in inspect.signature(model_cls.__init__).parameters.items():
        if name in ("self", "rng", "seed", "narrator") or param.kind in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints.get(name, Any), default)
    return create_model(
        f"{model_cls.__name__}Params",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False),
        **fields,
    )


def describe_params(model_cls: type[mesa.Model]) -> list[dict[str, str]]:
    """Each parameter of a game as text: name, type, default, allowed range or values, and the
    description its schema carries (for ``mesa-dilemmas params`` and the dashboard's tooltips)."""
    import annotated_types

    rows = []
    for name, info in params_model(model_cls).model_fields.items():
        annotation = info.annotation
        values = typing.get_args(annotation) if typing.get_origin(annotation) is Literal else ()
        bounds = []
        for c in info.metadata:
            for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                if isinstance(c, getattr(annotated_types, attr.capitalize())):
                    bounds.append(f"{sign} {getattr(c, attr)}")
        allowed = " | ".join(map(repr, values)) if values else ", ".join(bounds)
        type_name = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
        if values:
            type_name = "choice"
        default = "required" if info.is_required() else repr(info.default)
        rows.append(
            {
                "name": name,
                "type": type_name,
                "default": default,
                "allowed": allowed,
                "description": info.description or "",
            }
        )
    return rows
