"""Answer instructions and answer parsing, for both answer modes.

``tags``: the paper-001 style (Appendix D): the model reasons in prose, then puts
its decision between XML tags, ``<answer>7</answer>``.  The last tagged span
wins (models often restate the question's tags while thinking).

``native``: the provider's structured output.  The decision's own schema is
wrapped in an object ``{"reasoning": str, "answer": <spec schema>}`` so the
model still reasons first (field order is generation order for grammars and
most providers) and the answer is always a named field.

Parsing is lenient where intent is unambiguous ("7 coins" is 7, "**Cooperate**"
is "Cooperate") and strict otherwise ("3 or 4" is an error); the result always
goes through the spec's own ``validate``.  Errors are :class:`InvalidAnswer`
with a short message that is fed back to the model in the corrective turn.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from mesa_dilemmas.agents.decisions import (
    AnswerSpec,
    ChoiceSpec,
    InvalidAnswer,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.llm.request import ChatResponse

DEFAULT_TAG = "answer"
TRUNCATED = {"length", "max_tokens", "MAX_TOKENS"}

#: characters per token of free text (reasoning, a conversation, a note), counted
#: conservatively: English prose averages 4-4.5 characters a token with the providers'
#: tokenizers and SmolLM2's (measured: 4.4 on a meeting transcript), so 3 leaves a third spare
PROSE_CHARS_PER_TOKEN = 3.0
#: characters per token of everything else in a JSON reply (braces, quotes, keys, numbers,
#: enum values): 2.3-2.5 measured with SmolLM2's tokenizer, which splits numbers digit by digit
JSON_CHARS_PER_TOKEN = 1.5
#: the shortest reasoning field a decision is given when reasoning is on, whatever room its
#: answer leaves in ``max_tokens`` (two or three sentences; the token limit grows to hold it)
MIN_REASONING_CHARS = 160

_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


@dataclass
class Parsed:
    value: Any
    reasoning: str | None = None


# -- instructions ------------------------------------------------------------


def example_value(spec: AnswerSpec) -> Any:
    """A valid example answer, shown to the model so it sees the exact format."""
    if isinstance(spec, NumberSpec):
        value = spec.low + (spec.high - spec.low) / 3
        return int(round(value)) if spec.integer else round(value, 2)
    if isinstance(spec, ChoiceSpec):
        return spec.options[0]
    if isinstance(spec, TextSpec):
        return "your text"
    if isinstance(spec, StructSpec):
        return {name: example_value(sub) for name, sub in spec.fields.items()}
    if isinstance(spec, ListSpec):
        return [example_value(spec.item)]
    return "..."


def _is_json_shaped(spec: AnswerSpec) -> bool:
    return isinstance(spec, StructSpec | ListSpec)


def tags_instructions(spec: AnswerSpec, tag: str = DEFAULT_TAG, example: bool = True) -> str:
    """'Think, then give the answer between <tag></tag>' with the valid range and an example
    (``example=False``: without; the prompt shows one elsewhere, :func:`tags_example`)."""
    how = "Write it as JSON and put it" if _is_json_shaped(spec) else "Put only the answer"
    text = (
        "Think step by step about your situation and explain your reasoning briefly. "
        f"Then give your final answer, which must be {spec.describe()}. "
        f"{how} between <{tag}> and </{tag}> tags"
    )
    if not example:
        return text + "."
    return f"{text}, for example <{tag}>{tags_example(spec, example_value(spec))}</{tag}>."


def tags_example(spec: AnswerSpec, example: Any) -> str:
    """An example answer as it goes between the tags (JSON for objects and lists)."""
    return json.dumps(example) if _is_json_shaped(spec) else str(example)


def native_schema(spec: AnswerSpec, reasoning: bool = True, max_chars: int = 800) -> dict[str, Any]:
    """The spec's JSON schema wrapped in an object (providers want an object at the top)."""
    props: dict[str, Any] = {}
    if reasoning:
        props["reasoning"] = {"type": "string", "maxLength": max_chars}
    props["answer"] = spec.json_schema()
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def largest_answer(spec: AnswerSpec) -> Any:
    """The longest valid answer of a spec as JSON would spell it: every optional field present,
    every text at its maximum length, every list at its most items, every number and choice at
    its longest spelling.  A cross-field rule (a budget) can only make real answers shorter."""
    if isinstance(spec, NumberSpec):
        if spec.integer:
            return max((int(spec.low), int(spec.high)), key=lambda v: len(str(v)))
        return -max(abs(spec.low), abs(spec.high)) - 0.01  # two decimals, the grammar's step
    if isinstance(spec, ChoiceSpec):
        return max(spec.options, key=len)
    if isinstance(spec, TextSpec):
        return "x" * spec.max_chars
    if isinstance(spec, StructSpec):
        return {name: largest_answer(sub) for name, sub in spec.fields.items()}
    if isinstance(spec, ListSpec):
        return [largest_answer(spec.item)] * spec.max_items
    return "..."  # a game's own kind of spec: not bounded here


