"""Anthropic's Messages API through the official ``anthropic`` SDK.

Sampling temperature and top_p are sent as arguments when the installed SDK's
``messages.create`` still takes them, else in the request body (``extra_body``: the
newest SDK releases dropped the arguments, the API still takes them); the record holds
the parameters as sent.  ``thinking_budget`` turns on extended thinking (then no
temperature, and ``max_tokens`` grows by the budget).  The system prompt -- the stable
part of every prompt -- carries ``cache_control``, so repeated prefixes are read from
Anthropic's prompt cache (``cache_read_input_tokens``) at the cached price.  The SDK makes one attempt per call; the client retries 408/409/429/5xx (529
"overloaded" included), timeouts and connection errors, honouring ``Retry-After``,
and records every attempt.  Native answers use tool use: one tool
named ``answer`` whose ``input_schema`` is the wrapped answer schema, forced
with ``tool_choice``; the tool call's ``input`` is the structured answer.  A
``stop_reason`` of ``"refusal"`` is reported as a refusal.
"""

from __future__ import annotations

import inspect
from typing import Any

import anthropic

from mesa_dilemmas.llm.backends.base import RemoteBackend, status_error
from mesa_dilemmas.llm.errors import TransientCallError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec

TOOL_NAME = "answer"


class AnthropicBackend(RemoteBackend):
    provider = "anthropic"

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        super().__init__(spec, settings)
        #: recent SDK releases dropped ``temperature``/``top_p`` from ``messages.create``;
        #: send them only where the installed SDK still has them
        params = inspect.signature(anthropic.resources.messages.AsyncMessages.create).parameters
        self.sampling_params = "temperature" in params
        self._clients = self.sdk_clients(anthropic.AsyncAnthropic)

    def request_kwargs(self, req: ChatRequest) -> dict[str, Any]:
        budget = self.settings.thinking_budget
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": req.max_tokens + (budget or 0),
            "messages": [{"role": m.role, "content": m.content} for m in req.turns],
        }
        sampling: dict[str, Any] = {}
        if budget:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": budget}
        else:
            sampling["temperature"] = min(req.temperature, 1.0)  # Anthropic's range is [0, 1]
            if req.top_p is not None:
                sampling["top_p"] = req.top_p
        if self.sampling_params:
            kwargs.update(sampling)
        elif sampling:
            kwargs["extra_body"] = sampling
        if req.system:
            kwargs["system"] = [
                {"type": "text", "text": req.system, "cache_control": {"type": "ephemeral"}}
            ]
        if req.schema is not None:
            kwargs["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Give your reasoning and your answer to the decision.",
                    "input_schema": req.schema,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return kwargs

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        client = self._clients.get()
        kwargs = self.request_kwargs(request)
        try:
            resp = await client.messages.create(**kwargs)
        except anthropic.APIStatusError as exc:
            headers = getattr(exc.response, "headers", None)
            raise status_error("anthropic", exc.status_code, exc.message, headers) from exc
        except anthropic.APITimeoutError as exc:
            raise TransientCallError(f"anthropic: timed out after {self.timeout:g} s") from exc
        except anthropic.APIConnectionError as exc:
            raise TransientCallError(
                f"anthropic: cannot connect to {self.base_url or 'api.anthropic.com'}: {exc}",
                unreachable=True,
            ) from exc
        except (ValueError, anthropic.APIResponseValidationError) as exc:  # malformed body
            raise TransientCallError(
                f"anthropic: malformed response: {type(exc).__name__}: {exc}"
            ) from exc
        return self.to_response(resp, kwargs)

    def to_response(self, resp: Any, kwargs: dict[str, Any]) -> ChatResponse:
        """A message (a batch result's too) as the layer's response."""
        text_parts, data = [], None
        for block in resp.content or []:
            if block.type == "text":
                text_parts.append(block.text)
            elif block.type == "tool_use" and block.name == TOOL_NAME:
                data = block.input
        text = "".join(text_parts)
        refusal = (text or "refused") if resp.stop_reason == "refusal" else None
        usage = resp.usage
        read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        written = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        sent = {k: v for k, v in kwargs.items() if k not in ("messages", "system", "extra_body")}
        sent.update(kwargs.get("extra_body", {}))
        return ChatResponse(
            text=text,
            # every input token: Anthropic counts cache reads and writes apart from input_tokens
            tokens_in=usage.input_tokens + read + written,
            tokens_out=usage.output_tokens,
            finish_reason=resp.stop_reason,
            data=data,
            refusal=refusal,
            model=resp.model,
            extra={"sent": sent, "cached_tokens": read, "cache_write_tokens": written},
        )

    # -- Message Batches: one job for many requests, results as JSONL -------------------
    async def submit_batch(self, items: list[tuple[str, ChatRequest]]) -> str:
        client = self._clients.get()
        requests = []
        for cid, req in items:
            params = self.request_kwargs(req)
            params.update(params.pop("extra_body", {}))  # a batch request's params are the body
            requests.append({"custom_id": cid, "params": params})
        try:
            batch = await client.messages.batches.create(requests=requests)
        except anthropic.APIStatusError as exc:
            raise status_error("anthropic", exc.status_code, exc.message, None) from exc
        except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
            raise TransientCallError(f"anthropic: batch upload failed: {exc}") from exc
        return batch.id

    async def poll_batch(
        self, batch_id: str, requests: dict[str, ChatRequest]
    ) -> dict[str, ChatResponse | Exception] | None:
        client = self._clients.get()
        try:
            batch = await client.messages.batches.retrieve(batch_id)
            if batch.processing_status != "ended":
                return None
            out: dict[str, ChatResponse | Exception] = {}
            async for entry in await client.messages.batches.results(batch_id):
                result = entry.result
                if result.type == "succeeded":
                    req = requests.get(entry.custom_id)
                    kwargs = self.request_kwargs(req) if req is not None else {}
                    out[entry.custom_id] = self.to_response(result.message, kwargs)
                else:
                    error = getattr(getattr(result, "error", None), "error", None)
                    message = getattr(error, "message", result.type)
                    out[entry.custom_id] = status_error("anthropic", 500, f"batch: {message}")
        except anthropic.APIStatusError as exc:
            raise status_error("anthropic", exc.status_code, exc.message, None) from exc
        except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
            raise TransientCallError(f"anthropic: batch poll failed: {exc}") from exc
        return out
