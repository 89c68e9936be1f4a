"""LLM limits for a whole Ray run: one actor grants call slots and keeps the budget.

On one machine the run's budget lives in the run's SQLite record and each process throttles
its own calls.  On Ray, tasks run in many worker processes, possibly on many machines, so the
limits that matter -- a provider's concurrency, requests and tokens per minute, and the run's
``[llm.budget]`` -- are held by one named actor, the *gate*, for the whole run:

* before a paid call a worker reserves it in the gate's budget (refused at the limit: the run
  stops with everything recorded), then waits for a slot of the endpoint's concurrency and
  rate; after it, it returns the slot and charges tokens and cost;
* the execution backend starts the gate when a run with LLM agents goes on Ray and sends its
  name with every task (as the run's session travels), which runs inside
  ``with use_gate(name):``; the LLM client then uses :class:`GateLimiter` and
  :class:`GateBudget` instead of its per-process throttle and budget.  No environment variable
  carries it: two runs in one process each see their own gate.

A worker killed while it holds a slot does not give it back: the gate counts slots, not
workers.  Ray retries the task, and the run goes on with one slot fewer for that endpoint
until it ends (documented in ``docs/scaling.md``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from mesa_dilemmas.llm.errors import BudgetExceeded

NAMESPACE = "mesa_dilemmas"

#: the gate of the Ray run this context works for (None: not a Ray run with LLM agents)
_GATE: ContextVar[str | None] = ContextVar("mesa_dilemmas_llm_gate", default=None)


def gate_name() -> str | None:
    """The gate this context must use, or None (outside a Ray run)."""
    return _GATE.get()


@contextmanager
def use_gate(name: str | None) -> Iterator[None]:
    """Work inside the run whose gate actor is ``name`` (None: no gate)."""
    token = _GATE.set(name)
    try:
        yield
    finally:
        _GATE.reset(token)


@dataclass
class _Endpoint:
    semaphore: asyncio.Semaphore
    rpm: float | None
    tpm: float | None
    requests: float = 0.0
    tokens: float = 0.0
    stamp: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    peak: int = 0

    def refill(self) -> None:
        now = time.monotonic()
        dt, self.stamp = now - self.stamp, now
        if self.rpm:
            self.requests = min(self.rpm, self.requests + dt * self.rpm / 60.0)
        if self.tpm:
            self.tokens = min(self.tpm, self.tokens + dt * self.tpm / 60.0)


class CallGate:
    """The actor's logic (plain Python, so it is tested without Ray as well)."""

    def __init__(
        self, max_calls: int | None, max_tokens: int | None, max_cost: float | None
    ) -> None:
        self.max_calls, self.max_tokens, self.max_cost = max_calls, max_tokens, max_cost
        self.calls = self.tokens = 0
        self.cost = 0.0
        self.in_flight = 0
        self.endpoints: dict[str, _Endpoint] = {}

    # -- budget ---------------------------------------------------------------------------
    def reserve(self) -> str | None:
        """Count one paid call; the reason it is refused, or None."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"llm budget reached: max_calls = {self.max_calls} ({self.calls} calls made)"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"llm budget reached: max_tokens = {self.max_tokens} ({self.tokens} tokens used)"
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"llm budget reached: max_cost_usd = {self.max_cost} ({self.cost:.4f} USD spent)"
        self.calls += 1
        self.in_flight += 1
        return None

    def release(self) -> None:
        self.in_flight -= 1

    def charge(self, tokens: int, cost: float) -> None:
        self.tokens += tokens
        self.cost += cost

    def spent(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "tokens": self.tokens,
            "cost_usd": self.cost,
            "in_flight": self.in_flight,
            "peak_in_flight": {k: e.peak for k, e in self.endpoints.items()},
        }

    # -- throttle ---------------------------------------------------------------------------
    async def acquire(
        self,
        endpoint: str,
        est_tokens: float,
        concurrency: int,
        rpm: float | None,
        tpm: float | None,
    ) -> None:
        ep = self.endpoints.get(endpoint)
        if ep is None:
            ep = self.endpoints[endpoint] = _Endpoint(
                asyncio.Semaphore(concurrency), rpm, tpm, rpm or 0.0, tpm or 0.0
            )
        await ep.semaphore.acquire()
        while True:
            ep.refill()
            wait = 0.0
            if ep.rpm and ep.requests < 1:
                wait = (1 - ep.requests) * 60.0 / ep.rpm
            if ep.tpm and ep.tokens < min(est_tokens, ep.tpm):
                wait = max(wait, (min(est_tokens, ep.tpm) - ep.tokens) * 60.0 / ep.tpm)
            if wait <= 0:
                break
            await asyncio.sleep(wait)
        if ep.rpm:
            ep.requests -= 1
        if ep.tpm:
            ep.tokens -= min(est_tokens, ep.tpm)
        ep.in_flight += 1
        ep.peak = max(ep.peak, ep.in_flight)

    async def release_slot(self, endpoint: str) -> None:
        ep = self.endpoints[endpoint]
        ep.in_flight -= 1
        ep.semaphore.release()

    def adjust_tokens(self, endpoint: str, delta: float) -> None:
        """Charge (positive) or refund (negative) the difference between estimate and use."""
        ep = self.endpoints.get(endpoint)
        if ep is not None and ep.tpm:
            ep.tokens = min(ep.tpm, ep.tokens - delta)


def start_gate(name: str, budget: Any) -> Any:
    """Start the run's gate actor (``budget``: the run's ``BudgetSettings``)."""
    import ray

    actor = ray.remote(num_cpus=0, max_concurrency=10_000)(CallGate)
    return actor.options(name=name, namespace=NAMESPACE, lifetime=None).remote(
        budget.max_calls, budget.max_tokens, budget.max_cost_usd
    )


def _gate() -> Any:
    import ray

    return ray.get_actor(gate_name(), namespace=NAMESPACE)


class GateLimiter:
    """The per-endpoint throttle of the LLM client, held by the gate for the whole run."""

    def __init__(
        self, endpoint: str, max_concurrency: int, rpm: float | None, tpm: float | None
    ) -> None:
        self.endpoint, self.max_concurrency, self.rpm, self.tpm = (
            endpoint,
            max_concurrency,
            rpm,
            tpm,
        )
        self.peak_in_flight = 0
        self._pending: dict[int, float] = {}

    @asynccontextmanager
    async def slot(self, est_tokens: float = 0.0) -> AsyncIterator[None]:
        gate = _gate()
        await gate.acquire.remote(
            self.endpoint, est_tokens, self.max_concurrency, self.rpm, self.tpm
        )
        try:
            yield
        finally:
            await gate.release_slot.remote(self.endpoint)

    def settle(self, est_tokens: float, used_tokens: float) -> None:
        """Token use beyond (or below) the estimate goes to the endpoint's per-minute budget."""
        if self.tpm:
            _gate().adjust_tokens.remote(self.endpoint, used_tokens - min(est_tokens, self.tpm))


class GateBudget:
    """The run's ``[llm.budget]`` held by the gate (the interface of ``llm.budget.Budget``)."""

    def __init__(self, limits: Any) -> None:
        self.limits = limits
        #: what stopped the run in this worker, after which it sends no call
        self.stopped: Exception | None = None

    @property
    def unlimited(self) -> bool:
        lim = self.limits
        return lim.max_calls is None and lim.max_tokens is None and lim.max_cost_usd is None

    def reserve(self) -> None:
        import ray

        refused = ray.get(_gate().reserve.remote())
        if refused:
            raise BudgetExceeded(refused)

    def release(self) -> None:
        _gate().release.remote()

    async def wait_idle(self, timeout: float) -> None:
        import ray

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ray.get(_gate().spent.remote())["in_flight"] <= 0:
                return
            await asyncio.sleep(0.05)

    def charge(self, tokens: int, cost: float | None) -> None:
        _gate().charge.remote(tokens, cost or 0.0)

    def spent(self) -> dict[str, float]:
        import ray

        out = ray.get(_gate().spent.remote())
        return {"calls": out["calls"], "tokens": out["tokens"], "cost_usd": out["cost_usd"]}
