"""The run's own record around a call (the outermost wrapper).

Before anything else the run's record (``llm_calls.sqlite``) is asked: a resumed run finds
what it answered before it was killed, whether or not the shared cache still has it.
Every answer the call ends with is recorded -- found again (source ``run``, ``cache``, or
``replay`` for a replay spec) or paid (``provider``, with the structured-output mode and
the batch job) -- and so is every failed attempt (``error``, ``http_status``, ``retried``),
so the record of a run lists every answer it used and every call it paid for, each with the
prompt variant its prompt was rendered in (read when the call starts, in the caller's context).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import replace

from mesa_dilemmas.llm.request import ChatRequest
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome, LanguageModel
from mesa_dilemmas.llm.stores.recorder import PROMPT_VARIANT


class RunRecording:
    """The run's record: looked up first, and written with every answer and failed attempt."""

    def __init__(
        self,
        model: LanguageModel,
        label: str,
        mode_of: Callable[[ChatRequest], str],
        replay: bool = False,
    ) -> None:
        self.model = model
        self.label = label
        self.mode_of = mode_of
        #: a replay spec: every answer found again is recorded (and returned) as ``replay``
        self.replay = replay

    async def complete(self, call: Call) -> CallOutcome:
        recorder = call.recorder
        variant = PROMPT_VARIANT.get()  # the caller's; a batch or retry may answer elsewhere
        if recorder is not None:
            hit = recorder.lookup(call.key)
            if hit is not None:
                outcome = CallOutcome(hit, "replay" if self.replay else "run", call.key, 0.0, 0.0)
                self._record(call, outcome, variant)
                return outcome
            call.attempt_failed = lambda exc, latency, retried: self._failed(
                call, exc, latency, retried, variant
            )
        outcome = await self.model.complete(call)
        if self.replay and outcome.source != "provider":
            outcome = replace(outcome, source="replay")
        if recorder is not None:
            self._record(call, outcome, variant)
            if outcome.batch_id is not None:
                recorder.finish_batch(outcome.batch_id)
        return outcome

    def _record(self, call: Call, outcome: CallOutcome, variant: int | None = None) -> None:
        assert call.recorder is not None
        paid: dict = {}
        if outcome.source == "provider":
            paid = {"mode": self.mode_of(call.request), "batch_id": outcome.batch_id}
        call.recorder.record_call(
            call.ctx,
            key=call.key,
            label=self.label,
            source=outcome.source,
            request=call.request_json,
            response=outcome.response,
            latency_s=outcome.latency_s,
            cost_usd=outcome.cost_usd,
            variant=variant,
            **paid,
        )

    def _failed(
        self,
        call: Call,
        exc: Exception,
        latency: float,
        retried: bool,
        variant: int | None = None,
    ) -> None:
        assert call.recorder is not None
        with contextlib.suppress(sqlite3.ProgrammingError):  # abandoned at the run's end
            call.recorder.record_call(
                call.ctx,
                key=call.key,
                label=self.label,
                source="provider",
                request=call.request_json,
                response=None,
                latency_s=latency,
                cost_usd=None,
                error=str(exc),
                http_status=getattr(exc, "status", None),
                retried=retried,
                mode=self.mode_of(call.request),
                variant=variant,
            )
