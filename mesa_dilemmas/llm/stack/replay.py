"""Replay specs (``replay:openai:gpt-4o``): answers come from the records only.

A replay spec's stack is the run's record and the shared cache around :class:`Replay`: a
call neither of them answers is an error naming the call (:class:`ReplayMiss`), never a
provider call.  Answers found again are recorded with source ``replay``."""

from __future__ import annotations

from mesa_dilemmas.llm.errors import ReplayMiss
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome


class Replay:
    """The innermost model of a replay spec: every call that reaches it is a miss."""

    def __init__(self, label: str) -> None:
        self.label = label

    async def complete(self, call: Call) -> CallOutcome:
        raise ReplayMiss(
            f"replay: no recorded call for {self.label}: {call.ctx.describe()} "
            f"(key {call.key[:16]})"
        )
