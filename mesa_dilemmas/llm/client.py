"""The one client every LLM call goes through, whatever the provider.

Order of business for a call: (1) this run's own record (a resumed run finds
what it answered before it was killed), (2) the shared cache, (3) for a replay
spec, a miss is an error naming the call; otherwise (4) reserve the call in the
run budget (when the budget is reached, the calls already in flight are let
finish and recorded before :class:`BudgetExceeded` propagates), (5) wait for a concurrency slot and the rate limit, (6) call the
backend, retrying malformed responses and transient errors (honouring
``Retry-After``) up to ``max_retries``, (7) price it, cache it, record it.
Cache hits are recorded too (with source ``cache`` / ``run``), so the record of
a run lists every answer it used.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import weakref
from dataclasses import dataclass

from mesa_dilemmas.llm import session
from mesa_dilemmas.llm.accounting import PriceTable
from mesa_dilemmas.llm.backends import Backend, create_backend
from mesa_dilemmas.llm.budget import Budget
from mesa_dilemmas.llm.cache import ResponseCache
from mesa_dilemmas.llm.cluster import GateLimiter, gate_name
from mesa_dilemmas.llm.errors import BudgetExceeded, CallFailed, ReplayMiss, TransientCallError
from mesa_dilemmas.llm.ratelimit import DEFAULT_CONCURRENCY, ProviderLimiter
from mesa_dilemmas.llm.recorder import RunRecorder
from mesa_dilemmas.llm.request import CallContext, ChatRequest, ChatResponse, call_key
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec


@dataclass
class CallOutcome:
    response: ChatResponse
    source: str  # "provider" | "cache" | "run" | "replay"
    key: str
    latency_s: float
    cost_usd: float | None


_LIMITERS: dict[tuple[int, str], ProviderLimiter] = {}
#: per event loop, the paid calls in flight (a future each, resolved when the call is over)
_IN_FLIGHT: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[asyncio.Future]] = (
    weakref.WeakKeyDictionary()
)


def _track_in_flight() -> asyncio.Future:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    calls = _IN_FLIGHT.setdefault(loop, set())
    calls.add(done)
    done.add_done_callback(calls.discard)
    return done


async def _drain_in_flight() -> None:
    pending = list(_IN_FLIGHT.get(asyncio.get_running_loop(), ()))
    if pending:
        await asyncio.gather(*pending)


_CLIENTS: dict[tuple[int, str, str], LLMClient] = {}


def limiter_for(backend: Backend, settings: LLMSettings) -> ProviderLimiter:
    """One throttle per endpoint per process, shared by every model and agent using it."""
    key = (os.getpid(), backend.endpoint)
    limiter = _LIMITERS.get(key)
    if limiter is None:
        ps = settings.provider(backend.provider)
        concurrency = backend.max_concurrency or ps.max_concurrency or DEFAULT_CONCURRENCY
        limit_cls = GateLimiter if gate_name() else ProviderLimiter  # a Ray run: limits for all workers
        limiter = _LIMITERS[key] = limit_cls(
            *((backend.endpoint,) if gate_name() else ()),
            concurrency,
            ps.requests_per_minute,
            ps.tokens_per_minute,
        )
    return limiter


def get_client(spec: ModelSpec, settings: LLMSettings) -> LLMClient:
    """The process-wide client of a (spec, settings) pair; agents sharing a model share it."""
    key = (os.getpid(), str(spec), settings.model_dump_json())
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = LLMClient(spec, settings)
    return client


class LLMClient:
    """Cache, replay, budget, throttle, retries, pricing and recording around one backend."""

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        self.spec = spec
        self.settings = settings
        self.label = spec.label
        self.backend = create_backend(spec, settings)
        self.limiter = limiter_for(self.backend, settings)
        self.prices = PriceTable(settings.prices)
        self._budget = Budget(settings.budget)  # used outside a run session
        self.replay = spec.provider == "replay"

    def cache(self) -> ResponseCache | None:
        if not (self.settings.cache or self.replay):
            return None
        return ResponseCache.at(self.settings.resolved_cache_dir())

    async def complete(self, request: ChatRequest, ctx: CallContext) -> CallOutcome:
        """Answer one request: from the record, the cache, or the provider."""
        key = call_key(self.label, request, ctx.sample_id)
        run = session.current()
        recorder = run.recorder if run else None
        req_json = request.to_json()
        cache = self.cache()

        hit, source = None, "run"
        if recorder is not None:
            hit = recorder.lookup(key)
        if hit is None and cache is not None:
            hit, source = cache.get(key), "cache"
        if hit is not None:
            source = "replay" if self.replay else source
            if recorder is not None:
                recorder.record_call(
                    ctx, key=key, label=self.label, source=source, request=req_json,
                    response=hit, latency_s=0.0, cost_usd=0.0,
                )  # fmt: skip
            return CallOutcome(hit, source, key, 0.0, 0.0)
        if self.replay:
            raise ReplayMiss(
                f"replay: no recorded call for {self.label}: {ctx.describe()} (key {key[:16]})"
            )

        budget = run.budget if run is not None else self._budget
        try:
            budget.reserve()
        except BudgetExceeded:
            # the broker's gather stops at the first exception and abandons its other tasks,
            # and the batch runner then ends its workers: let every call already in flight,
            # here and in the other workers, finish and be recorded first
            await _drain_in_flight()
            await budget.wait_idle(self.call_time_limit())
            raise
        done = _track_in_flight()
        try:
            return await self._paid_call(request, ctx, key, req_json, recorder, cache, budget)
        finally:
            budget.release()
            done.set_result(None)

    def call_time_limit(self) -> float:
        """A generous bound on one call's duration, timeouts and retries included."""
        ps = self.settings.provider(self.backend.provider)
        retries = self.settings.max_retries if ps.max_retries is None else ps.max_retries
        return (ps.timeout_s or self.settings.timeout_s) * (retries + 1) + 10.0

    async def _paid_call(
        self,
        request: ChatRequest,
        ctx: CallContext,
        key: str,
        req_json: dict,
        recorder: RunRecorder | None,
        cache: ResponseCache | None,
        budget: Budget,
    ) -> CallOutcome:
        estimate = request.prompt_chars() / 4 + request.max_tokens
        start = time.perf_counter()
        try:
            async with self.limiter.slot(estimate):
                start = time.perf_counter()
                response = await self.call_uncached(request)
        except CallFailed as exc:
            if recorder is not None:
                recorder.record_call(
                    ctx, key=key, label=self.label, source="provider", request=req_json,
                    response=None, latency_s=time.perf_counter() - start, cost_usd=None,
                    error=str(exc),
                )  # fmt: skip
            raise
        latency = time.perf_counter() - start
        cost = self.prices.cost(self.label, response.tokens_in, response.tokens_out)
        self.limiter.settle(estimate, response.tokens_in + response.tokens_out)
        budget.charge(response.tokens_in + response.tokens_out, cost)
        if cache is not None:
            cache.put(key, self.label, req_json, response)
        if recorder is not None:
            recorder.record_call(
                ctx, key=key, label=self.label, source="provider", request=req_json,
                response=response, latency_s=latency, cost_usd=cost,
            )  # fmt: skip
        return CallOutcome(response, "provider", key, latency, cost)

    async def call_uncached(self, request: ChatRequest) -> ChatResponse:
        """The backend call, retried on what the SDK did not retry (malformed bodies, and for
        Gemini 429/5xx/timeouts), waiting ``Retry-After`` when the server gave one."""
        retries = self.settings.provider(self.backend.provider).max_retries
        retries = self.settings.max_retries if retries is None else retries
        last: TransientCallError | None = None
        for attempt in range(retries + 1):
            try:
                return await self.backend.acomplete(request)
            except TransientCallError as exc:
                last = exc
                if attempt == retries:
                    break
                wait = exc.retry_after
                if wait is None:
                    wait = min(8.0, 0.5 * 2**attempt) * (1 - 0.25 * random.random())
                await asyncio.sleep(min(wait, 120.0))
        raise CallFailed(f"{last} (gave up after {retries + 1} attempts)")
