"""Concurrency and rate limits around a paid call (the limiters: :mod:`ratelimit`,
:mod:`cluster`).

A call waits for a concurrency slot of its endpoint and for the requests/tokens per minute
(its tokens estimated from the prompt before the call, corrected after it).  The limiter is
shared by every model and agent of the process using the endpoint
(:func:`mesa_dilemmas.llm.client.limiter_for`).  A paid call's latency is measured here,
from the moment it holds its slot.  In batch mode calls take no slot (the batch job is one
request), but their tokens are still counted.
"""

from __future__ import annotations

import time
from dataclasses import replace

from mesa_dilemmas.llm.accounting.ratelimit import ProviderLimiter
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome, LanguageModel


class RateLimit:
    """Holds a slot of the endpoint's limiter for each call and settles its token count."""

    def __init__(self, model: LanguageModel, limiter: ProviderLimiter, slots: bool = True) -> None:
        self.model = model
        self.limiter = limiter
        #: whether a call takes a slot (not in batch mode)
        self.slots = slots

    async def complete(self, call: Call) -> CallOutcome:
        request = call.request
        estimate = request.prompt_chars() / 4 + request.max_tokens
        if self.slots:
            async with self.limiter.slot(estimate):
                start = time.perf_counter()
                outcome = await self.model.complete(call)
        else:
            start = time.perf_counter()
            outcome = await self.model.complete(call)
        outcome = replace(outcome, latency_s=time.perf_counter() - start)
        response = outcome.response
        self.limiter.settle(estimate, response.tokens_in + response.tokens_out)
        return outcome