def _text_chars(spec: AnswerSpec) -> int:
    """Characters of free text in the largest answer (counted as prose, the rest as JSON)."""
    if isinstance(spec, TextSpec):
        return spec.max_chars
    if isinstance(spec, StructSpec):
        return sum(_text_chars(sub) for sub in spec.fields.values())
    if isinstance(spec, ListSpec):
        return spec.max_items * _text_chars(spec.item)
    return 0


def reply_token_bound(spec: AnswerSpec, reasoning_chars: int = 0) -> int:
    """An upper bound on the tokens of the longest valid reply in native mode,
    ``{"reasoning": <reasoning_chars characters>, "answer": <largest answer>}`` (no reasoning
    field when ``reasoning_chars`` is 0): free text at ``PROSE_CHARS_PER_TOKEN``, the JSON
    around it at ``JSON_CHARS_PER_TOKEN``.  It also bounds a tags-mode reply of that much
    reasoning and the answer between its tags."""
    reply: dict[str, Any] = {"reasoning": ""} if reasoning_chars else {}
    reply["answer"] = largest_answer(spec)
    text = _text_chars(spec) + reasoning_chars
    json_chars = len(json.dumps(reply)) + reasoning_chars - text
    return math.ceil(text / PROSE_CHARS_PER_TOKEN) + math.ceil(json_chars / JSON_CHARS_PER_TOKEN)


def reasoning_room(
    spec: AnswerSpec, max_tokens: int | None, max_chars: int = 800
) -> tuple[int, int | None]:
    """``(reasoning characters, token limit)`` of one decision with reasoning on: the
    reasoning gets what the longest answer leaves of ``max_tokens`` (at most ``max_chars``, at
    least ``MIN_REASONING_CHARS``), and the limit is ``max_tokens`` unless the longest answer
    with that reasoning needs more (then exactly what it needs).  ``max_tokens=None``: no
    limit, ``max_chars`` of reasoning."""
    if max_tokens is None:
        return max_chars, None
    chars = min(max_chars, MIN_REASONING_CHARS)
    hi = max_chars
    while chars < hi:  # the longest reasoning whose reply fits (bisection on characters)
        mid = (chars + hi + 1) // 2
        if reply_token_bound(spec, mid) <= max_tokens:
            chars = mid
        else:
            hi = mid - 1
    return chars, max(max_tokens, reply_token_bound(spec, chars))


def answer_token_limit(spec: AnswerSpec, max_tokens: int | None) -> int | None:
    """The token limit of a decision without reasoning: ``max_tokens``, or what the longest
    valid answer needs when that is more."""
    if max_tokens is None:
        return None
    return max(max_tokens, reply_token_bound(spec))


def native_instructions(spec: AnswerSpec, schema: dict[str, Any], schema_text: bool = True) -> str:
    """The answer's fields and range in words, and (``schema_text``) the schema itself: it also
    goes with the request, but a server that takes it in JSON mode only (llama-cpp-python's)
    would otherwise leave the model without it (measured: the embedded model then answers out
    of range); a provider's own API shows the model the schema it is sent
    (:func:`mesa_dilemmas.llm.specs.schema_in_text`)."""
    first = (
        '"reasoning" (your brief step-by-step reasoning), then '
        if "reasoning" in schema["properties"]
        else ""
    )
    return (
        f'Reply with a JSON object with the fields {first}"answer", which must be '
        f"{spec.describe()}."
        + (f" JSON schema: {json.dumps(schema, separators=(',', ':'))}" if schema_text else "")
    )


