"""Provider-neutral request and response: what every backend takes and returns.

Keeping these plain (JSON-serialisable, no SDK types) is what makes a call
cacheable, recordable and replayable independently of the provider.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion.  ``schema`` is set in native answer mode (the wrapped answer
    schema the provider must follow); ``seed`` is derived from the sample id."""

    messages: tuple[Message, ...]
    temperature: float
    max_tokens: int
    seed: int
    top_p: float | None = None
    schema: dict[str, Any] | None = None

    @property
    def system(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def turns(self) -> list[Message]:
        """The non-system messages, in order."""
        return [m for m in self.messages if m.role != "system"]

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": [asdict(m) for m in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "top_p": self.top_p,
            "schema": self.schema,
        }

    def prompt_chars(self) -> int:
        return sum(len(m.content) for m in self.messages) + len(json.dumps(self.schema or ""))


@dataclass
class ChatResponse:
    """What came back. ``data`` is the structured object when the provider returned one
    (a tool call's input, parsed JSON); ``refusal`` the provider's refusal text."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    finish_reason: str | None = None
    data: Any = None
    refusal: str | None = None
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ChatResponse:
        return cls(**{k: raw.get(k) for k in cls.__dataclass_fields__ if k in raw})


@dataclass(frozen=True)
class CallContext:
    """Who asks and why: ties a call to (run seed, agent, round, decision) for recording,
    accounting and the sample id that makes replications independent but re-runs identical."""

    kind: str
    agent_id: int | None = None
    round: int = 0
    step: int = 0
    counter: int = 0
    attempt: int = 0
    run_seed: str = "none"
    policy: str = ""
    #: whether the reply was asked for reasoning before its answer (recorded with the call
    #: and the decision; not part of the sample id); None when the caller does not say
    reasoning: bool | None = None

    @property
    def sample_id(self) -> str:
        agent = "narrator" if self.agent_id is None else str(self.agent_id)
        return (
            f"{self.run_seed}/{agent}/r{self.round}/s{self.step}/{self.kind}"
            f"/n{self.counter}/a{self.attempt}"
        )

    def describe(self) -> str:
        who = "narrator" if self.agent_id is None else f"agent {self.agent_id}"
        return (
            f"{who}, round {self.round}, decision {self.kind!r} #{self.counter}, "
            f"attempt {self.attempt}, run seed {self.run_seed}"
        )


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def call_key(label: str, request: ChatRequest, sample_id: str) -> str:
    """The content address of a call: provider:model, the full request and the sample id."""
    payload = canonical_json({"model": label, "request": request.to_json(), "sample": sample_id})
    return hashlib.sha256(payload.encode()).hexdigest()


def seed_for(sample_id: str) -> int:
    """A 31-bit sampling seed from the sample id (llama.cpp, OpenAI and Gemini accept it)."""
    return int.from_bytes(hashlib.sha256(sample_id.encode()).digest()[:4], "big") & 0x7FFFFFFF
