"""The price of a paid answer (the prices: :mod:`mesa_dilemmas.llm.accounting`).

Tokens in and out, prompt-cache reads and writes, and the batch discount when a batch job
answered; the cost is charged to the run budget and recorded with the call."""

from __future__ import annotations

from dataclasses import replace

from mesa_dilemmas.llm.accounting import PriceTable
from mesa_dilemmas.llm.stack.language_model import Call, CallOutcome, LanguageModel


class Pricing:
    """Sets ``cost_usd`` of each answer the provider gave."""

    def __init__(self, model: LanguageModel, prices: PriceTable, label: str) -> None:
        self.model = model
        self.prices = prices
        self.label = label

    async def complete(self, call: Call) -> CallOutcome:
        outcome = await self.model.complete(call)
        response = outcome.response
        extra = response.extra or {}
        cost = self.prices.cost(
            self.label,
            response.tokens_in,
            response.tokens_out,
            cached_in=int(extra.get("cached_tokens") or 0),
            cache_write=int(extra.get("cache_write_tokens") or 0),
            batch=outcome.batch_id is not None,
        )
        return replace(outcome, cost_usd=cost)
