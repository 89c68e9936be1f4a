"""The one interface every layer of an LLM call implements, and the call it passes down.

A client is a stack of wrappers around a provider (as Concordia's language-model wrappers
are): each holds the model it wraps and adds one concern, in this order from the outside in
(:func:`mesa_dilemmas.llm.client.get_client` builds it):

=====================  ==========================  ==============================================
wrapper                file                        concern
=====================  ==========================  ==============================================
``RunRecording``       ``recording.py``            the run's own record: a resumed run finds its
                                                   earlier answers; every answer and failed
                                                   attempt is recorded
``SharedCache``        ``caching.py``              the shared response cache; waiting when another
                                                   process is making the same call
``Replay``             ``replay.py``               (replay specs, innermost) a miss is an error
``ServerFit``          ``server_fit.py``           a self-hosted server answering one request at a
                                                   time gets one call at a time
``BudgetGuard``        ``budgeting.py``            the run budget: reserve, charge, drain the calls
                                                   in flight before the run stops
``Pricing``            ``pricing.py``              the cost of an answer
``RateLimit``          ``rate_limiting.py``        a concurrency slot and the rate limits
``Retries``            ``retries.py``              (innermost) the backend call, retrying transient
                                                   errors; a call failing for good stops the run
``Batching``           ``batching.py``             (innermost, ``[llm] batch``) the provider's
                                                   batch API instead
=====================  ==========================  ==============================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from mesa_dilemmas.llm.request import CallContext, ChatRequest, ChatResponse

if TYPE_CHECKING:
    from mesa_dilemmas.llm.session import RunState
    from mesa_dilemmas.llm.stores.cache import ResponseCache
    from mesa_dilemmas.llm.stores.recorder import RunRecorder


@dataclass
class CallOutcome:
    response: ChatResponse
    source: str  # "provider" | "cache" | "run" | "replay"
    key: str
    latency_s: float
    cost_usd: float | None
    #: the provider's batch job that answered (batch mode), else None
    batch_id: str | None = None


def _no_record(exc: Exception, latency_s: float, retried: bool) -> None:
    return None


@dataclass
class Call:
    """One call on its way down the stack: the request, where it comes from, and what the
    client resolved once at its start (key, the run, the shared cache)."""

    request: ChatRequest
    ctx: CallContext
    key: str
    request_json: dict
    run: RunState | None
    #: the shared response cache, None when caching is off
    cache: ResponseCache | None
    #: told of every failed provider attempt: ``(exc, latency_s, retried)`` (set by the
    #: run's recording)
    attempt_failed: Callable[[Exception, float, bool], None] = _no_record
    _on_end: list[Callable[[], None]] = field(default_factory=list)

    @property
    def recorder(self) -> RunRecorder | None:
        return self.run.recorder if self.run is not None else None

    def on_end(self, release: Callable[[], None]) -> None:
        """Give something back when the whole call is over, its answer cached and recorded
        (a budget reservation, a cache claim); the last registered is given back first."""
        self._on_end.append(release)

    def end(self) -> None:
        """Run the ``on_end`` releases, last first; each runs even if a later one raised."""
        if not self._on_end:
            return
        release = self._on_end.pop()
        try:
            release()
        finally:
            self.end()


class LanguageModel(Protocol):
    """Answers one call. Every wrapper is one and holds the one it wraps."""

    async def complete(self, call: Call) -> CallOutcome: ...
