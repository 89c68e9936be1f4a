"""A scripted player for the loopback test servers: it reads the prompt, not a model.

This is test scaffolding, not a language model.  It answers what the LLM layer
asks in a way that is deterministic (a hash of the request seeds its choices)
and valid by construction: in native mode it builds an instance of the JSON
schema sent with the request; in tags mode it reads the answer instructions the
layer wrote ("... must be a whole number between 0 and 10 ... between <answer>
and </answer> tags") and answers inside those tags.  Tests that need a real
model use the bundled SmolLM2 through the ``local`` backend or llama.cpp's
OpenAI-compatible server.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class NormalizedRequest:
    """The parts of a chat request the responder needs, whatever the wire format."""

    api: str
    model: str
    system: str
    messages: list[tuple[str, str]]
    schema: dict[str, Any] | None = None
    max_tokens: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def last_user(self) -> str:
        for role, text in reversed(self.messages):
            if role == "user":
                return text
        return ""

    def rng(self) -> random.Random:
        digest = hashlib.sha256(json.dumps(self.raw, sort_keys=True).encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass
class Reply:
    text: str
    data: Any = None
    #: the OpenAI wire's finish_reason ("length": the reply was cut at max_tokens)
    finish_reason: str = "stop"


def instance(schema: dict[str, Any], rng: random.Random) -> Any:
    """A valid instance of the small JSON schemas the LLM layer sends."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return {name: instance(sub, rng) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        n = min(2, schema.get("maxItems", 2))
        return [instance(schema.get("items", {}), rng) for _ in range(n)]
    if kind == "integer":
        low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 10))
        return rng.randint(low, high)
    if kind == "number":
        low, high = float(schema.get("minimum", 0)), float(schema.get("maximum", 1))
        return round(rng.uniform(low, high), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "string":
        text = "I weigh my own payoff against the group's and the future of the resource."
        return text[: schema.get("maxLength", len(text))]
    return None


_TAG = re.compile(r"between <(\w+)> and </\1>")
_RANGE = re.compile(
    r"must be (a whole number|a number) between (-?\d+(?:\.\d+)?) and (-?\d+(?:\.\d+)?)"
)
_CHOICE = re.compile(r"must be exactly one of: (.+?)\. ")
_EXAMPLE = re.compile(r"for example <(\w+)>(.*?)</\1>|e\.g\. <(\w+)>(.*?)</\3>", re.S)


def tags_answer(prompt: str, rng: random.Random) -> str:
    """The content to put between the tags, read from the layer's own instructions."""
    m = _RANGE.search(prompt)
    if m:
        low, high = float(m.group(2)), float(m.group(3))
        if m.group(1) == "a whole number":
            return str(rng.randint(int(low), int(high)))
        return f"{rng.uniform(low, high):.2f}"
    m = _CHOICE.search(prompt)
    if m:
        return rng.choice([o.strip() for o in m.group(1).split(", ")])
    m = _EXAMPLE.search(prompt)
    if m:
        return m.group(2) if m.group(2) is not None else m.group(4)
    return "I think we should all fish less."


def one_side_only(value: Any) -> Any:
    """A scripted player follows a rule the schema cannot say but the instructions do: in an
    offer (``give`` / ``receive`` bundles) a resource goes on one side only."""
    if isinstance(value, list):
        return [one_side_only(v) for v in value]
    if isinstance(value, dict):
        out = {k: one_side_only(v) for k, v in value.items()}
        give, receive = out.get("give"), out.get("receive")
        if isinstance(give, dict) and isinstance(receive, dict):
            out["receive"] = {k: (0 if give.get(k) else n) for k, n in receive.items()}
        return out
    return value


def scripted_reply(req: NormalizedRequest) -> Reply:
    rng = req.rng()
    if req.schema is not None:
        data = one_side_only(instance(req.schema, rng))
        return Reply(json.dumps(data), data)
    prompt = req.last_user
    tags = _TAG.findall(prompt)
    tag = tags[-1] if tags else "answer"
    answer = tags_answer(prompt, rng)
    return Reply(f"Let me think about the group and my own payoff. <{tag}>{answer}</{tag}>")


def invalid_reply(req: NormalizedRequest) -> Reply:
    """A reply the layer must reject (no tags / no answer field): exercises corrective retries."""
    if req.schema is not None:
        data = {"reasoning": "I am not sure what to do."}
        return Reply(json.dumps(data), data)
    return Reply("I am not sure what to do this round.")
