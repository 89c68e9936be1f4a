"""The run budget around a paid call (counters: :mod:`mesa_dilemmas.llm.accounting.budget`).

Every call that reaches the provider is first *reserved* in the run's budget (max calls,
tokens, cost; shared by all workers of the run), and *charged* its tokens and priced cost
when it returns.  The reservation is given back when the whole call is over -- answered,
cached and recorded -- so a budget's ``in_flight`` counts a call until its answer is safe.

When the budget is reached, or a call stops the run (:class:`ProviderRejected`), the calls
already in flight, here and in the other workers, are let finish and be recorded before the
exception propagates: the broker's gather stops at the first exception and abandons its
other tasks, and the batch runner then ends its workers, which would lose calls already paid.
After a stop, no further call of the run is sent: a call the stop left waiting (on a shared
event loop that keeps running) would otherwise reach the provider after the record is closed.
"""

from __future__ import annotations

import asyncio
import copy
import weakref

from mesa_dilemmas.llm.accounting.budget import Budget
from mesa_dilemmas.llm.errors import BudgetExceeded, ProviderRejected
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome, LanguageModel

#: per event loop, the paid calls in flight (a future each, resolved when the call is over)
_IN_FLIGHT: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[asyncio.Future]] = (
    weakref.WeakKeyDictionary()
)


def track_in_flight() -> asyncio.Future:
    """A future for one paid call on the running loop; resolve it when the call is over."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    calls = _IN_FLIGHT.setdefault(loop, set())
    calls.add(done)
    done.add_done_callback(calls.discard)
    return done


async def drain_in_flight() -> None:
    """Wait for every paid call in flight on the running loop to be over."""
    pending = list(_IN_FLIGHT.get(asyncio.get_running_loop(), ()))
    if pending:
        await asyncio.gather(*pending)


class BudgetGuard:
    """Reserves each paid call in the run's budget, charges it, and drains before stopping."""

    def __init__(self, model: LanguageModel, budget: Budget, time_limit: float) -> None:
        self.model = model
        #: the budget used outside a run session (a run's own is ``run.budget``)
        self.budget = budget
        #: how long to wait for the other workers' calls in flight before the run stops
        self.time_limit = time_limit

    async def complete(self, call: Call) -> CallOutcome:
        budget = call.run.budget if call.run is not None else self.budget
        if budget.stopped is not None:  # the run is stopping: nothing more goes out
            raise copy.copy(budget.stopped)
        try:
            budget.reserve()
        except BudgetExceeded:
            # let every call already in flight, here and in the other workers, finish and be
            # recorded first
            await drain_in_flight()
            await budget.wait_idle(self.time_limit)
            raise
        done = track_in_flight()

        def end() -> None:
            if not done.done():
                budget.release()
                done.set_result(None)

        call.on_end(end)  # once the answer is cached and recorded
        try:
            outcome = await self.model.complete(call)
        except ProviderRejected as exc:
            # the run stops: as for a budget, let the other calls in flight finish and be
            # recorded first, rather than be abandoned half-way; a call of the run that
            # comes here later (one the stop left waiting, in another replication or thread)
            # is refused rather than sent after the record is closed
            if call.run is not None:
                budget.stopped = exc
            end()
            await drain_in_flight()
            raise
        response = outcome.response
        budget.charge(response.tokens_in + response.tokens_out, outcome.cost_usd)
        return outcome