def _names_reasoning(schema: dict[str, Any] | None) -> bool:
    return schema is not None and "reasoning" in schema.get("properties", {})


def corrective_message(
    error: str,
    spec: AnswerSpec,
    mode: str,
    tag: str = DEFAULT_TAG,
    schema: dict[str, Any] | None = None,
) -> str:
    """The short turn sent after an invalid answer: what was wrong, and the format again.
    In native mode it names only the fields the reply's ``schema`` has (``"reasoning"`` only
    when the schema asks for it)."""
    if mode == "native":
        if _names_reasoning(schema):
            how = (
                'Reply with only the JSON object: a brief "reasoning", then the answer in the'
                ' "answer" field.'
            )
        else:
            how = 'Reply with only the JSON object, with the answer in the "answer" field.'
    else:
        shown = tags_example(spec, example_value(spec))
        how = f"End your reply with the answer between <{tag}> and </{tag}>, e.g. <{tag}>{shown}</{tag}>."
    return f"Your answer could not be used: {error}. The answer must be {spec.describe()}. {how}"


# -- parsing -----------------------------------------------------------------


def parse_response(
    response: ChatResponse,
    spec: AnswerSpec,
    mode: str,
    tag: str = DEFAULT_TAG,
    schema: dict[str, Any] | None = None,
) -> Parsed:
    """Turn a provider response into a valid answer, or raise :class:`InvalidAnswer`.
    ``schema``: the native reply's schema (its error messages name only its fields)."""
    if response.refusal:
        raise InvalidAnswer(f"the model refused ({_short(response.refusal)})")
    if mode == "native":
        return parse_native(response, spec, reasoning=schema is None or _names_reasoning(schema))
    return parse_tags(response.text or "", spec, tag, truncated=response.finish_reason in TRUNCATED)


def parse_tags(
    text: str, spec: AnswerSpec, tag: str = DEFAULT_TAG, truncated: bool = False
) -> Parsed:
    content = extract_tag(text, tag)
    if content is None and tag != DEFAULT_TAG:
        content = extract_tag(text, DEFAULT_TAG)
    if content is None:
        if truncated:
            raise InvalidAnswer(
                f"the reply was cut off before the <{tag}> tags; keep the reasoning shorter"
            )
        raise InvalidAnswer(f"no <{tag}>...</{tag}> tags in the reply")
    reasoning = text[: text.lower().rfind(f"<{tag.lower()}")].strip() or None
    return Parsed(coerce(content, spec), reasoning)


def extract_tag(text: str, tag: str) -> str | None:
    """The content of the last complete ``<tag>...</tag>`` span (case-insensitive)."""
    t = re.escape(tag)
    matches = re.findall(rf"<\s*{t}\s*>(.*?)<\s*/\s*{t}\s*>", text, flags=re.I | re.S)
    if not matches:
        return None
    return matches[-1].strip()


def coerce(content: str, spec: AnswerSpec) -> Any:
    """Text between tags -> a value the spec accepts (lenient only where unambiguous)."""
    text = _clean(content)
    if isinstance(spec, NumberSpec):
        return spec.validate(_one_number(text))
    if isinstance(spec, ChoiceSpec):
        return _choice(text, spec)
    if isinstance(spec, TextSpec):
        return spec.validate(text)
    if isinstance(spec, StructSpec):
        try:
            obj = _loads(text)
        except InvalidAnswer:
            obj = _fields_from_tags(content, spec)
        return _validate_struct(obj, spec)
    if isinstance(spec, ListSpec):
        return spec.validate(_loads(text))
    return spec.validate(text)


