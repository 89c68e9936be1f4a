"""Batch mode (``[llm] batch = true``): the calls made at once go out as one batch job.

The calls a phase makes at once reach :meth:`BatchCollector.call` within moments of each
other; the collector waits ``GATHER_S`` after the last one, then sends them all as one job
through the backend (OpenAI's Batch API: a JSONL file uploaded, a batch created on
``/v1/chat/completions``, polled, its output file read; Anthropic's Message Batches:
created, polled until ``ended``, its results read) and hands each caller its own result.
Batch jobs cost half the list price (``prices.toml`` ``batch_input``/``batch_output``).

Nothing is paid twice: a job's id and the call keys it carries are written to the run record
(``batches`` table) as soon as the job exists; a run killed while a job is pending finds it
there on ``--resume`` and polls the same job instead of sending its calls again.  Calls
answered before the kill are found in the record before any of this.
"""

from __future__ import annotations

import asyncio
import random
import sys
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.llm.errors import CallFailed, TransientCallError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from mesa_dilemmas.llm.stores.recorder import RunRecorder

#: seconds to wait after the last call of a phase arrives before sending the job: long enough
#: that a phase's calls, built one after another on a loaded machine, still make one job (0.2 s
#: once split a phase in two on a busy 2-core box), short beside any batch job's turnaround
GATHER_S = 1.0


class BatchCollector:
    """Gathers one client's concurrent calls into batch jobs (one collector per event loop)."""

    def __init__(self, backend: Any, label: str, poll_s: float) -> None:
        self.backend = backend
        self.label = label
        self.poll_s = poll_s
        self._pending: list[tuple[str, ChatRequest, asyncio.Future]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._polls: dict[str, asyncio.Task] = {}
        #: every request seen, by call key (a batch's results are turned back into responses)
        self._requests: dict[str, ChatRequest] = {}
        self._recorder: RunRecorder | None = None
        self.jobs = 0

    async def call(
        self, request: ChatRequest, key: str, recorder: RunRecorder | None
    ) -> tuple[ChatResponse, str]:
        """The response to one call and the id of the batch job that carried it."""
        self._recorder = recorder
        self._requests[key] = request
        if recorder is not None:  # a resumed run: this call may be in a job already sent
            for batch_id, keys in recorder.pending_batches(self.label).items():
                if key in keys:
                    return self._pick(await self._poll(batch_id), key), batch_id
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        self._pending.append((key, request, future))
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(GATHER_S, lambda: loop.create_task(self._flush()))
        return await future

    def _pick(self, results: dict[str, Any], key: str) -> ChatResponse:
        got = results.get(key)
        if got is None:
            raise CallFailed(f"{self.label}: the batch job returned no result for this call")
        if isinstance(got, Exception):
            raise got
        return got

    def _poll(self, batch_id: str) -> asyncio.Task:
        task = self._polls.get(batch_id)
        if task is None:
            task = self._polls[batch_id] = asyncio.get_running_loop().create_task(
                self._poll_until_done(batch_id)
            )
        return task

    async def _poll_until_done(self, batch_id: str) -> dict[str, Any]:
        attempt = 0
        while True:
            try:
                results = await self.backend.poll_batch(batch_id, self._requests)
            except TransientCallError as exc:  # polling is free: try again later
                attempt += 1
                print(f"note: {self.label}: batch {batch_id}: {exc}", file=sys.stderr)
                await asyncio.sleep(min(60.0, self.poll_s * 2 ** min(attempt, 6)))
                continue
            if results is not None:
                return results
            await asyncio.sleep(self.poll_s * (1 + 0.1 * random.random()))

    async def _flush(self) -> None:
        items, self._pending, self._timer = self._pending, [], None
        if not items:
            return
        try:
            batch_id = await self.backend.submit_batch([(k, r) for k, r, _ in items])
        except Exception as exc:  # every call of the job fails the same way
            for _, _, future in items:
                if not future.done():
                    future.set_exception(exc)
            return
        self.jobs += 1
        if self._recorder is not None:
            self._recorder.record_batch(batch_id, self.label, [k for k, _, _ in items])
        try:
            results = await self._poll(batch_id)
        except Exception as exc:
            for _, _, future in items:
                if not future.done():
                    future.set_exception(exc)
            return
        for key, _, future in items:
            if future.done():
                continue
            try:
                future.set_result((self._pick(results, key), batch_id))
            except Exception as exc:
                future.set_exception(exc)
