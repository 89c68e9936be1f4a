"""Policies answer decisions.  A rule, a strategy object and an LLM are all policies.

The contract is one method, ``decide(decision) -> answer`` (and its async twin
``adecide`` that LLM backends override so a whole phase can be answered
concurrently).  A policy may return a bare value or an :class:`Answer` that also
reports how the value was obtained (raw text, retries, whether the documented
fallback had to be used); the broker counts both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.agents.decisions import Decision

if TYPE_CHECKING:
    from mesa_dilemmas.agents.base import DilemmaAgent


@dataclass
class Answer:
    """A value plus the bookkeeping of how it was produced."""

    value: Any
    raw: str | None = None
    retries: int = 0
    parse_failures: int = 0
    fell_back: bool = False
    error: str | None = None


class Policy:
    """Base policy. Subclasses override ``decide`` (sync) or ``adecide`` (async)."""

    #: short name shown in results ("rule", "strategy", "llm:openai:gpt-4o", ...)
    name: str = "policy"
    #: True when answering means I/O: the broker then gathers a phase's requests concurrently
    is_async: bool = False
    #: a strict policy's invalid answer is a bug (raise); a lenient one falls back and is counted
    strict: bool = True
    #: True when the policy reads the game's words (prompt texts a game may render into an
    #: observation only for such policies, since rendering text costs time); rules read data
    reads_text: bool = False

    agent: DilemmaAgent | None = None

    def bind(self, agent: DilemmaAgent | None) -> None:
        """Called once when the policy is attached to its agent (None for a narrator)."""
        self.agent = agent

    def decide(self, decision: Decision) -> Any | Answer:
        raise NotImplementedError(f"{type(self).__name__} cannot answer {decision.kind!r}")

    async def adecide(self, decision: Decision) -> Any | Answer:
        return self.decide(decision)


class RulePolicy(Policy):
    """A policy written in code: ``decide`` dispatches on the last part of the kind.

    ``harvest.effort`` is answered by the method ``effort(decision)``, so a rule
    for a new decision is a new method and nothing else.
    """

    name = "rule"

    def decide(self, decision: Decision) -> Any:
        handler = getattr(self, decision.kind.rsplit(".", 1)[-1], None)
        if handler is None:
            return super().decide(decision)
        return handler(decision)


class FixedPolicy(Policy):
    """Answers every decision from a mapping kind -> value; handy in tests and scripted play."""

    name = "fixed"

    def __init__(self, answers: dict[str, Any]):
        self.answers = dict(answers)

    def decide(self, decision: Decision) -> Any:
        if decision.kind not in self.answers:
            return super().decide(decision)
        value = self.answers[decision.kind]
        return value(decision) if callable(value) else value
