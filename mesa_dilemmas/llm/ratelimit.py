"""Per-provider throttling: a concurrency limit and request/token-per-minute buckets.

All decisions of a phase are sent at once; this is what keeps "at once" within
what the provider allows.  The concurrency limit is an ``asyncio.Semaphore``
per event loop (asyncio primitives must not cross loops, and each model's
broker owns one loop); the rate buckets are plain time arithmetic shared by
every loop and thread of the process.  Token use is estimated before a call
(prompt characters / 4 + max_tokens) and corrected with the real count after.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

DEFAULT_CONCURRENCY = 16


class TokenBucket:
    """``per_minute`` units refilled continuously; a full minute's worth may be used at once."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = per_minute
        self.level = per_minute
        self.stamp = time.monotonic()

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_time(self, amount: float, now: float) -> float:
        self._refill(now)
        amount = min(amount, self.capacity)
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)

    def adjust(self, delta: float) -> None:
        """Charge (positive) or refund (negative) the difference between estimate and use."""
        self.level = min(self.capacity, self.level - delta)


class ProviderLimiter:
    """Throttle for one provider endpoint within one process."""

    def __init__(
        self,
        max_concurrency: int = DEFAULT_CONCURRENCY,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        self.max_concurrency = max_concurrency
        self.requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None
        self._lock = threading.Lock()
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()
        #: most calls seen in flight at once (the benchmark and tests read it)
        self.peak_in_flight = 0
        self._in_flight = 0

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._lock:
            sem = self._semaphores.get(loop)
            if sem is None:
                sem = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
            return sem

    async def _wait_rate(self, est_tokens: float) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                wait = max(
                    self.requests.wait_time(1, now) if self.requests else 0.0,
                    self.tokens.wait_time(est_tokens, now) if self.tokens else 0.0,
                )
                if wait <= 0:
                    if self.requests:
                        self.requests.take(1)
                    if self.tokens:
                        self.tokens.take(est_tokens)
                    return
            await asyncio.sleep(wait)

    @asynccontextmanager
    async def slot(self, est_tokens: float = 0.0) -> AsyncIterator[None]:
        """Hold a concurrency slot and the rate budget of one call for its duration."""
        async with self._semaphore():
            await self._wait_rate(est_tokens)
            with self._lock:
                self._in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            try:
                yield
            finally:
                with self._lock:
                    self._in_flight -= 1

    def settle(self, est_tokens: float, used_tokens: float) -> None:
        if self.tokens is not None:
            with self._lock:
                self.tokens.adjust(used_tokens - min(est_tokens, self.tokens.capacity))
