"""Fitting the calls to a self-hosted server's way of serving (probed once per client).

A server that answers one request at a time (llama.cpp's with one slot, LM Studio, ...) gets
one call at a time, with a timeout that covers a whole reply, so that queued calls do not time
out (and are sent again) while it is still generating earlier ones; see ``docs/llm.md``,
*Self-hosted servers*.  The probe runs before the first paid call, before its budget
reservation."""

from __future__ import annotations

import sys
from typing import Any

from mesa_dilemmas.llm.accounting.ratelimit import ProviderLimiter
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome, LanguageModel

#: the per-attempt timeout for a server that answers few requests at a time: queued calls
#: must not time out (and be sent again) while the server is still generating earlier ones
SERIAL_TIMEOUT_S = 600.0


class ServerFit:
    """Probes the endpoint's concurrency before the first paid call and fits the limiter."""

    def __init__(
        self,
        model: LanguageModel,
        backend: Any,
        limiter: ProviderLimiter,
        settings: LLMSettings,
        label: str,
    ) -> None:
        self.model = model
        self.backend = backend
        self.limiter = limiter
        self.settings = settings
        self.label = label
        #: whether the endpoint's way of serving was probed
        self.fitted = False

    async def complete(self, call: Call) -> CallOutcome:
        await self.fit()
        return await self.model.complete(call)

    async def fit(self) -> None:
        """Once: a self-hosted server that answers one request at a time gets one call at a
        time, with a timeout that covers a whole reply (``serving`` probes it)."""
        if self.fitted:
            return
        probe = getattr(self.backend, "serving", None)
        if probe is None:
            self.fitted = True
            return
        # every call waits for the probe (the backend asks the server once): a call that went
        # ahead while it ran would be sent before the limiter is fitted, and outside the run's
        # accounting if the run stopped meanwhile
        concurrency, _ = await probe()
        if self.fitted:  # fitted by a call that waited for the same probe
            return
        self.fitted = True
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
