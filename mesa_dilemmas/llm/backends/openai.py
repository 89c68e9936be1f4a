"""OpenAI and every OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, OpenRouter).

The official ``openai`` SDK does the HTTP, one attempt per call (``timeout``
bounds it); the client retries 408/409/429/5xx, timeouts and connection errors,
honouring ``Retry-After`` / ``retry-after-ms``, and records every attempt.  Native answers use
``response_format = {"type": "json_schema", ...}``: strict on OpenAI's own
endpoint when the schema allows it (range keywords are dropped there, the
validator and the prompt still enforce them), the full schema otherwise (a
vLLM or llama.cpp server turns it into a grammar).  llama-cpp-python's own
server wants ``{"type": "json_object", "schema": ...}`` instead.  A compatible
server is probed once per process (:meth:`OpenAIBackend.native_mode`): the
first of json_schema, json_object with the schema, and tags (no structured
output: the answer in tags) that it accepts is used, and recorded with every
call.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from mesa_dilemmas.llm.backends.base import PerLoop, RemoteBackend, status_error
from mesa_dilemmas.llm.backends.openai_models import is_reasoning_model
from mesa_dilemmas.llm.errors import CallFailed, TransientCallError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse, Message
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec

#: request options of a chat completion (SDKs that authenticate per request want "security")
_POST_OPTIONS: dict[str, Any] = (
    {"security": {"bearer_auth": True}}
    if "security" in getattr(openai._types.RequestOptions, "__annotations__", {})
    else {}
)

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


def sent_params(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a request as sent, without its messages (recorded with each call;
    the messages are in the recorded request)."""
    return {k: copy.deepcopy(v) for k, v in kwargs.items() if k not in ("messages", "contents")}


#: endpoint -> (requests it serves at once, None) as the server says (see ``serving``)
_SERVING: dict[str, tuple[int | None, float | None]] = {}

#: how a compatible server may take a JSON schema, best first; "tags": it takes none
NATIVE_MODES = ("json_schema", "json_object", "tags")
#: endpoint (base URL + model) -> the mode it accepts, as probed by this process
_PROBED: dict[str, str] = {}
_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


