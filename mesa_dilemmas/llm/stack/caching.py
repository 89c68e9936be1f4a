"""The shared response cache around a call (storage: :mod:`mesa_dilemmas.llm.stores.cache`).

A call the run's record did not answer is looked up in the shared cache (``cache.sqlite``,
by call key; see ``docs/llm.md``, *Cache, record, replay, resume*).  On a miss the call is
*claimed*: when another process is already making the very same call (its claim is visible in
the cache), this one waits for that answer (bounded by the call's time limit) instead of paying
for it again; if that process gives up or takes too long, the call is made here.  A paid answer
is cached before the claim is given back, so a process waiting on it always finds it.
"""

from __future__ import annotations

import contextlib
import sqlite3

from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome, LanguageModel


class SharedCache:
    """Answers from the shared cache; pays (once across processes) and caches on a miss."""

    def __init__(
        self, model: LanguageModel, label: str, time_limit: float, claims: bool = True
    ) -> None:
        self.model = model
        self.label = label
        #: a generous bound on one call's duration: how long a claim holds, and a wait lasts
        self.time_limit = time_limit
        #: whether a miss is claimed (not for a replay spec, which makes no call)
        self.claims = claims

    async def complete(self, call: Call) -> CallOutcome:
        cache = call.cache
        if cache is None:
            return await self.model.complete(call)
        hit = cache.get(call.key, self.label)
        if hit is not None:
            return CallOutcome(hit, "cache", call.key, 0.0, 0.0)
        if self.claims:
            if not cache.claim(call.key, stale_after=self.time_limit):
                # another process is paying for this very answer: wait for it (bounded)
                hit = await cache.wait_for(call.key, timeout=self.time_limit)
                if hit is not None:
                    return CallOutcome(hit, "cache", call.key, 0.0, 0.0)
                # it gave up or took too long: pay for it here
                cache.claim(call.key, stale_after=0.0)
            call.on_end(lambda: self._release(call))
        outcome = await self.model.complete(call)
        if outcome.source == "provider":
            cache.put(call.key, self.label, call.request_json, outcome.response)
        return outcome

    @staticmethod
    def _release(call: Call) -> None:
        # a call abandoned when the run stopped ends after the cache was closed: its claim
        # then expires on its own
        assert call.cache is not None
        with contextlib.suppress(sqlite3.ProgrammingError):
            call.cache.release(call.key)
