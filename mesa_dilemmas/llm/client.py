"""The one client every LLM call goes through, whatever the provider.

Order of business for a call: (1) this run's own record (a resumed run finds
what it answered before it was killed), (2) the shared cache, (3) for a replay
spec, a miss is an error naming the call; otherwise (4) when another process is
already making the same call (visible in the shared cache), wait for its answer
(bounded) instead of paying again, (5) reserve the call in the run budget (when
the budget is reached, the calls already in flight are let finish and recorded
before :class:`BudgetExceeded` propagates), (6) wait for a concurrency slot and
the rate limit, (7) call the backend, retrying malformed responses and transient
errors (honouring ``Retry-After``) up to ``max_retries`` and recording every
failed attempt, (8) price it, cache it, record it.  Cache hits are recorded too
(with source ``cache`` / ``run``), so the record of a run lists every answer it
used.  A rejected key, an unknown model, an unreachable endpoint, a request rejected
as malformed and too many fallbacks raise :class:`ProviderRejected`, which stops the
run; a call still failing after its retries raises :class:`ProviderFailed` (the run
stops resumably) or, with ``on_provider_error = "wait"``, is tried until it answers.
A failed call never becomes the rule's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import sqlite3
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from mesa_dilemmas.llm import session
from mesa_dilemmas.llm.accounting import PriceTable
from mesa_dilemmas.llm.backends import Backend, create_backend
from mesa_dilemmas.llm.batch import BatchCollector
from mesa_dilemmas.llm.budget import Budget
from mesa_dilemmas.llm.cache import ResponseCache
from mesa_dilemmas.llm.cluster import GateLimiter, gate_name
from mesa_dilemmas.llm.errors import (
    BudgetExceeded,
    CallFailed,
    ContextOverflow,
    ProviderFailed,
    ProviderRejected,
    ReplayMiss,
    TransientCallError,
)
from mesa_dilemmas.llm.ratelimit import DEFAULT_CONCURRENCY, ProviderLimiter, SharedRate
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


#: the per-attempt timeout for a server that answers few requests at a time: queued calls
#: must not time out (and be sent again) while the server is still generating earlier ones
SERIAL_TIMEOUT_S = 600.0
#: decisions a model must have made before its fallback rate can stop the run mid-way (and
#: at least 2 / max_fallback_rate: at 0.05, one early fallback in 10 decisions is noise; the
#: runner checks the whole run's rate at its end)
MIN_DECISIONS_FOR_RATE = 10

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
        if gate_name():  # a Ray run: limits for all workers of the cluster
            limiter = _LIMITERS[key] = GateLimiter(
                backend.endpoint, concurrency, ps.requests_per_minute, ps.tokens_per_minute
            )
        else:  # rates per key, shared by every process of the machine
            shared = None
            if ps.requests_per_minute or ps.tokens_per_minute:
                identity = f"{backend.endpoint}#{getattr(backend, 'api_key', None) or ''}"
                shared = SharedRate(
                    settings.resolved_cache_dir(),
                    identity,
                    ps.requests_per_minute,
                    ps.tokens_per_minute,
                )
            limiter = _LIMITERS[key] = ProviderLimiter(
                concurrency, ps.requests_per_minute, ps.tokens_per_minute, shared
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
        #: decisions answered and decisions that fell back (per kind of fallback), in this process
        self.decisions = 0
        self.fallbacks = 0
        self.fallback_kinds: dict[str, int] = {}
        #: the providers' own APIs are paid; the embedded model and self-hosted servers are not
        self.paid_api = spec.provider in ("openai", "anthropic", "gemini") and not getattr(
            self.backend, "base_url", None
        )
        self._waiting_said = False
        #: whether the endpoint's way of serving was probed (fit_to_server)
        self._fitted = False
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BatchCollector] = (
            weakref.WeakKeyDictionary()
        )

    async def fit_to_server(self) -> None:
        """Once per client: a self-hosted server that answers one request at a time gets one
        call at a time, with a timeout that covers a whole reply (``serving`` probes it)."""
        if self._fitted:
            return
        self._fitted = True
        probe = getattr(self.backend, "serving", None)
        if probe is None:
            return
        concurrency, _ = await probe()
        if concurrency is None:
            return
        self.limiter.limit_concurrency(concurrency)
        ps = self.settings.provider(self.backend.provider)
        if ps.timeout_s is None:  # an explicit timeout is kept
            self.backend.timeout = max(self.backend.timeout, SERIAL_TIMEOUT_S)
        print(
            f"note: {self.label}: the server answers {concurrency} request(s) at a time; "
            f"sending at most {concurrency} at once (timeout {self.backend.timeout:.0f} s a call)",
            file=sys.stderr,
        )

    async def answer_mode(self) -> str:
        """``"native"``, or ``"tags"`` when the endpoint takes no structured output (probed once
        per endpoint and process by backends that can tell, see ``native_mode``)."""
        probe = getattr(self.backend, "native_mode", None)
        if probe is None:
            return "native"
        return "tags" if await probe() == "tags" else "native"

    def mode_of(self, request: ChatRequest) -> str:
        """The structured-output mode of a request as sent (recorded with each attempt)."""
        if request.schema is None:
            return "tags" if self.settings.answer_mode == "native" else self.settings.answer_mode
        return getattr(self.backend, "schema_mode", "native")

    async def note_decision(
        self, fell_back: bool, error: str | None = None, kind: str | None = None
    ) -> None:
        """Count a decision; stop the run when too many fall back (``max_fallback_rate``):
        a run whose answers are mostly the rule's must not pass for the model's.  The calls
        still in flight finish (and are recorded) before the run stops."""
        self.decisions += 1
        self.fallbacks += int(fell_back)
        if fell_back and kind:
            self.fallback_kinds[kind] = self.fallback_kinds.get(kind, 0) + 1
        limit = self.settings.fallback_limit(self.paid_api)
        if (
            fell_back
            and self.decisions >= max(MIN_DECISIONS_FOR_RATE, math.ceil(2 / max(limit, 1e-9)))
            and self.fallbacks > limit * self.decisions
        ):
            await _drain_in_flight()
            raise ProviderRejected(
                f"{self.label}: {self.fallbacks} of {self.decisions} decisions fell back to the "
                f"rule ({self.fallbacks / self.decisions:.0%} > max_fallback_rate {limit:g}); "
                f"last error: {error}"
            )

    @property
    def batching(self) -> bool:
        """Batch mode: ``[llm] batch`` and a backend with a batch API (OpenAI, Anthropic)."""
        return self.settings.batch and hasattr(self.backend, "submit_batch")

    def batcher(self) -> BatchCollector:
        """This client's batch collector on the running event loop."""
        loop = asyncio.get_running_loop()
        found = self._batchers.get(loop)
        if found is None:
            found = self._batchers[loop] = BatchCollector(
                self.backend, self.label, self.settings.batch_poll_s
            )
        return found

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
            hit, source = cache.get(key, self.label), "cache"
        if hit is not None:
            source = "replay" if self.replay else source
            if recorder is not None:
                recorder.record_call(
                    ctx,
                    key=key,
                    label=self.label,
                    source=source,
                    request=req_json,
                    response=hit,
                    latency_s=0.0,
                    cost_usd=0.0,
                )
            return CallOutcome(hit, source, key, 0.0, 0.0)
        if self.replay:
            raise ReplayMiss(
                f"replay: no recorded call for {self.label}: {ctx.describe()} (key {key[:16]})"
            )

        if cache is not None and not cache.claim(key, stale_after=self.call_time_limit()):
            # another process is paying for this very answer: wait for it (bounded)
            hit = await cache.wait_for(key, timeout=self.call_time_limit())
            if hit is not None:
                if recorder is not None:
                    recorder.record_call(
                        ctx,
                        key=key,
                        label=self.label,
                        source="cache",
                        request=req_json,
                        response=hit,
                        latency_s=0.0,
                        cost_usd=0.0,
                    )
                return CallOutcome(hit, "cache", key, 0.0, 0.0)
            cache.claim(key, stale_after=0.0)  # it gave up or took too long: pay for it here
        try:
            await self.fit_to_server()
            return await self._reserved_call(request, ctx, key, req_json, recorder, cache, run)
        finally:
            # a call abandoned when the run stopped ends after the cache was closed: its
            # claim then expires on its own
            if cache is not None:
                with contextlib.suppress(sqlite3.ProgrammingError):
                    cache.release(key)

    async def _reserved_call(
        self,
        request: ChatRequest,
        ctx: CallContext,
        key: str,
        req_json: dict,
        recorder: RunRecorder | None,
        cache: ResponseCache | None,
        run: session.RunState | None,
    ) -> CallOutcome:
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
        except ProviderRejected:
            # the run stops: as for a budget, let the other calls in flight finish and be
            # recorded first, rather than be abandoned half-way
            budget.release()
            done.set_result(None)
            await _drain_in_flight()
            raise
        finally:
            if not done.done():
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

        def failed_attempt(exc: Exception, latency: float, retried: bool) -> None:
            if recorder is None:
                return
            with contextlib.suppress(sqlite3.ProgrammingError):  # abandoned at the run's end
                recorder.record_call(
                    ctx,
                    key=key,
                    label=self.label,
                    source="provider",
                    request=req_json,
                    response=None,
                    latency_s=latency,
                    cost_usd=None,
                    error=str(exc),
                    http_status=getattr(exc, "status", None),
                    retried=retried,
                    mode=self.mode_of(request),
                )

        batch_id: str | None = None
        try:
            if self.batching:
                start = time.perf_counter()
                try:
                    response, batch_id = await self.batcher().call(request, key, recorder)
                except TransientCallError as exc:  # a batch result is not retried one by one
                    failed_attempt(exc, time.perf_counter() - start, False)
                    raise CallFailed(f"{exc} (in a batch job)", exc.status) from None
            else:
                async with self.limiter.slot(estimate):
                    start = time.perf_counter()
                    response = await self.call_uncached(request, failed_attempt)
        except ContextOverflow as exc:  # name the decision: the fix may depend on its kind
            raise ContextOverflow(
                f"{self.label}: {ctx.describe()}: {exc}", exc.tokens, exc.window
            ) from None
        except CallFailed as exc:
            # a call that failed for good never becomes the rule's answer in the model's seat:
            # the run stops (resumably when retrying later may help)
            if exc.malformed_request:
                raise ProviderRejected(
                    f"{self.label}: {ctx.describe()}: the request was rejected as malformed: "
                    f"{exc}; fix the [llm] settings (answer_mode, schema_format) or the spec",
                    exc.status,
                ) from None
            raise ProviderFailed(
                f"{self.label}: {ctx.describe()}: {exc}; "
                '[llm] on_provider_error = "wait" keeps trying instead',
                exc.status,
            ) from None
        latency = time.perf_counter() - start
        extra = response.extra or {}
        cost = self.prices.cost(
            self.label,
            response.tokens_in,
            response.tokens_out,
            cached_in=int(extra.get("cached_tokens") or 0),
            cache_write=int(extra.get("cache_write_tokens") or 0),
            batch=batch_id is not None,
        )
        self.limiter.settle(estimate, response.tokens_in + response.tokens_out)
        budget.charge(response.tokens_in + response.tokens_out, cost)
        if cache is not None:
            cache.put(key, self.label, req_json, response)
        if recorder is not None:
            recorder.record_call(
                ctx,
                key=key,
                label=self.label,
                source="provider",
                request=req_json,
                response=response,
                latency_s=latency,
                cost_usd=cost,
                mode=self.mode_of(request),
                batch_id=batch_id,
            )
            if batch_id is not None:
                recorder.finish_batch(batch_id)
        return CallOutcome(response, "provider", key, latency, cost)

    async def call_uncached(
        self,
        request: ChatRequest,
        on_failure: Callable[[Exception, float, bool], None] | None = None,
    ) -> ChatResponse:
        """The backend call, retried on transient failures (429, 5xx, timeouts, connection
        errors, malformed bodies), waiting ``Retry-After`` when the server gave one.

        ``on_failure(exc, latency_s, retried)`` is told of every failed attempt. An endpoint
        that could not be reached on any attempt stops the run (:class:`ProviderRejected`)."""
        retries = self.settings.provider(self.backend.provider).max_retries
        retries = self.settings.max_retries if retries is None else retries
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
