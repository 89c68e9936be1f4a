"""Google's Gemini API through the official ``google-genai`` SDK.

Native answers use ``response_mime_type="application/json"`` with
``response_json_schema``.  The SDK's own retry (tenacity, exponential) does not
read ``Retry-After``, so it is switched off here and 429/5xx/timeouts are
raised as :class:`TransientCallError` carrying the server's ``Retry-After``;
the client's retry loop waits exactly that long.  A candidate stopped for
safety (or a blocked prompt) is reported as a refusal.

Batch mode (``[llm] batch = true``): the calls a phase makes at once go out as one batch job
of inlined requests (``batches.create``: ``models/{model}:batchGenerateContent``), each
carrying its call key in its metadata; the job is polled (``batches.get``) until it has
succeeded, and each inlined response is read exactly as a call-by-call response is.
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
from mesa_dilemmas.llm.errors import CallFailed, TransientCallError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec

RETRYABLE = {408, 429, 500, 502, 503, 504}
REFUSALS = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}
#: a batch job in these states has not finished
BATCH_RUNNING = {
    "JOB_STATE_UNSPECIFIED",
    "JOB_STATE_PENDING",
    "JOB_STATE_RUNNING",
    "JOB_STATE_QUEUED",
}


def _api_error(exc: genai_errors.APIError) -> Exception:
    """A 429/5xx/408 as a :class:`TransientCallError` with the server's ``Retry-After``; any
    other status as the layer's error for it."""
    response = getattr(exc, "response", None)
    wait = retry_after_seconds(getattr(response, "headers", None))
    if exc.code in RETRYABLE:
        return TransientCallError(f"gemini: HTTP {exc.code}: {exc.message}", wait, exc.code)
    return status_error("gemini", exc.code, str(exc.message), None)


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
            raise _api_error(exc) from exc
        except (TimeoutError, ValueError, *transport_errors()) as exc:
            # timeouts, connection errors, malformed bodies
            raise TransientCallError(f"gemini: {type(exc).__name__}: {exc}") from exc
        return self.to_response(resp, kwargs)

    # -- the Batch API: inlined requests in one job, polled until it has succeeded ----------
    async def submit_batch(self, items: list[tuple[str, ChatRequest]]) -> str:
        """Start one batch job of ``(key, request)`` pairs (the key in each request's
        metadata); returns the job's name."""
        client = self._clients.get()
        inlined = []
        for key, req in items:
            kwargs = self.request_kwargs(req)
            inlined.append(
                types.InlinedRequest(
                    model=kwargs["model"],
                    contents=kwargs["contents"],
                    config=kwargs["config"],
                    metadata={"key": key},
                )
            )
        try:
            job = await client.aio.batches.create(
                model=self.model, src=inlined, config={"display_name": "mesa-dilemmas"}
            )
        except genai_errors.APIError as exc:
            raise _api_error(exc) from exc
        except (TimeoutError, ValueError, *transport_errors()) as exc:
            raise TransientCallError(f"gemini: batch create failed: {exc}") from exc
        if not job.name:
            raise TransientCallError("gemini: batch create returned no job name")
        return job.name

    async def poll_batch(
        self, batch_id: str, requests: dict[str, ChatRequest]
    ) -> dict[str, ChatResponse | Exception] | None:
        """None while the job is pending or running; then each key's response (or error)."""
        client = self._clients.get()
        try:
            job = await client.aio.batches.get(name=batch_id)
        except genai_errors.APIError as exc:
            raise _api_error(exc) from exc
        except (TimeoutError, ValueError, *transport_errors()) as exc:
            raise TransientCallError(f"gemini: batch poll failed: {exc}") from exc
        state = getattr(job.state, "value", str(job.state))
        if state in BATCH_RUNNING:
            return None
        if state != "JOB_STATE_SUCCEEDED":
            why = getattr(job.error, "message", None) or state
            failure = CallFailed(f"gemini: batch {batch_id} ended {state}: {why}")
            return {key: failure for key in requests}
        out: dict[str, ChatResponse | Exception] = {}
        for item in (job.dest.inlined_responses if job.dest else None) or []:
            key = (item.metadata or {}).get("key")
            if key is None:
                continue
            if item.error is not None or item.response is None:
                code = int(getattr(item.error, "code", None) or 500)
                message = str(getattr(item.error, "message", None) or "no response")
                out[key] = status_error("gemini", code, message, None)
                continue
            req = requests.get(key)
            kwargs = self.request_kwargs(req) if req is not None else {"model": self.model}
            out[key] = self.to_response(item.response, kwargs)
        return out

    def to_response(
        self, resp: types.GenerateContentResponse, kwargs: dict[str, Any]
    ) -> ChatResponse:
        """Our response of one of Gemini's (a call's, or an inlined response of a batch)."""
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
        if "config" in kwargs:
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
