"""Google's Gemini API through the official ``google-genai`` SDK.

Native answers use ``response_mime_type="application/json"`` with
``response_json_schema``.  The SDK's own retry (tenacity, exponential) does not
read ``Retry-After``, so it is switched off here and 429/5xx/timeouts are
raised as :class:`TransientCallError` carrying the server's ``Retry-After``;
the client's retry loop waits exactly that long.  A candidate stopped for
safety (or a blocked prompt) is reported as a refusal.
"""

from __future__ import annotations

from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from mesa_dilemmas.llm.backends.base import (
    PerLoop,
    RemoteBackend,
    retry_after_seconds,
    status_error,
    transport_errors,
)
from mesa_dilemmas.llm.errors import TransientCallError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec

RETRYABLE = {408, 429, 500, 502, 503, 504}
REFUSALS = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}


class GeminiBackend(RemoteBackend):
    provider = "gemini"

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        super().__init__(spec, settings)
        key = self.api_key
        options: dict[str, Any] = {
            "timeout": int(self.timeout * 1000),
            # one attempt per SDK call: our loop retries, honouring Retry-After
            "retry_options": types.HttpRetryOptions(attempts=1),
        }
        if self.base_url:
            options["base_url"] = self.base_url
        self._clients = PerLoop(
            lambda: genai.Client(
                api_key=key or "no-key-needed", http_options=types.HttpOptions(**options)
            )
        )

    def request_kwargs(self, req: ChatRequest) -> dict[str, Any]:
        config: dict[str, Any] = {
            "temperature": req.temperature,
            "max_output_tokens": req.max_tokens,
            "seed": req.seed,
            "candidate_count": 1,
        }
        if req.system:
            config["system_instruction"] = req.system
        if req.top_p is not None:
            config["top_p"] = req.top_p
        if req.schema is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = req.schema
        if self.settings.thinking_budget is not None:
            config["thinking_config"] = types.ThinkingConfig(
                thinking_budget=self.settings.thinking_budget
            )
        contents = [
            types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[types.Part(text=m.content)],
            )
            for m in req.turns
        ]
        return {
            "model": self.model,
            "contents": contents,
            "config": types.GenerateContentConfig(**config),
        }

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        client = self._clients.get()
        kwargs = self.request_kwargs(request)
        try:
            resp = await client.aio.models.generate_content(**kwargs)
        except genai_errors.APIError as exc:
            response = getattr(exc, "response", None)
            wait = retry_after_seconds(getattr(response, "headers", None))
            if exc.code in RETRYABLE:
                raise TransientCallError(
                    f"gemini: HTTP {exc.code}: {exc.message}", wait, exc.code
                ) from exc
            raise status_error("gemini", exc.code, str(exc.message), None) from exc
        except (TimeoutError, ValueError, *transport_errors()) as exc:
            # timeouts, connection errors, malformed bodies
            raise TransientCallError(f"gemini: {type(exc).__name__}: {exc}") from exc
        usage = resp.usage_metadata
        tokens_out = 0
        if usage is not None:
            tokens_out = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        candidate = resp.candidates[0] if resp.candidates else None
        finish = None
        if candidate is not None and candidate.finish_reason is not None:
            finish = getattr(candidate.finish_reason, "value", str(candidate.finish_reason))
        text = ""
        if candidate is not None and candidate.content and candidate.content.parts:
            text = "".join(p.text for p in candidate.content.parts if p.text and not p.thought)
        refusal = None
        blocked = resp.prompt_feedback.block_reason if resp.prompt_feedback else None
        if blocked:
            refusal = f"prompt blocked: {getattr(blocked, 'value', blocked)}"
        elif finish in REFUSALS:
            refusal = f"stopped for {finish}"
        elif candidate is None:
            raise TransientCallError("gemini: response without candidates")
        sent = {"model": kwargs["model"]}
        sent.update(
            kwargs["config"].model_dump(
                mode="json", exclude_none=True, exclude={"system_instruction"}
            )
        )
        return ChatResponse(
            text=text,
            tokens_in=(usage.prompt_token_count or 0) if usage else 0,
            tokens_out=tokens_out,
            finish_reason=finish,
            refusal=refusal,
            model=resp.model_version or self.model,
            extra={
                "sent": sent,
                "cached_tokens": int((usage.cached_content_token_count or 0) if usage else 0),
                "reasoning_tokens": int((usage.thoughts_token_count or 0) if usage else 0),
            },
        )