def parse_native(response: ChatResponse, spec: AnswerSpec, reasoning: bool = True) -> Parsed:
    """A native reply's answer; ``reasoning``: whether the schema had a reasoning field (what a
    cut-off reply is told to shorten)."""
    obj = response.data
    if obj is None:
        text = (response.text or "").strip()
        if not text:
            raise InvalidAnswer("empty reply")
        try:
            obj = _loads(text)
        except InvalidAnswer as exc:
            if response.finish_reason in TRUNCATED:
                shorter = "the reasoning" if reasoning else "the answer's text"
                raise InvalidAnswer(f"the JSON reply was cut off; keep {shorter} shorter") from exc
            raise
    reasoning = None
    if isinstance(obj, dict) and "answer" in obj:
        reasoning = obj.get("reasoning") if isinstance(obj.get("reasoning"), str) else None
        value = obj["answer"]
    elif (
        isinstance(spec, StructSpec)
        and isinstance(obj, dict)
        and set(obj) <= set(spec.fields)
        or not isinstance(obj, dict | list)
    ):
        value = obj
    else:
        raise InvalidAnswer('the JSON object has no "answer" field')
    if isinstance(spec, StructSpec):
        return Parsed(_validate_struct(value, spec), reasoning)
    if isinstance(spec, ChoiceSpec) and isinstance(value, str):
        return Parsed(_choice(_clean(value), spec), reasoning)
    return Parsed(spec.validate(value), reasoning)


# -- helpers -----------------------------------------------------------------


def _short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _clean(content: str) -> str:
    text = content.strip()
    text = _FENCE.sub("", text).strip()
    for wrap in ("**", "__", "*", "`", '"', "'"):
        if len(text) >= 2 * len(wrap) and text.startswith(wrap) and text.endswith(wrap):
            text = text[len(wrap) : -len(wrap)].strip()
    return text


def _one_number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    found = _NUMBER.findall(text)
    if len(found) == 1:
        return float(found[0].replace(",", "."))
    if not found:
        raise InvalidAnswer(f"no number in {_short(text)!r}")
    raise InvalidAnswer(f"several numbers in {_short(text)!r}; give exactly one")


def _choice(text: str, spec: ChoiceSpec) -> str:
    try:
        return spec.validate(text)
    except InvalidAnswer:
        pass
    stripped = text.strip(" .!?:;,'\"*`()[]")
    try:
        return spec.validate(stripped)
    except InvalidAnswer:
        pass
    folded = stripped.casefold()
    hits = [
        o for o in spec.options if re.search(rf"(?<!\w){re.escape(o.casefold())}(?!\w)", folded)
    ]
    # an option contained in another ("Same" in "Same goal") must not count twice
    hits = [h for h in hits if not any(h != o and h.casefold() in o.casefold() for o in hits)]
    if len(hits) == 1:
        return hits[0]
    return spec.validate(text)  # raises with the spec's own message


def _loads(text: str) -> Any:
    cleaned = _FENCE.sub("", text.strip()).strip()
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        pass
    # a JSON value embedded in prose: take the outermost {...} or [...]
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = cleaned.find(open_), cleaned.rfind(close)
        if 0 <= start < end:
            try:
                return json.loads(cleaned[start : end + 1])
            except json.JSONDecodeError:
                continue
    raise InvalidAnswer(f"not valid JSON: {_short(cleaned)!r}")


def _fields_from_tags(content: str, spec: StructSpec) -> dict[str, Any]:
    out = {}
    for name in spec.fields:
        value = extract_tag(content, name)
        if value is not None:
            out[name] = _clean(value)
    if not out:
        raise InvalidAnswer(f"expected a JSON object with fields {sorted(spec.fields)}")
    return out


def _validate_struct(obj: Any, spec: StructSpec) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise InvalidAnswer(f"expected an object with fields {sorted(spec.fields)}")
    fixed = {}
    for name, value in obj.items():
        sub = spec.fields.get(name)
        try:
            if isinstance(value, str) and isinstance(sub, ChoiceSpec):
                value = _choice(_clean(value), sub)
            elif isinstance(value, str) and isinstance(sub, NumberSpec):
                value = _one_number(_clean(value))
        except InvalidAnswer as exc:
            raise InvalidAnswer(f"field {name!r}: {exc}") from exc
        fixed[name] = value
    return spec.validate(fixed)


def failure_kind(response: ChatResponse) -> str:
    """Why a reply gave no usable answer: the model "refusal", a reply "truncated" at
    ``max_tokens``, or an "invalid" answer."""
    if response.refusal:
        return "refusal"
    return "truncated" if response.finish_reason in TRUNCATED else "invalid"