class OpenAIBackend(RemoteBackend):
    provider = "openai"

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        super().__init__(spec, settings)
        ps = settings.provider(self.provider)
        self.schema_format: str = ps.schema_format
        self._clients = self.sdk_clients(openai.AsyncOpenAI)
        self._probe_locks = PerLoop(asyncio.Lock)

    @property
    def schema_mode(self) -> str:
        """The structured-output mode requests with a schema use (recorded with each call)."""
        return self.schema_format

    async def native_mode(self) -> str:
        """The best structured-output mode this endpoint accepts: ``json_schema``, then
        ``json_object`` with the schema, else ``tags`` (no structured output).

        OpenAI's own API takes ``json_schema``; a compatible server is probed once per
        process with a tiny request, starting at the configured ``schema_format``: a
        rejection as malformed (400/422, or a 500 reading as a validation error) moves on
        to the next mode.  Other failures are left to the run (a rejected key stops it)."""
        if self.base_url is None:
            return self.schema_format
        endpoint = f"{self.base_url}#{self.model}"
        async with self._probe_locks.get():
            if endpoint not in _PROBED:
                _PROBED[endpoint] = await self._probe()
        self.schema_format = _PROBED[endpoint]
        return self.schema_format

    async def _probe(self) -> str:
        start = NATIVE_MODES.index(self.schema_format)
        for mode in NATIVE_MODES[start:-1]:
            probe = ChatRequest(
                messages=(Message("user", 'Reply with the JSON object {"ok": true}.'),),
                temperature=0.0,
                max_tokens=8,
                seed=0,
                schema=_PROBE_SCHEMA,
            )
            try:
                await self._create(self.request_kwargs(probe, mode))
            except CallFailed as exc:
                if exc.malformed_request:
                    continue
                return mode  # not a verdict on the mode: keep it, the run will see the error
            except TransientCallError:
                return mode
            return mode
        return "tags"

    async def serving(self) -> tuple[int | None, float | None]:
        """A self-hosted server's concurrency, when it says: ``(slots, None)`` for llama.cpp's
        ``llama-server`` (``GET /props``: ``total_slots``), ``(1, None)`` for
        llama-cpp-python's server (one request at a time; it names itself in ``GET /models``:
        ``owned_by: "me"``), else ``(None, None)``.  Asked once per endpoint and process with
        GET requests (no completion is paid for).  The client then sends at most that many
        calls at once and lengthens the timeout to ``SERIAL_TIMEOUT_S``, so that no call is
        sent again while the server is still generating it.  OpenAI's own API is not asked."""
        if self.base_url is None:
            return None, None
        endpoint = f"{self.base_url}#{self.model}"
        async with self._probe_locks.get():
            if endpoint not in _SERVING:
                _SERVING[endpoint] = await self._probe_serving()
        return _SERVING[endpoint]

    async def _probe_serving(self) -> tuple[int | None, float | None]:
        return await asyncio.to_thread(self._ask_serving)

    def _ask_serving(self) -> tuple[int | None, float | None]:
        import json
        import urllib.request

        assert self.base_url is not None
        root = self.base_url.rstrip("/")
        bare = root[: -len("/v1")] if root.endswith("/v1") else root
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

        def get(url: str) -> Any:
            try:
                req = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(req, timeout=5.0) as resp:  # noqa: S310 (own URL)
                    return json.loads(resp.read())
            except (OSError, ValueError):
                return None

        for url in (f"{bare}/props", f"{root}/props"):
            props = get(url)
            slots = props.get("total_slots") if isinstance(props, dict) else None
            if isinstance(slots, int) and slots >= 1:
                return slots, None
        models = get(f"{root}/models")
        data = models.get("data", []) if isinstance(models, dict) else []
        if any(isinstance(m, dict) and m.get("owned_by") == "me" for m in data):
            return 1, None  # llama-cpp-python's server: one request at a time
        return None, None

    def request_kwargs(self, req: ChatRequest, schema_format: str | None = None) -> dict[str, Any]:
        schema_format = schema_format or self.schema_format
        reasoning = is_reasoning_model(self.model)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
            "seed": req.seed,
        }
        if not reasoning:  # reasoning models reject temperature and top_p
            kwargs["temperature"] = req.temperature
            if req.top_p is not None:
                kwargs["top_p"] = req.top_p
        elif self.settings.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.settings.reasoning_effort
        # OpenAI's own API wants max_completion_tokens (reasoning models reject max_tokens);
        # compatible servers know max_tokens
        key = "max_completion_tokens" if self.base_url is None or reasoning else "max_tokens"
        kwargs[key] = req.max_tokens
        if req.schema is not None and schema_format == "json_object":
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
        kwargs = self.request_kwargs(request)
        return self.to_response(await self._create(kwargs), kwargs)

    def to_response(self, resp: Any, kwargs: dict[str, Any]) -> ChatResponse:
        """A chat completion (a batch result's body too) as the layer's response."""
        if not getattr(resp, "choices", None):
            raise TransientCallError("openai: response without choices")
        choice = resp.choices[0]
        message = choice.message
        usage = resp.usage
        details = getattr(usage, "prompt_tokens_details", None)
        out_details = getattr(usage, "completion_tokens_details", None)
        extra = {
            "sent": sent_params(kwargs),
            "system_fingerprint": getattr(resp, "system_fingerprint", None),
            "cached_tokens": int(getattr(details, "cached_tokens", 0) or 0),
            "reasoning_tokens": int(getattr(out_details, "reasoning_tokens", 0) or 0),
        }
        return ChatResponse(
            text=message.content or "",
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason,
            refusal=getattr(message, "refusal", None),
            model=resp.model,
            extra=extra,
        )

    # -- the Batch API: a JSONL file of requests, one batch job, its output file ----------
    async def submit_batch(self, items: list[tuple[str, ChatRequest]]) -> str:
        """Upload ``(custom_id, request)`` pairs as a JSONL file and start one batch job on
        ``/v1/chat/completions``; returns the batch id."""
        import json

        client = self._clients.get()
        lines = [
            json.dumps(
                {
                    "custom_id": cid,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": self.request_kwargs(req),
                }
            )
            for cid, req in items
        ]
        try:
            file = await client.files.create(
                file=("batch.jsonl", ("\n".join(lines) + "\n").encode()), purpose="batch"
            )
            batch = await client.batches.create(
                input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
        except openai.APIStatusError as exc:
            raise status_error("openai", exc.status_code, _message(exc), None) from exc
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise TransientCallError(f"openai: batch upload failed: {exc}") from exc
        return batch.id

    async def poll_batch(
        self, batch_id: str, requests: dict[str, ChatRequest]
    ) -> dict[str, ChatResponse | Exception] | None:
        """None while the batch runs; then each custom id's response (or its error)."""
        import json

        client = self._clients.get()
        try:
            batch = await client.batches.retrieve(batch_id)
            if batch.status in ("validating", "in_progress", "finalizing", "cancelling"):
                return None
            out: dict[str, ChatResponse | Exception] = {}
            for file_id in (batch.output_file_id, batch.error_file_id):
                if not file_id:
                    continue
                content = await client.files.content(file_id)
                for line in content.text.splitlines():
                    if not line.strip():
                        continue
                    row = json.loads(line)
                    cid = row["custom_id"]
                    response = row.get("response") or {}
                    if row.get("error") or response.get("status_code") != 200:
                        err = row.get("error") or response.get("body", {}).get("error") or {}
                        out[cid] = status_error(
                            "openai",
                            int(response.get("status_code") or 500),
                            str(err.get("message", err)),
                        )
                        continue
                    body = ChatCompletion.model_validate(response["body"])
                    req = requests.get(cid)
                    kwargs = self.request_kwargs(req) if req is not None else {}
                    out[cid] = self.to_response(body, kwargs)
        except openai.APIStatusError as exc:
            raise status_error("openai", exc.status_code, _message(exc), None) from exc
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise TransientCallError(f"openai: batch poll failed: {exc}") from exc
        return out

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        client = self._clients.get()
        try:
            # the SDK's own POST, as ``chat.completions.create`` makes it, minus its transform
            # of the parameters against their typed definitions: for our plain-JSON request it
            # changes nothing and costs ~9 ms a call (a third of the client's work per call)
            return await client.post(
                "/chat/completions",
                body=kwargs,
                cast_to=ChatCompletion,
                options={**_POST_OPTIONS, "timeout": self.timeout},
            )
        except openai.APIStatusError as exc:
            headers = getattr(exc.response, "headers", None)
            raise status_error("openai", exc.status_code, _message(exc), headers) from exc
        except openai.APITimeoutError as exc:
            raise TransientCallError(f"openai: timed out after {self.timeout:g} s") from exc
        except openai.APIConnectionError as exc:
            raise TransientCallError(
                f"openai: cannot connect to {self.base_url or 'api.openai.com'}: {exc}",
                unreachable=True,
            ) from exc
        except (ValueError, openai.APIResponseValidationError) as exc:
            # a malformed body (truncated JSON, wrong shape): worth another attempt
            raise TransientCallError(
                f"openai: malformed response: {type(exc).__name__}: {exc}"
            ) from exc


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:200]
    return str(exc)[:200]
