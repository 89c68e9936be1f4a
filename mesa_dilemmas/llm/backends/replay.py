"""The replay backend: answers only from recorded calls, never from a provider.

``replay:openai:gpt-4o`` computes the same call keys as ``openai:gpt-4o`` and
finds them in the run's own record (``--resume``) or the shared cache, which
the client consults before any backend; reaching this backend therefore means
the call was never recorded, and that is an error naming the call.  It needs
no key, no network and no model file: exact reproduction and offline tests.
"""

from __future__ import annotations

from mesa_dilemmas.llm.backends.base import Backend
from mesa_dilemmas.llm.errors import ReplayMiss
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse


class ReplayBackend(Backend):
    provider = "replay"
    paid = False

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        raise ReplayMiss(f"replay: no recorded call for {self.spec.label}")
