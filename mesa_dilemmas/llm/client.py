"""The one client every LLM call goes through, whatever the provider.

A client is a stack of wrappers around the provider's backend, each adding one concern (see
:mod:`mesa_dilemmas.llm.stack.language_model` for the interface and the table of wrappers);
:func:`get_client` builds it.  Order of business for a call, from the outside in:
(1) this run's own record (``recording.py``: a resumed run finds what it answered before it
was killed), (2) the shared cache (``caching.py``), (3) for a replay spec, a miss is an error
naming the call (``replay.py``); otherwise (4) when another process is already making the
same call (visible in the shared cache), wait for its answer (bounded) instead of paying
again (``caching.py``), fit the calls to a self-hosted server once (``server_fit.py``),
(5) reserve the call in the run budget (``budgeting.py``: when the budget is reached, the
calls already in flight are let finish and recorded before :class:`BudgetExceeded`
propagates), (6) wait for a concurrency slot and the rate limit (``rate_limiting.py``),
(7) call the backend, retrying malformed responses and transient errors (honouring
``Retry-After``) up to ``max_retries`` and recording every failed attempt (``retries.py``;
``batching.py`` in batch mode), (8) price it (``pricing.py``), charge it, cache it, record
it -- each wrapper on the way back out.  Cache hits are recorded too (with source ``cache`` /
``run``), so the record of a run lists every answer it used.  A rejected key, an unknown
model, an unreachable endpoint, a request rejected as malformed and too many fallbacks raise
:class:`ProviderRejected`, which stops the run; a call still failing after its retries raises
:class:`ProviderFailed` (the run stops resumably) or, with ``on_provider_error = "wait"``, is
tried until it answers.  A failed call never becomes the rule's answer.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable

from mesa_dilemmas.llm import session
from mesa_dilemmas.llm.accounting import PriceTable
from mesa_dilemmas.llm.accounting.budget import Budget
from mesa_dilemmas.llm.accounting.cluster import GateLimiter, gate_name
from mesa_dilemmas.llm.accounting.ratelimit import DEFAULT_CONCURRENCY, ProviderLimiter, SharedRate
from mesa_dilemmas.llm.backends import Backend, create_backend
from mesa_dilemmas.llm.errors import ProviderRejected
from mesa_dilemmas.llm.providers import remote
from mesa_dilemmas.llm.request import CallContext, ChatRequest, ChatResponse, call_key
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec
from mesa_dilemmas.llm.stack.batch_jobs import BatchCollector
from mesa_dilemmas.llm.stack.batching import Batching
from mesa_dilemmas.llm.stack.budgeting import BudgetGuard, drain_in_flight
from mesa_dilemmas.llm.stack.caching import SharedCache
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome, LanguageModel
from mesa_dilemmas.llm.stack.pricing import Pricing
from mesa_dilemmas.llm.stack.rate_limiting import RateLimit
from mesa_dilemmas.llm.stack.recording import RunRecording
from mesa_dilemmas.llm.stack.replay import Replay
from mesa_dilemmas.llm.stack.retries import Retries, call_time_limit
from mesa_dilemmas.llm.stack.server_fit import SERIAL_TIMEOUT_S, ServerFit
from mesa_dilemmas.llm.stores.cache import ResponseCache

__all__ = [
    "MIN_DECISIONS_FOR_RATE",
    "SERIAL_TIMEOUT_S",
    "CallOutcome",
    "LLMClient",
    "get_client",
    "limiter_for",
]

#: decisions a model must have made before its fallback rate can stop the run mid-way (and
#: at least 2 / max_fallback_rate: at 0.05, one early fallback in 10 decisions is noise; the
#: runner checks the whole run's rate at its end)
MIN_DECISIONS_FOR_RATE = 10

_LIMITERS: dict[tuple[int, str], ProviderLimiter] = {}
_CLIENTS: dict[tuple[int, str, str], LLMClient] = {}
#: runs played in lockstep build their policies' clients from several threads at once
_MAKING = threading.RLock()


def limiter_for(backend: Backend, settings: LLMSettings) -> ProviderLimiter:
    """One throttle per endpoint per process, shared by every model and agent using it."""
    key = (os.getpid(), backend.endpoint)
    limiter = _LIMITERS.get(key)
    if limiter is not None:
        return limiter
    with _MAKING:
        return _LIMITERS.get(key) or _new_limiter(key, backend, settings)


def _new_limiter(key: tuple[int, str], backend: Backend, settings: LLMSettings) -> ProviderLimiter:
    """A new throttle for ``key`` (called holding ``_MAKING``)."""
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
        with _MAKING:
            client = _CLIENTS.get(key)
            if client is None:
                client = _CLIENTS[key] = LLMClient(spec, settings)
    return client


class LLMClient:
    """One model's stack of wrappers (``self.model``) around its backend, with what the
    policies ask of the model besides answers: its answer mode, and the fallback rate."""

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        self.spec = spec
        self.settings = settings
        self.label = spec.label
        self.backend = create_backend(spec, settings)
        self.limiter = limiter_for(self.backend, settings)
        self.prices = PriceTable(settings.prices)
        self.replay = spec.provider == "replay"
        #: decisions answered and decisions that fell back (per kind of fallback), in this process
        self.decisions = 0
        self.fallbacks = 0
        self.fallback_kinds: dict[str, int] = {}
        #: the providers' own APIs are paid; the embedded model and self-hosted servers are not
        self.paid_api = remote(spec.provider) and not getattr(self.backend, "base_url", None)
        #: the backend call with retries (also used alone: ``call_uncached``)
        self.retries = Retries(self.backend, settings, self.label)
        self.batch = Batching(self.backend, self.label, settings.batch_poll_s)
        self.server_fit: ServerFit | None = None
        self.model = self._compose()

    def _compose(self) -> LanguageModel:
        """The wrappers, from the backend outwards (see the module docstring for the order)."""
        limit = self.call_time_limit()
        if self.replay:
            model: LanguageModel = SharedCache(Replay(self.label), self.label, limit, claims=False)
            return RunRecording(model, self.label, self.mode_of, replay=True)
        model = self.batch if self.batching else self.retries
        model = RateLimit(model, self.limiter, slots=not self.batching)
        model = Pricing(model, self.prices, self.label)
        model = BudgetGuard(model, Budget(self.settings.budget), limit)
        model = self.server_fit = ServerFit(
            model, self.backend, self.limiter, self.settings, self.label
        )
        model = SharedCache(model, self.label, limit)
        return RunRecording(model, self.label, self.mode_of)

    async def complete(self, request: ChatRequest, ctx: CallContext) -> CallOutcome:
        """Answer one request: from the record, the cache, or the provider."""
        call = Call(
            request,
            ctx,
            key=call_key(self.label, request, ctx.sample_id),
            request_json=request.to_json(),
            run=session.current(),
            cache=self.cache(),
        )
        try:
            return await self.model.complete(call)
        finally:
            call.end()  # a budget reservation, a cache claim: given back once all is stored

    async def fit_to_server(self) -> None:
        """Once per client: a self-hosted server that answers one request at a time gets one
        call at a time, with a timeout that covers a whole reply (``serving`` probes it)."""
        if self.server_fit is not None:
            await self.server_fit.fit()

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
            await drain_in_flight()
            raise ProviderRejected(
                f"{self.label}: {self.fallbacks} of {self.decisions} decisions fell back to the "
                f"rule ({self.fallbacks / self.decisions:.0%} > max_fallback_rate {limit:g}); "
                f"last error: {error}"
            )

    @property
    def batching(self) -> bool:
        """Batch mode: ``[llm] batch`` and a backend with a batch API (OpenAI, Anthropic, Gemini)."""
        return self.settings.batch and hasattr(self.backend, "submit_batch")

    def batcher(self) -> BatchCollector:
        """This client's batch collector on the running event loop."""
        return self.batch.batcher()

    def cache(self) -> ResponseCache | None:
        if not (self.settings.cache or self.replay):
            return None
        return ResponseCache.at(self.settings.resolved_cache_dir())

    def call_time_limit(self) -> float:
        """A generous bound on one call's duration, timeouts and retries included."""
        return call_time_limit(self.settings, self.backend.provider)

    async def call_uncached(
        self,
        request: ChatRequest,
        on_failure: Callable[[Exception, float, bool], None] | None = None,
    ) -> ChatResponse:
        """The backend call alone, retried on transient failures (see ``retries.py``)."""
        return await self.retries.call(request, on_failure)
