"""Batch mode (``[llm] batch``): the provider's batch API instead of one request per call
(the collector: :mod:`mesa_dilemmas.llm.stack.batch_jobs`).

The innermost model of a client whose backend has a batch API (OpenAI, Anthropic, Gemini) when
batch mode is on.  Calls made at once go out as one batch job; a batch result that failed is
not retried one by one: it stops the run like any call failing for good."""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

from mesa_dilemmas.llm.errors import CallFailed, ContextOverflow, TransientCallError
from mesa_dilemmas.llm.stack.batch_jobs import BatchCollector
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome
from mesa_dilemmas.llm.stack.retries import stopping_error


class Batching:
    """Answers calls through the backend's batch API, one collector per event loop."""

    def __init__(self, backend: Any, label: str, poll_s: float) -> None:
        self.backend = backend
        self.label = label
        self.poll_s = poll_s
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BatchCollector] = (
            weakref.WeakKeyDictionary()
        )

    def batcher(self) -> BatchCollector:
        """The batch collector on the running event loop."""
        loop = asyncio.get_running_loop()
        found = self._batchers.get(loop)
        if found is None:
            found = self._batchers[loop] = BatchCollector(self.backend, self.label, self.poll_s)
        return found

    async def complete(self, call: Call) -> CallOutcome:
        try:
            start = time.perf_counter()
            try:
                response, batch_id = await self.batcher().call(
                    call.request, call.key, call.recorder
                )
            except TransientCallError as exc:  # a batch result is not retried one by one
                call.attempt_failed(exc, time.perf_counter() - start, False)
                raise CallFailed(f"{exc} (in a batch job)", exc.status) from None
        except (ContextOverflow, CallFailed) as exc:
            raise stopping_error(self.label, call.ctx, exc) from None
        return CallOutcome(response, "provider", call.key, 0.0, None, batch_id)
