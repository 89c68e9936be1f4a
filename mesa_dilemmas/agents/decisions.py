"""What a game asks of an agent: a decision request with an observation and an answer spec.

The spec idea follows Concordia's ``ActionSpec``: the game states *what kind of
answer is valid* (a number in a range, one of N options, free text, a small
structured object) and every policy -- a rule written in Python, a strategy
object, or a language model -- answers the same request.  The spec also knows
how to *validate* an answer, so a rule bug and a malformed LLM reply are caught
by the same code, and how to describe itself (``describe()``, ``json_schema()``)
so an LLM backend can render a prompt or a native structured-output schema.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.agents.base import DilemmaAgent


class InvalidAnswer(ValueError):
    """An answer that does not satisfy its decision's spec."""


class AnswerSpec:
    """Base of all answer specs: validation, a one-line description, a JSON schema."""

    def validate(self, answer: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def json_schema(self) -> dict[str, Any]:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class NumberSpec(AnswerSpec):
    """A number in ``[low, high]`` (an integer when ``integer``)."""

    low: float
    high: float
    integer: bool = False

    def validate(self, answer: Any) -> float | int:
        if isinstance(answer, bool):
            raise InvalidAnswer(f"expected a number in [{self.low}, {self.high}], got a boolean")
        if isinstance(answer, str):
            try:
                answer = float(answer.strip())
            except ValueError as exc:
                raise InvalidAnswer(f"expected a number, got {answer!r}") from exc
        try:
            value = float(answer)
        except (TypeError, ValueError) as exc:
            raise InvalidAnswer(f"expected a number, got {answer!r}") from exc
        if not math.isfinite(value) or not (self.low <= value <= self.high):
            raise InvalidAnswer(f"expected a number in [{self.low}, {self.high}], got {value}")
        if self.integer:
            if value != int(value):
                raise InvalidAnswer(f"expected a whole number, got {value}")
            return int(value)
        return value

    def describe(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} between {self.low} and {self.high}"

    def json_schema(self) -> dict[str, Any]:
        return {
            "type": "integer" if self.integer else "number",
            "minimum": self.low,
            "maximum": self.high,
        }


@dataclass(frozen=True)
class ChoiceSpec(AnswerSpec):
    """Exactly one of ``options`` (strings; ids, labels, card names, 'C'/'D').  A phase whose
    options differ by seat (a villager may punish anyone but itself) shows every seat one
    wider spec (``Decision.shown``); an answer outside the seat's ``options`` is invalid and
    asked again."""

    options: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.options:
            raise ValueError("ChoiceSpec needs at least one option")

    def validate(self, answer: Any) -> str:
        text = str(answer).strip()
        if text in self.options:
            return text
        folded = {o.casefold(): o for o in self.options}
        if text.casefold() in folded:
            return folded[text.casefold()]
        shown = ", ".join(self.options[:12]) + (" ..." if len(self.options) > 12 else "")
        raise InvalidAnswer(f"expected one of [{shown}], got {text[:80]!r}")

    def describe(self) -> str:
        return "exactly one of: " + ", ".join(self.options)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.options)}


@dataclass(frozen=True)
class TextSpec(AnswerSpec):
    """Free text of at most ``max_chars`` characters (a norm, an utterance)."""

    max_chars: int = 500
    min_chars: int = 1

    def validate(self, answer: Any) -> str:
        if not isinstance(answer, str):
            raise InvalidAnswer(f"expected text, got {type(answer).__name__}")
        text = answer.strip()
        if len(text) < self.min_chars:
            raise InvalidAnswer("expected non-empty text")
        if len(text) > self.max_chars:
            raise InvalidAnswer(f"text longer than {self.max_chars} characters ({len(text)})")
        return text

    def describe(self) -> str:
        return f"free text of at most {self.max_chars} characters"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "minLength": self.min_chars, "maxLength": self.max_chars}


@dataclass(frozen=True)
class StructSpec(AnswerSpec):
    """A small object whose fields each have their own spec (a trade offer, two norms)."""

    fields: Mapping[str, AnswerSpec]
    optional: frozenset[str] = frozenset()

    def validate(self, answer: Any) -> dict[str, Any]:
        if not isinstance(answer, Mapping):
            raise InvalidAnswer(f"expected an object with fields {sorted(self.fields)}")
        unknown = set(answer) - set(self.fields)
        if unknown:
            raise InvalidAnswer(f"unknown fields {sorted(unknown)}; allowed {sorted(self.fields)}")
        out: dict[str, Any] = {}
        for name, spec in self.fields.items():
            if name not in answer or answer[name] is None:
                if name in self.optional:
                    out[name] = None
                    continue
                raise InvalidAnswer(f"missing field {name!r}")
            try:
                out[name] = spec.validate(answer[name])
            except InvalidAnswer as exc:
                raise InvalidAnswer(f"field {name!r}: {exc}") from exc
        return out

    def describe(self) -> str:
        parts = [f"{name}: {spec.describe()}" for name, spec in self.fields.items()]
        return "an object with " + "; ".join(parts)

    def json_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {k: v.json_schema() for k, v in self.fields.items()},
            "required": [k for k in self.fields if k not in self.optional],
            "additionalProperties": False,
        }


@dataclass(frozen=True)
class ListSpec(AnswerSpec):
    """A list of items of one spec (several offers, an allocation over resources)."""

    item: AnswerSpec
    max_items: int = 10

    def validate(self, answer: Any) -> list[Any]:
        if not isinstance(answer, Sequence) or isinstance(answer, str | bytes):
            raise InvalidAnswer("expected a list")
        if len(answer) > self.max_items:
            raise InvalidAnswer(f"at most {self.max_items} items, got {len(answer)}")
        out = []
        for i, item in enumerate(answer):
            try:
                out.append(self.item.validate(item))
            except InvalidAnswer as exc:
                raise InvalidAnswer(f"item {i}: {exc}") from exc
        return out

    def describe(self) -> str:
        return f"a list of at most {self.max_items} items, each {self.item.describe()}"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.json_schema(), "maxItems": self.max_items}


@dataclass
class Decision:
    """One question put to one agent (or, with ``agent=None``, to the model's narrator).

    ``kind`` names the decision ("<game>.<decision>": "harvest.effort", "market.trade_offer"); an LLM
    backend picks its prompt template by it.  ``observation`` holds everything
    the agent may see, as plain data; a rule reads it in code, a template
    renders it in words.  ``fallback`` is the documented answer used when a
    policy cannot produce a valid one within its budget -- every use of it is
    counted by the broker, never silent.

    ``shown``, when given, is a wider spec, the same for every seat of a phase, that a prompt
    may show (its JSON schema, description and format) in place of ``spec``: for a provider
    that reads the schema before the messages, a schema that differed by seat would make every
    seat's prompt start differently (no prompt-cache hit).  The seat's own limits are stated in
    its own part of the prompt, and an answer is still validated by ``spec`` (outside it: asked
    again, like any invalid answer).
    """

    kind: str
    spec: AnswerSpec
    observation: Mapping[str, Any]
    agent: DilemmaAgent | None = None
    step: int = 0
    fallback: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
    shown: AnswerSpec | None = None

    def validate(self, answer: Any) -> Any:
        return self.spec.validate(answer)

    @property
    def agent_id(self) -> int | None:
        return None if self.agent is None else self.agent.unique_id
