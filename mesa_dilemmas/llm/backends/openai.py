"""OpenAI and every OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, OpenRouter).

The official ``openai`` SDK does the HTTP: its ``max_retries`` retries 408/409/
429/5xx and timeouts with exponential backoff, honouring ``Retry-After`` /
``retry-after-ms``; ``timeout`` bounds each attempt.  Native answers use
``response_format = {"type": "json_schema", ...}``: strict on OpenAI's own
endpoint when the schema allows it (range keywords are dropped there, the
validator and the prompt still enforce them), the full schema otherwise (a
vLLM or llama.cpp server turns it into a grammar).  llama-cpp-python's own
server wants ``{"type": "json_object", "schema": ...}`` instead: set
``[llm.providers.openai] schema_format = "json_object"``.
"""

from __future__ import annotations

import copy
from typing import Any

import openai

from mesa_dilemmas.llm.backends import RemoteBackend
from mesa_dilemmas.llm.errors import CallFailed, TransientCallError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec

_RANGE_KEYWORDS = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")


def strict_compatible(schema: dict[str, Any]) -> bool:
    """OpenAI strict mode: every object closed and every property required."""
    if schema.get("type") == "object":
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(
            schema.get("required", ())
        ) != set(props):
            return False
        return all(strict_compatible(p) for p in props.values())
    if schema.get("type") == "array":
        return strict_compatible(schema.get("items", {}))
    return True


def without_ranges(schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)

    def strip(node: Any) -> None:
        if isinstance(node, dict):
            for k in _RANGE_KEYWORDS:
                node.pop(k, None)
            for v in node.values():
                strip(v)
        elif isinstance(node, list):
            for v in node:
                strip(v)

    strip(out)
    return out


class OpenAIBackend(RemoteBackend):
    provider = "openai"

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        super().__init__(spec, settings)
        ps = settings.provider(self.provider)
        self.schema_format = ps.schema_format
        self._clients = self.sdk_clients(openai.AsyncOpenAI)

    def request_kwargs(self, req: ChatRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
            "temperature": req.temperature,
            "seed": req.seed,
        }
        # OpenAI's own API wants max_completion_tokens (reasoning models reject max_tokens);
        # compatible servers know max_tokens
        kwargs["max_completion_tokens" if self.base_url is None else "max_tokens"] = req.max_tokens
        if req.top_p is not None:
            kwargs["top_p"] = req.top_p
        if req.schema is not None and self.schema_format == "json_object":
            kwargs["response_format"] = {"type": "json_object", "schema": req.schema}
        elif req.schema is not None:
            official = self.base_url is None
            strict = official and strict_compatible(req.schema)
            schema = without_ranges(req.schema) if strict else req.schema
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": strict},
            }
        return kwargs

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        client = self._clients.get()
        try:
            resp = await client.chat.completions.create(**self.request_kwargs(request))
        except openai.APIStatusError as exc:  # the SDK has already retried what is retryable
            raise CallFailed(f"openai: HTTP {exc.status_code}: {_message(exc)}") from exc
        except openai.APITimeoutError as exc:
            raise CallFailed(f"openai: timed out after {self.max_retries + 1} attempts") from exc
        except openai.APIConnectionError as exc:
            raise CallFailed(f"openai: connection failed: {exc}") from exc
        except (ValueError, openai.APIResponseValidationError) as exc:
            # a malformed body (truncated JSON, wrong shape): worth another attempt
            raise TransientCallError(
                f"openai: malformed response: {type(exc).__name__}: {exc}"
            ) from exc
        if not getattr(resp, "choices", None):
            raise TransientCallError("openai: response without choices")
        choice = resp.choices[0]
        message = choice.message
        usage = resp.usage
        return ChatResponse(
            text=message.content or "",
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason,
            refusal=getattr(message, "refusal", None),
            model=resp.model,
        )


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:200]
    return str(exc)[:200]
