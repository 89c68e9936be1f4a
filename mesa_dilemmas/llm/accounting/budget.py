"""Run budgets: max provider calls, tokens and cost, shared by all worker processes.

Before a paid call the client *reserves* it: in one IMMEDIATE transaction on
the run's SQLite file the counters are read, checked and the call counted, so
``max_calls`` holds exactly even with several workers.  Tokens and cost are
added when the call returns; a call is refused once they have reached their
limit (calls already in flight may overshoot it by their own size).  Budgets
span the whole run, resumed segments included: resuming a run that stopped on
its budget needs a larger budget (``--set llm.budget.max_calls=...``).

Without a run session (a notebook, a unit test) the counters live in memory.
"""

from __future__ import annotations

import asyncio
import threading
import time

from mesa_dilemmas.llm.errors import BudgetExceeded
from mesa_dilemmas.llm.settings import BudgetSettings
from mesa_dilemmas.llm.stores.recorder import RunRecorder


def _check(limits: BudgetSettings, calls: int, tokens: int, cost: float) -> None:
    if limits.max_calls is not None and calls >= limits.max_calls:
        raise BudgetExceeded(
            f"llm budget reached: {calls} provider calls of max_calls = {limits.max_calls}"
        )
    if limits.max_tokens is not None and tokens >= limits.max_tokens:
        raise BudgetExceeded(
            f"llm budget reached: {tokens} tokens of max_tokens = {limits.max_tokens}"
        )
    if limits.max_cost_usd is not None and cost >= limits.max_cost_usd:
        raise BudgetExceeded(
            f"llm budget reached: ${cost:.4f} of max_cost_usd = {limits.max_cost_usd}"
        )


class Budget:
    """Counters for one run; ``reserve`` before a paid call, ``charge`` after it."""

    def __init__(self, limits: BudgetSettings, recorder: RunRecorder | None = None) -> None:
        self.limits = limits
        self.recorder = recorder
        self._lock = threading.Lock()
        self._calls = 0
        self._tokens = 0
        self._cost = 0.0
        #: what stopped the run (a :class:`ProviderRejected`), after which no call is sent
        self.stopped: Exception | None = None

    @property
    def unlimited(self) -> bool:
        lim = self.limits
        return lim.max_calls is None and lim.max_tokens is None and lim.max_cost_usd is None

    def reserve(self) -> None:
        """Count one provider call, or raise :class:`BudgetExceeded` if the run is at a limit."""
        if self.recorder is None:
            with self._lock:
                _check(self.limits, self._calls, self._tokens, self._cost)
                self._calls += 1
            return
        with self.recorder.db.transaction() as conn:
            calls, tokens, cost = conn.execute("SELECT calls, tokens, cost FROM budget").fetchone()
            _check(self.limits, calls, tokens, cost)
            conn.execute("UPDATE budget SET calls = calls + 1, in_flight = in_flight + 1")

    def release(self) -> None:
        """A reserved call is over (answered, recorded, or failed)."""
        if self.recorder is not None:
            self.recorder.db.execute("UPDATE budget SET in_flight = in_flight - 1")

    async def wait_idle(self, timeout: float) -> None:
        """Wait until no worker of the run has a call in flight (at most ``timeout`` s).

        Called before :class:`BudgetExceeded` propagates: the batch runner tears its
        worker pool down on the first exception, and a call another worker has
        already sent must first be answered and recorded, or it would be paid and lost."""
        if self.recorder is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.recorder.db.execute("SELECT in_flight FROM budget")[0][0] <= 0:
                return
            await asyncio.sleep(0.05)

    def charge(self, tokens: int, cost: float | None) -> None:
        cost = cost or 0.0
        if self.recorder is None:
            with self._lock:
                self._tokens += tokens
                self._cost += cost
            return
        self.recorder.db.execute(
            "UPDATE budget SET tokens = tokens + ?, cost = cost + ?", (tokens, cost)
        )

    def spent(self) -> dict[str, float]:
        if self.recorder is None:
            return {"calls": self._calls, "tokens": self._tokens, "cost_usd": self._cost}
        calls, tokens, cost = self.recorder.db.execute("SELECT calls, tokens, cost FROM budget")[0]
        return {"calls": calls, "tokens": tokens, "cost_usd": cost}
