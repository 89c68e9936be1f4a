"""The LLM policy: a :class:`~mesa_dilemmas.agents.policy.Policy` whose answers come from a model.

``adecide`` renders the prompt for the decision's kind, calls the model through
the client (cache, budget, throttle, retries, recording), parses the reply for
the run's answer mode, and on an invalid reply asks again with a short
corrective message, up to ``answer_retries`` times (each re-ask shows only the last failed
reply and its correction, so the conversation stays within the context window).  When no
valid answer comes it returns the decision's documented ``fallback`` with ``fell_back=True``,
the error and the counts, and the run record flags the decision with the kind of fallback
(``FALLBACK_KINDS``); the broker and the record count every such case.  A provider that
fails for good (:class:`ProviderFailed`), a reached budget (:class:`BudgetExceeded`) and a
replay miss are not answers: they propagate and stop the run -- a failed call never becomes
the rule's answer in the model's seat.

The prompt is rendered in the settings' ``prompt_variant`` (0: the base wording; a factor like
any other, see docs/prompt_variants.md) and the run record names the variant of every call and
decision.

The sample id of every call is (run seed, agent, round, step, decision kind,
per-round counter of that kind, attempt), which makes re-runs of a replication
hit the cache exactly and other replications draw their own samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
import weakref
from typing import Any

from mesa_dilemmas.agents.decisions import Decision, InvalidAnswer
from mesa_dilemmas.agents.policy import Answer, Policy
from mesa_dilemmas.llm import session
from mesa_dilemmas.llm.answers import failure_kind, parse_response
from mesa_dilemmas.llm.client import LLMClient, get_client
from mesa_dilemmas.llm.errors import CallFailed, ProviderFailed
from mesa_dilemmas.llm.prompts import reask_messages, render
from mesa_dilemmas.llm.request import CallContext, ChatRequest, Message, seed_for
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec, schema_in_text, shares_schema
from mesa_dilemmas.llm.stores.recorder import PROMPT_VARIANT

#: why a decision fell back: the model refused, its reply was cut off at max_tokens, or its
#: answer was unusable (unparseable or outside the spec) after every re-ask
FALLBACK_KINDS = ("refusal", "truncated", "invalid")

#: unseeded models get one random nonce each, so their agents' samples stay independent
_NONCES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


class LLMPolicy(Policy):
    """Answers decisions with a language model.  Build it with :func:`make_policy`."""

    is_async = True
    strict = False
    reads_text = True

    def __init__(self, spec: ModelSpec, settings: LLMSettings, run_seed: int | None = None) -> None:
        self.spec = spec
        self.settings = settings
        #: shown in results: provider:model (no file path, no URL)
        self.name = f"llm:replay:{spec.label}" if spec.provider == "replay" else f"llm:{spec.label}"
        self.run_seed = run_seed
        self._counters: dict[tuple[Any, ...], int] = {}
        self._client: LLMClient | None = None
        self._nonce: str | None = None

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            self._client = get_client(self.spec, self.settings)
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"] = None
        return state

    # -- identity of a call ----------------------------------------------------
    def _seed_text(self, model: Any, decision: Decision) -> str:
        seed = getattr(model, "run_seed", None)
        if seed is None:
            seed = decision.meta.get("run_seed", self.run_seed)
        if seed is not None:
            return str(seed)
        if model is not None:
            if model not in _NONCES:
                _NONCES[model] = "nonce-" + secrets.token_hex(6)
            return _NONCES[model]
        if self._nonce is None:
            self._nonce = "nonce-" + secrets.token_hex(6)
        return self._nonce

    def _context(self, decision: Decision) -> tuple[CallContext, Any]:
        agent = decision.agent if decision.agent is not None else self.agent
        model = getattr(agent, "model", None)
        round_ = int(getattr(model, "round", decision.step) or 0)
        agent_id = None if agent is None else agent.unique_id
        slot = (agent_id, round_, decision.step, decision.kind)
        counter = self._counters.get(slot, 0)
        self._counters[slot] = counter + 1
        if len(self._counters) > 4096:  # keep only this round's counters
            self._counters = {k: v for k, v in self._counters.items() if k[1] >= round_}
        ctx = CallContext(
            kind=decision.kind,
            agent_id=agent_id,
            round=round_,
            step=decision.step,
            counter=counter,
            run_seed=self._seed_text(model, decision),
            policy=self.name,
        )
        return ctx, agent

    # -- answering -------------------------------------------------------------
    def decide(self, decision: Decision) -> Answer:
        """Synchronous use outside a broker (a notebook, a script): one event loop per call."""
        return asyncio.run(self.adecide(decision))

    async def adecide(self, decision: Decision) -> Answer:
        token = PROMPT_VARIANT.set(self.settings.prompt_variant)  # recorded with every call
        try:
            return await self._adecide(decision)
        finally:
            # closed from another context (a stopped run's pending calls): the context that
            # set it is gone with its task
            with contextlib.suppress(ValueError):
                PROMPT_VARIANT.reset(token)

    async def _adecide(self, decision: Decision) -> Answer:
        s = self.settings
        ctx, agent = self._context(decision)
        # "native" falls back to "tags" on an endpoint that takes no structured output
        native = s.answer_mode == "native" and not s.dry_run  # a dry run probes nothing
        mode = await self.client.answer_mode() if native else s.answer_mode
        prompt = render(
            decision,
            mode=mode,
            persona=getattr(agent, "persona", None),
            round_=ctx.round,
            system_extra=s.system_prompt,
            templates_dir=s.templates_dir,
            reasoning=s.reasoning_for(self.spec),
            reasoning_max_chars=s.reasoning_max_chars,
            max_tokens=s.max_tokens,
            shared_schema=shares_schema(self.spec),
            schema_text=schema_in_text(self.spec),
            variant=s.prompt_variant,
        )
        # the decision's own limit: max_tokens, or what its longest valid answer needs
        max_tokens = prompt.max_tokens or s.max_tokens
        ctx = dataclasses.replace(ctx, reasoning=prompt.reasoning)
        messages = [Message("system", prompt.system), Message("user", prompt.user)]
        if s.dry_run:
            return self._dry(decision, ctx, messages, prompt.schema, mode, max_tokens)
        failures = call_errors = 0
        raw: str | None = None
        error: str | None = None
        fallback_kind = "invalid"
        for attempt in range(s.answer_retries + 1):
            call_ctx = dataclasses.replace(ctx, attempt=attempt)
            request = ChatRequest(
                messages=tuple(messages),
                temperature=s.temperature,
                max_tokens=max_tokens,
                seed=seed_for(call_ctx.sample_id),
                top_p=s.top_p,
                schema=prompt.schema,
            )
            try:
                outcome = await self.client.complete(request, call_ctx)
            except CallFailed as exc:  # the client raises ProviderFailed; never a fallback
                raise ProviderFailed(f"{self.client.label}: {call_ctx.describe()}: {exc}") from None
            response = outcome.response
            raw = (
                response.refusal
                or response.text
                or (json.dumps(response.data) if response.data is not None else "")
            )
            try:
                parsed = parse_response(response, decision.spec, mode, prompt.tag, prompt.schema)
            except InvalidAnswer as exc:
                failures += 1
                error = str(exc)
                fallback_kind = failure_kind(response)
                messages = reask_messages(
                    messages, raw, error, decision.spec, mode, prompt.tag, prompt.schema
                )
                continue
            self._record(call_ctx, attempt, failures, None, call_errors, None, parsed.value)
            await self.client.note_decision(False)
            return Answer(parsed.value, raw=raw, retries=attempt, parse_failures=failures)
        retries = failures + call_errors - 1  # re-asks made after the first attempt
        self._record(ctx, retries, failures, fallback_kind, call_errors, error, decision.fallback)
        # too many fallbacks stop the run
        await self.client.note_decision(True, error, fallback_kind)
        return Answer(
            decision.fallback,
            raw=raw,
            retries=retries,
            parse_failures=failures,
            fell_back=True,
            error=error,
        )

    def _dry(
        self,
        decision: Decision,
        ctx: CallContext,
        messages: list[Message],
        schema: dict[str, Any] | None,
        mode: str,
        max_tokens: int,
    ) -> Answer:
        """A dry run (``dry_run``): the prompt as it would be sent, recorded with its token
        count, and a random legal answer -- no provider, no network."""
        import numpy as np

        from mesa_dilemmas.agents.random_policy import random_answer
        from mesa_dilemmas.llm.estimate import dry_call

        s = self.settings
        request = ChatRequest(
            messages=tuple(messages),
            temperature=s.temperature,
            max_tokens=max_tokens,
            seed=seed_for(ctx.sample_id),
            top_p=s.top_p,
            schema=schema,
        )
        value = random_answer(decision.spec, np.random.default_rng(request.seed))
        response = dry_call(self.spec, s, ctx, request, mode, value)
        self._record(ctx, 0, 0, None, 0, None, value)
        return Answer(value, raw=response.text)

    def _record(
        self,
        ctx: CallContext,
        retries: int,
        failures: int,
        fallback: str | None,
        call_errors: int,
        error: str | None,
        value: Any,
    ) -> None:
        run = session.current()
        if run is not None:
            run.recorder.record_decision(
                ctx,
                retries=retries,
                parse_failures=failures,
                fell_back=fallback is not None,
                call_errors=call_errors,
                error=error,
                value=value,
                fallback=fallback,
                variant=self.settings.prompt_variant,
            )
