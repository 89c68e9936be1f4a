"""Prompts: a template registry keyed by decision kind, and a generic renderer.

A game registers its templates once (``register_templates("harvest", dir)``
maps ``dir/effort.txt`` to the kind ``harvest.effort``); a scenario may point
``[llm] templates_dir`` at its own files, which win over the built-ins.  A kind
with no template gets the generic prompt: a system text made from the agent's
persona, the observation rendered as readable lines, and answer instructions
generated from the decision's spec for the run's answer mode.

Template files
--------------
``<name>.txt`` is the user message; ``<name>.toml`` may set ``system``,
``user`` and ``tag`` (the XML tag of the answer, e.g. ``"HEALTH"`` as in paper
001).  Both are ``str.format`` templates with these fields:

Variants
--------
A ``.toml`` template may carry frozen rewordings of itself, an array of ``[[variants]]``
tables, each with its own ``user`` (required), optionally ``system`` (else the base's) and
``name``: the same facts, numbers, options and answer format in other words.  Variant 0 is the
base template; ``render(..., variant=v)`` renders variant ``v`` (``[llm] prompt_variant``); an
index beyond a template's variants is an error naming the template.  The generic prompt has
its own variants (:data:`GENERIC_VARIANTS`).  :func:`variant_system` gives a game's system
text in one variant (for instruments that ask in the game's framing).

``{observation}`` the whole observation as readable lines; ``{obs[key]}`` one
value of it; ``{persona}`` the persona text; ``{p.traits}`` a persona field (a game's own
persona type adds its fields); ``{instructions}`` the answer instructions (appended automatically when
a template leaves them out); ``{tag}``, ``{kind}``, ``{round}``,
``{agent_id}``, ``{describe}`` (the spec's one-line description); ``{example}`` in tags mode
for a decision whose prompt shows a wider spec than its own (``Decision.shown``): a legal example
of this seat's own answer (appended when a template leaves it out; empty otherwise).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from mesa_dilemmas.agents.decisions import AnswerSpec, Decision, ListSpec
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.llm.answers import (
    DEFAULT_TAG,
    answer_token_limit,
    corrective_message,
    example_value,
    native_instructions,
    native_schema,
    reasoning_room,
    tags_example,
    tags_instructions,
)
from mesa_dilemmas.llm.errors import LLMConfigError
from mesa_dilemmas.llm.request import Message


class VariantError(LLMConfigError):
    """A prompt variant a template does not have (one line naming the template)."""


@dataclass(frozen=True)
class Variant:
    """A frozen rewording of a template: its own ``user`` (and ``system``; None: the base's)."""

    user: str
    system: str | None = None
    name: str = ""


@dataclass(frozen=True)
class Template:
    """A prompt template for one decision kind (``system=None``: the generic persona text),
    with its frozen rewordings (``variants``; variant 0 is the template itself)."""

    user: str
    system: str | None = None
    tag: str = DEFAULT_TAG
    source: str = "<code>"
    variants: tuple[Variant, ...] = ()

    @property
    def k(self) -> int:
        """How many wordings it has: the base and its variants."""
        return 1 + len(self.variants)

    def variant(self, index: int) -> Template:
        """The template in wording ``index`` (0: itself); an index it lacks is a
        :class:`VariantError` naming the template."""
        if index == 0:
            return self
        if not 0 < index <= len(self.variants):
            raise VariantError(
                f"llm.prompt_variant: {index} is beyond the {self.k} wordings (0..{self.k - 1}) "
                f"of the prompt template {self.source}"
            )
        chosen = self.variants[index - 1]
        system = self.system if chosen.system is None else chosen.system
        return replace(self, user=chosen.user, system=system, variants=())

    @classmethod
    def from_table(cls, data: Mapping[str, Any], source: str = "<code>") -> Template:
        """A template from a TOML table: ``system``, ``user`` (required), ``tag`` and
        ``[[variants]]`` (each ``user``, optional ``system`` and ``name``)."""
        unknown = set(data) - {"system", "user", "tag", "variants"}
        if unknown or "user" not in data:
            raise ValueError(
                f"{source}: a template has keys system, user (required), tag, variants; "
                f"got {sorted(data)}"
            )
        variants = []
        for i, table in enumerate(data.get("variants", ())):
            extra = set(table) - {"system", "user", "name"} if isinstance(table, Mapping) else {}
            if not isinstance(table, Mapping) or extra or "user" not in table:
                raise ValueError(
                    f"{source}: variants[{i}] has keys user (required), system, name; "
                    f"got {sorted(table) if isinstance(table, Mapping) else table!r}"
                )
            variants.append(Variant(table["user"], table.get("system"), table.get("name", "")))
        return cls(
            user=data["user"],
            system=data.get("system"),
            tag=data.get("tag", DEFAULT_TAG),
            source=source,
            variants=tuple(variants),
        )


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: what the policy sends, and how to read the answer."""

    system: str
    user: str
    tag: str
    schema: dict[str, Any] | None  # native mode only
    #: the reply's token limit: ``max_tokens``, or what the longest valid answer (with the
    #: reasoning, when asked for) needs when that is more; None when no limit was given
    max_tokens: int | None = None
    #: whether the reply is asked for reasoning first (native: the schema's field; tags: always)
    reasoning: bool = True


#: a template may also be a function of (decision, fields) -> Prompt-like (system, user, tag)
TemplateLike = Template | Callable[[Decision, dict[str, Any]], Template]

_REGISTRY: dict[str, TemplateLike] = {}


def register_template(kind: str, template: TemplateLike) -> None:
    """Register (or replace) the template of one decision kind."""
    _REGISTRY[kind] = template


def register_templates(prefix: str, directory: Path | str) -> list[str]:
    """Register every ``*.txt`` / ``*.toml`` file in ``directory`` as ``<prefix>.<stem>``
    (just ``<stem>`` with an empty prefix).  Returns the kinds registered."""
    kinds = []
    for kind, template in load_template_dir(str(directory), prefix).items():
        register_template(kind, template)
        kinds.append(kind)
    return kinds


def load_template_dir(directory: str, prefix: str = "") -> dict[str, Template]:
    """Read a template directory."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"llm templates: {root} is not a directory")
    out: dict[str, Template] = {}
    for path in sorted(root.iterdir()):
        if path.suffix not in (".txt", ".toml"):
            continue
        kind = f"{prefix}.{path.stem}" if prefix else path.stem
        if path.suffix == ".txt":
            out[kind] = Template(user=path.read_text(), source=str(path))
            continue
        out[kind] = Template.from_table(tomllib.loads(path.read_text()), str(path))
    return out


@cache
def _scenario_templates(directory: str) -> dict[str, Template]:
    """A scenario's ``templates_dir``, read once per process (every call renders from it)."""
    return load_template_dir(directory)


def template_for(kind: str, templates_dir: str | None = None) -> TemplateLike | None:
    """The template of ``kind``: the scenario's directory first, then the registry."""
    if templates_dir:
        found = _scenario_templates(templates_dir).get(kind)
        if found is not None:
            return found
    return _REGISTRY.get(kind)


# -- the generic parts ---------------------------------------------------------

GAME_PREAMBLE = (
    "You are a player in a game with other players, played over several rounds. "
    "Each round you are asked to make decisions."
)

#: the generic prompt's wordings, (system preamble, user text), variant 0 first: the user text
#: fills ``{round}``, ``{title}`` (the decision kind's last part) and ``{observation}``.  Each
#: carries the same facts as variant 0 in other words (neutral, formal, plain, story, brief).
GENERIC_VARIANTS: tuple[tuple[str, str], ...] = (
    (GAME_PREAMBLE, "Round {round}. Decision: {title}.\n\nWhat you know:\n{observation}"),
    (
        "You take part in a game together with other participants. The game lasts several "
        "rounds, and in every round you will be asked for decisions.",
        "This is round {round}. The decision in front of you: {title}.\n\n"
        "The information you have:\n{observation}",
    ),
    (
        "You are a participant in a multi-round game involving several participants. In each "
        "round, you are required to submit your decisions.",
        "Current round: {round}. Required decision: {title}.\n\n"
        "Information available to you:\n{observation}",
    ),
    (
        "You play a game with some other people. It goes on for a number of rounds, and each "
        "round you have to choose what to do.",
        "It is round {round}, and you need to choose: {title}.\n\n"
        "Here is what you can see:\n{observation}",
    ),
    (
        "Picture yourself sitting down with a group of other people to play a game that runs "
        "over several rounds; as each round comes, it is your turn to make your choices.",
        "Round {round} has begun, and it falls to you to settle this: {title}.\n\n"
        "As you look around the table, this is what you know:\n{observation}",
    ),
    (
        "Game with other players over several rounds. Each round: your decisions.",
        "Round {round} -- decide: {title}.\n\nKnown to you:\n{observation}",
    ),
)


def persona_text(persona: Persona | None) -> str:
    """The persona as generic second-person sentences (empty for a default persona): the
    persona's own :meth:`~mesa_dilemmas.agents.persona.Persona.sentences`.

    A game with its own persona wording renders it beside the game and its
    templates set their own ``system`` text; this is the fallback for templates that do not."""
    if persona is None:
        return ""
    return " ".join(persona.sentences())


def _generic(variant: int) -> tuple[str, str]:
    if not 0 <= variant < len(GENERIC_VARIANTS):
        raise VariantError(
            f"llm.prompt_variant: {variant} is beyond the {len(GENERIC_VARIANTS)} wordings "
            f"(0..{len(GENERIC_VARIANTS) - 1}) of the generic prompt (mesa_dilemmas.llm.prompts)"
        )
    return GENERIC_VARIANTS[variant]


def system_text(persona: Persona | None, extra: str | None = None, variant: int = 0) -> str:
    preamble = _generic(variant)[0]
    return "\n\n".join(p for p in (preamble, persona_text(persona), extra or "") if p)


def _humanise(key: str) -> str:
    return str(key).replace("_", " ")


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    return str(value)


def render_value(value: Any, indent: int = 0) -> str:
    """Plain data as readable indented lines (mappings as 'key: value', short lists inline)."""
    pad = "  " * indent
    if isinstance(value, Mapping):
        lines = []
        for k, v in value.items():
            if isinstance(v, Mapping | list | tuple) and _is_nested(v):
                lines.append(f"{pad}- {_humanise(k)}:")
                lines.append(render_value(v, indent + 1))
            else:
                lines.append(f"{pad}- {_humanise(k)}: {render_value(v)}")
        return "\n".join(lines) if lines else f"{pad}(nothing)"
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        if not _is_nested(value):
            return ", ".join(_scalar(v) for v in value) if value else "none"
        return "\n".join(
            f"{pad}- item {i + 1}:\n{render_value(v, indent + 1)}"
            if isinstance(v, Mapping | list | tuple)
            else f"{pad}- {_scalar(v)}"
            for i, v in enumerate(value)
        )
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return render_value(value.tolist(), indent)
    return _scalar(value)


def _is_nested(value: Any) -> bool:
    if isinstance(value, Mapping):
        return True
    return any(isinstance(v, Mapping | list | tuple) for v in value) or len(value) > 12


def _title(kind: str) -> str:
    return kind.rsplit(".", 1)[-1].replace("_", " ")


def generic_user(decision: Decision, round_: int, variant: int = 0) -> str:
    obs = render_value(decision.observation) if decision.observation else "(nothing)"
    text = _generic(variant)[1]
    return text.format(round=round_, title=_title(decision.kind), observation=obs)


def variant_count(kind: str, templates_dir: str | None = None) -> int:
    """How many wordings (base + variants) the prompt of ``kind`` has: its template's, or the
    generic prompt's for a kind without one (a template built by a function: 1)."""
    template = template_for(kind, templates_dir)
    if template is None:
        return len(GENERIC_VARIANTS)
    return template.k if isinstance(template, Template) else 1


def game_wordings(game_prefix: str, templates_dir: str | None = None) -> int:
    """How many wordings every prompt of a game has: the fewest among its registered templates
    (those of a scenario's ``templates_dir`` first) and the generic prompt (which its decisions
    without a template get).  A ``prompt_variant`` below it renders every decision."""
    kinds = {k for k in _REGISTRY if k.startswith(f"{game_prefix}.")}
    if templates_dir:
        kinds |= {k for k in _scenario_templates(templates_dir) if k.startswith(f"{game_prefix}.")}
    counts = [variant_count(k, templates_dir) for k in sorted(kinds)]
    return min([len(GENERIC_VARIANTS), *counts])


def variant_system(
    game_prefix: str,
    variant: int = 0,
    *,
    obs: Mapping[str, Any] | None = None,
    persona: Persona | None = None,
    templates_dir: str | None = None,
) -> str:
    """A game's system text in wording ``variant``: what an instrument (a comprehension
    question, a persona check) puts first to ask in the framing a player of that variant reads.

    The system text of the game's first registered template (by kind name) that sets one, in
    that variant, filled from ``obs`` (a game whose system text is built from its observation,
    such as one with ``{obs[common]}``, needs it; a missing field is a ValueError); the
    generic preamble variant with the persona's sentences for a game whose templates set none
    (the C/D games).  An index beyond the wordings is a :class:`VariantError`."""
    kinds = sorted(k for k in _REGISTRY if k.startswith(f"{game_prefix}."))
    if templates_dir:
        kinds = sorted(
            {
                *kinds,
                *(k for k in _scenario_templates(templates_dir) if k.startswith(f"{game_prefix}.")),
            }
        )
    for kind in kinds:
        template = template_for(kind, templates_dir)
        if isinstance(template, Template) and template.system is not None:
            chosen = template.variant(variant)
            fields = {
                "obs": dict(obs or {}),
                "persona": persona_text(persona),
                "p": persona or Persona(),
                "kind": kind,
            }
            return _format(chosen.system or "", fields, chosen, "system")
    return system_text(persona, None, variant)


# -- examples ------------------------------------------------------------------


def spec_example(spec: AnswerSpec) -> Any | None:
    """A spec's own legal example (a spec with an ``example()`` method, or a list of such
    items), or None when the generic example of :func:`~mesa_dilemmas.llm.answers.example_value`
    is fine.  The generic one fills every field, which can break a spec's cross-field rule (a
    budget); a game whose specs have such rules gives them ``example()``."""
    own = getattr(spec, "example", None)
    if callable(own):
        return own()
    if isinstance(spec, ListSpec):
        item = spec_example(spec.item)
        if item is not None:
            return [] if item == {} else [item]
    return None


def with_example(text: str, spec: AnswerSpec, tag: str) -> str:
    """``text`` (tags instructions or a corrective turn) with the spec's own example in place of
    the generic one."""
    example = spec_example(spec)
    if example is None:
        return text
    shown, mine = tags_example(spec, example_value(spec)), tags_example(spec, example)
    return text.replace(f"<{tag}>{shown}</{tag}>", f"<{tag}>{mine}</{tag}>")


# -- rendering -----------------------------------------------------------------


def render(
    decision: Decision,
    *,
    mode: str,
    persona: Persona | None = None,
    round_: int = 0,
    system_extra: str | None = None,
    templates_dir: str | None = None,
    reasoning: bool = True,
    reasoning_max_chars: int = 800,
    max_tokens: int | None = None,
    shared_schema: bool = False,
    schema_text: bool = True,
    variant: int = 0,
) -> Prompt:
    """The prompt for one decision in the given answer mode.  A decision whose phase shares one
    spec across seats (``Decision.shown``) is described in the instructions by that spec, the
    same words for every seat, with this seat's own example at the end, wherever the request
    carries a schema: ``shared_schema``, the request's schema is that shared one too
    (:func:`mesa_dilemmas.llm.specs.shares_schema` says for which providers); else, in native
    mode, the seat's own, which the embedded model and a self-hosted server enforce as a
    grammar.  In tags mode without a shared schema the words are all the model has, so they
    describe the seat's own spec.  The answer is validated by the seat's own spec either way.
    ``schema_text``: native instructions repeat the schema as text
    (:func:`mesa_dilemmas.llm.specs.schema_in_text` says for which).  ``variant``: which
    wording of the template (0 the base; see the module's docs)."""
    template = template_for(decision.kind, templates_dir)
    shown = decision.shown if shared_schema or mode == "native" else None
    spec = decision.spec if shown is None else shown  # what the instructions describe
    sent = spec if shared_schema else decision.spec  # the schema the request carries
    fields = _Fields(
        decision,
        obs=dict(decision.observation),
        persona=persona_text(persona),
        p=persona or Persona(),
        kind=decision.kind,
        round=round_,
        agent_id=decision.agent_id,
        describe=spec.describe(),
    )
    if callable(template) and not isinstance(template, Template):
        template = template(decision, fields)
    if template is not None:
        template = template.variant(variant)
    else:
        _generic(variant)  # fail fast on a variant the generic prompt lacks
    tag = template.tag if template is not None else DEFAULT_TAG
    schema = None
    reasoning = reasoning or mode != "native"  # tags mode always reasons in prose
    if reasoning:  # the reasoning gets what the longest answer leaves of max_tokens
        reasoning_chars, limit = reasoning_room(spec, max_tokens, reasoning_max_chars)
    else:
        reasoning_chars, limit = 0, answer_token_limit(spec, max_tokens)
    if mode == "native":
        schema = native_schema(sent, reasoning, reasoning_chars)
        described = schema if sent is spec else native_schema(spec, reasoning, reasoning_chars)
        instructions = native_instructions(spec, described, schema_text)
        example = ""
    elif shown is None:
        instructions = with_example(tags_instructions(spec, tag), spec, tag)
        example = ""
    else:  # the format shown to every seat; the example, this seat's own, goes to its part
        instructions = tags_instructions(spec, tag, example=False)
        own = spec_example(decision.spec)  # the seat's own legal example, else the generic one
        own = tags_example(decision.spec, example_value(decision.spec) if own is None else own)
        example = f"Answer in that format, for example <{tag}>{own}</{tag}>."
    fields.update(instructions=instructions, tag=tag, example=example)
    if template is None:
        return Prompt(
            system=system_text(persona, system_extra, variant),
            user=f"{generic_user(decision, round_, variant)}\n\n{instructions}",
            tag=tag,
            schema=schema,
            max_tokens=limit,
            reasoning=reasoning,
        )
    user = _format(template.user, fields, template, "user")
    if "{instructions}" not in template.user:
        user = f"{user.rstrip()}\n\n{instructions}"
    if example and "{example}" not in template.user:
        user = f"{user.rstrip()}\n\n{example}"
    system = (
        system_text(persona, system_extra, variant if variant < len(GENERIC_VARIANTS) else 0)
        if template.system is None
        else _format(template.system, fields, template, "system")
    )
    if template.system is not None and system_extra:
        system = f"{system}\n\n{system_extra}"
    return Prompt(
        system=system,
        user=user,
        tag=tag,
        schema=schema,
        max_tokens=limit,
        reasoning=reasoning,
    )


class _Fields(dict):
    """A template's fields.  ``observation`` (the whole observation as indented lines) is
    rendered only when a template asks for it: templates that pick single values through
    ``{obs[...]}`` never pay for it (a few milliseconds a prompt for a large observation)."""

    def __init__(self, decision: Decision, **fields: Any) -> None:
        super().__init__(**fields)
        self.decision = decision

    def __missing__(self, key: str) -> Any:
        if key != "observation":
            raise KeyError(key)
        obs = self.decision.observation
        value = self["observation"] = render_value(obs) if obs else "(nothing)"
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self or key == "observation" else default


def _format(text: str, fields: dict[str, Any], template: Template, part: str) -> str:
    try:
        return text.format_map(fields)
    except (KeyError, AttributeError, IndexError, ValueError) as exc:
        raise ValueError(f"prompt template {template.source} ({part}): cannot fill {exc}") from exc


def reask_messages(
    messages: list[Message],
    raw: str,
    error: str,
    spec: AnswerSpec,
    mode: str,
    tag: str,
    schema: dict[str, Any] | None,
) -> list[Message]:
    """The conversation of a re-ask: the first prompt (system and user), the failed reply and
    its correction -- only the last failed attempt, so a conversation never grows past first
    prompt + one reply + one correction."""
    correction = with_example(corrective_message(error, spec, mode, tag, schema), spec, tag)
    return messages[:2] + [Message("assistant", raw or "(no reply)"), Message("user", correction)]
