"""The backend call, with retries of transient errors (the innermost model of a client).

429s, 5xx, timeouts, connection errors and malformed bodies are retried up to
``max_retries`` (per provider or global), waiting the server's ``Retry-After`` when it gave
one, else backing off exponentially; with ``[llm] on_provider_error = "wait"`` a call is
tried until it answers (one note when the waiting starts).  Every failed attempt is reported
to the call (and so recorded).  A call still failing after its retries never becomes the
rule's answer: it stops the run, resumably (:class:`ProviderFailed`), or for good when the
request was rejected as malformed or the endpoint could not be reached on any attempt
(:class:`ProviderRejected`).  A context overflow is named with the decision it was for.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from mesa_dilemmas.llm.errors import (
    CallFailed,
    ContextOverflow,
    ProviderFailed,
    ProviderRejected,
    TransientCallError,
)
from mesa_dilemmas.llm.request import CallContext, ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome


def max_retries(settings: LLMSettings, provider: str) -> int:
    retries = settings.provider(provider).max_retries
    return settings.max_retries if retries is None else retries


def call_time_limit(settings: LLMSettings, provider: str) -> float:
    """A generous bound on one call's duration, timeouts and retries included."""
    ps = settings.provider(provider)
    return (ps.timeout_s or settings.timeout_s) * (max_retries(settings, provider) + 1) + 10.0


def stopping_error(label: str, ctx: CallContext, exc: CallFailed | ContextOverflow) -> Exception:
    """What a call that failed for good raises: it stops the run, naming the decision."""
    if isinstance(exc, ContextOverflow):  # the fix may depend on the decision's kind
        return ContextOverflow(f"{label}: {ctx.describe()}: {exc}", exc.tokens, exc.window)
    if exc.malformed_request:
        return ProviderRejected(
            f"{label}: {ctx.describe()}: the request was rejected as malformed: "
            f"{exc}; fix the [llm] settings (answer_mode, schema_format) or the spec",
            exc.status,
        )
    return ProviderFailed(
        f'{label}: {ctx.describe()}: {exc}; [llm] on_provider_error = "wait" keeps trying instead',
        exc.status,
    )


class Retries:
    """The backend's answer to a call, retried on transient failures."""

    def __init__(self, backend: Any, settings: LLMSettings, label: str) -> None:
        self.backend = backend
        self.settings = settings
        self.label = label
        self._waiting_said = False

    async def complete(self, call: Call) -> CallOutcome:
        try:
            response = await self.call(call.request, call.attempt_failed)
        except (ContextOverflow, CallFailed) as exc:
            # a call that failed for good never becomes the rule's answer in the model's seat:
            # the run stops (resumably when retrying later may help)
            raise stopping_error(self.label, call.ctx, exc) from None
        return CallOutcome(response, "provider", call.key, 0.0, None)

    async def call(
        self,
        request: ChatRequest,
        on_failure: Callable[[Exception, float, bool], None] | None = None,
    ) -> ChatResponse:
        """The backend call, retried on transient failures (429, 5xx, timeouts, connection
        errors, malformed bodies), waiting ``Retry-After`` when the server gave one.

        ``on_failure(exc, latency_s, retried)`` is told of every failed attempt. An endpoint
        that could not be reached on any attempt stops the run (:class:`ProviderRejected`)."""
        retries = max_retries(self.settings, self.backend.provider)
        keep_trying = self.settings.on_provider_error == "wait"
        last: TransientCallError | None = None
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                return await self.backend.acomplete(request)
            except TransientCallError as exc:
                last = exc
                again = keep_trying or attempt < retries
                if on_failure is not None:
                    on_failure(exc, time.perf_counter() - start, again)
                if not again:
                    break
                if attempt >= retries and not self._waiting_said:
                    self._waiting_said = True
                    print(
                        f"note: {self.label}: {exc}; waiting and trying again "
                        '([llm] on_provider_error = "wait")',
                        file=sys.stderr,
                    )
                wait = exc.retry_after
                if wait is None:
                    cap = 60.0 if attempt >= retries else 8.0
                    wait = min(cap, 0.5 * 2 ** min(attempt, 8)) * (1 - 0.25 * random.random())
                await asyncio.sleep(min(wait, 120.0))
                attempt += 1
            except (CallFailed, ProviderRejected) as exc:
                if on_failure is not None:
                    on_failure(exc, time.perf_counter() - start, False)
                raise
        assert last is not None
        if last.unreachable:
            raise ProviderRejected(f"{self.label}: endpoint unreachable: {last}")
        raise CallFailed(f"{last} (gave up after {retries + 1} attempts)", last.status)
