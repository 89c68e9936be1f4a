"""Per-provider throttling: a concurrency limit and request/token-per-minute buckets.

All decisions of a phase are sent at once; this is what keeps "at once" within
what the provider allows.  The concurrency limit is an ``asyncio.Semaphore``
per event loop (asyncio primitives must not cross loops, and each model's
broker owns one loop); the rate buckets are plain time arithmetic shared by
every loop and thread of the process.  Token use is estimated before a call
(prompt characters / 4 + max_tokens) and corrected with the real count after.

A provider's requests/tokens per minute are per key, not per process: with a ``shared``
store (:class:`SharedRate`, one SQLite file beside the response cache) the buckets of an
endpoint + key are one pair for every process on the machine -- batch workers, parallel
runs, a notebook -- each taking from them in an IMMEDIATE transaction.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mesa_dilemmas.llm.stores.sqlitedb import SQLiteFile

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


RATE_FILE = "ratelimit.sqlite"
RATE_SCHEMA = """
CREATE TABLE IF NOT EXISTS buckets (
    name TEXT PRIMARY KEY, level REAL NOT NULL, stamp REAL NOT NULL
);
"""


class SharedRate:
    """Request and token buckets of one endpoint + key, shared by every process of the
    machine through a SQLite file (wall-clock time, so processes agree on it)."""

    def __init__(
        self,
        directory: Path,
        identity: str,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
    ) -> None:
        self.db = SQLiteFile(Path(directory) / RATE_FILE, RATE_SCHEMA)
        tag = hashlib.sha256(identity.encode()).hexdigest()[:20]  # never the key itself
        self.limits = {
            f"{tag}:requests": requests_per_minute,
            f"{tag}:tokens": tokens_per_minute,
        }

    def _levels(self, conn, now: float) -> dict[str, float]:
        levels = {}
        for name, per_minute in self.limits.items():
            if not per_minute:
                continue
            row = conn.execute(
                "SELECT level, stamp FROM buckets WHERE name = ?", (name,)
            ).fetchone()
            level, stamp = (per_minute, now) if row is None else row
            levels[name] = min(per_minute, level + max(0.0, now - stamp) * per_minute / 60.0)
        return levels

    def acquire(self, est_tokens: float) -> float:
        """Take one request and ``est_tokens`` tokens now (returns 0), or return how long to
        wait before trying again (nothing taken)."""
        now = time.time()
        wants = dict(zip(self.limits, (1.0, est_tokens), strict=True))
        with self.db.transaction() as conn:
            levels = self._levels(conn, now)
            wait = 0.0
            for name, level in levels.items():
                per_minute = self.limits[name] or 1.0
                amount = min(wants[name], per_minute)
                if level < amount:
                    wait = max(wait, (amount - level) * 60.0 / per_minute)
            if wait > 0:
                return wait
            for name, level in levels.items():
                amount = min(wants[name], self.limits[name] or 0.0)
                conn.execute(
                    "INSERT OR REPLACE INTO buckets (name, level, stamp) VALUES (?, ?, ?)",
                    (name, level - amount, now),
                )
        return 0.0

    def settle(self, delta_tokens: float) -> None:
        """Charge (positive) or refund (negative) the tokens a call used beyond its estimate."""
        name, per_minute = list(self.limits.items())[1]
        if not per_minute or not delta_tokens:
            return
        now = time.time()
        with self.db.transaction() as conn:
            level = self._levels(conn, now)[name]
            conn.execute(
                "INSERT OR REPLACE INTO buckets (name, level, stamp) VALUES (?, ?, ?)",
                (name, min(per_minute, level - delta_tokens), now),
            )


class ProviderLimiter:
    """Throttle for one provider endpoint within one process."""

    def __init__(
        self,
        max_concurrency: int = DEFAULT_CONCURRENCY,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        shared: SharedRate | None = None,
    ) -> None:
        self.max_concurrency = max_concurrency
        #: machine-wide buckets of this endpoint + key (replace the per-process ones)
        self.shared = shared if (requests_per_minute or tokens_per_minute) else None
        self.requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None
        self._lock = threading.Lock()
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()
        #: most calls seen in flight at once (the benchmark and tests read it)
        self.peak_in_flight = 0
        self._in_flight = 0

    def limit_concurrency(self, n: int) -> None:
        """Lower the calls in flight at once (a server found to answer one at a time)."""
        with self._lock:
            if n < self.max_concurrency:
                self.max_concurrency = n
                self._semaphores = weakref.WeakKeyDictionary()  # new ones, at the new limit

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._lock:
            sem = self._semaphores.get(loop)
            if sem is None:
                sem = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
            return sem

    async def _wait_rate(self, est_tokens: float) -> None:
        if self.shared is not None:
            while (wait := await asyncio.to_thread(self.shared.acquire, est_tokens)) > 0:
                await asyncio.sleep(min(wait, 5.0))
            return
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
        if self.shared is not None:
            cap = self.shared.limits[list(self.shared.limits)[1]] or est_tokens
            self.shared.settle(used_tokens - min(est_tokens, cap))
            return
        if self.tokens is not None:
            with self._lock:
                self.tokens.adjust(used_tokens - min(est_tokens, self.tokens.capacity))
