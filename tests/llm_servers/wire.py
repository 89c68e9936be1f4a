"""Loopback HTTP servers that speak the OpenAI, Anthropic and Gemini wire formats.

These are **wire-format test servers**, not models and not the providers: they
accept the requests the official SDKs send and answer with bodies, status
codes and headers shaped like each provider's documented responses (success,
structured output, refusals, and errors with their JSON error envelopes), so
the real SDK code paths run end to end with no network.  Answers come from
:mod:`tests.llm_servers.responder` (a scripted player).

Fault injection (:class:`Faults`) makes a fraction of requests fail the way
real services do: 429 with ``Retry-After``, 500, a response slower than the
client's timeout, a 200 whose JSON body is cut off, a refusal, or an answer the
layer must reject.  ``latency_s`` delays every response (the concurrency
benchmark).  Every request is logged with its body hash, time and outcome so
tests can check, for instance, that a retry came no sooner than ``Retry-After``.

Routes: ``POST /v1/chat/completions`` (OpenAI), ``POST /v1/messages``
(Anthropic), ``POST /v1beta/models/{model}:generateContent`` (Gemini); the batch APIs: OpenAI's
files and batches, Anthropic's message batches, Gemini's ``models/{model}:batchGenerateContent``
with inlined requests and ``GET /v1beta/batches/{id}`` (the job as a long-running operation).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .responder import NormalizedRequest, Reply, invalid_reply, scripted_reply

_GEMINI_PATH = re.compile(r"^/(v1beta|v1|v1alpha)/models/([^/:]+):generateContent$")
_GEMINI_BATCH = re.compile(r"^/(v1beta|v1|v1alpha)/models/([^/:]+):batchGenerateContent$")


@dataclass
class Faults:
    """Probabilities of each injected fault (checked in this order; at most one per request)."""

    rate_limit: float = 0.0
    server_error: float = 0.0
    slow: float = 0.0
    truncated: float = 0.0
    refusal: float = 0.0
    invalid: float = 0.0
    #: the Retry-After header value sent with 429s (seconds)
    retry_after: str = "1"
    #: how long a "slow" response takes (make it longer than the client's timeout)
    slow_s: float = 3.0
    seed: int = 0
    #: the first N requests are answered normally (lets a test warm up)
    skip_first: int = 0
    #: faults for the first requests, in order (None: answer normally); then the random draw.
    #: Besides the names above: the rejections of ``STATUS_FAULTS`` (401, 403, 404, 400, 500)
    script: list[str | None] = field(default_factory=list)
    #: a fault for every request after the script (e.g. "unauthorized": a rejected key)
    always: str | None = None
    #: how long the server takes to say how it serves (GET .../props and .../models)
    probe_s: float = 0.0

    def pick(self, rng: random.Random, n: int) -> str | None:
        if n <= len(self.script):
            return self.script[n - 1]
        if self.always is not None:
            return self.always
        for name in ("rate_limit", "server_error", "slow", "truncated", "refusal", "invalid"):
            if rng.random() < getattr(self, name):
                return name
        return None


@dataclass
class LogEntry:
    t: float
    api: str
    body_hash: str
    status: int
    fault: str | None
    retry_count: str | None = None


@dataclass
class ServerState:
    faults: Faults
    latency_s: float
    responder: Callable[[NormalizedRequest], Reply]
    rng: random.Random
    lock: threading.Lock = field(default_factory=threading.Lock)
    log: list[LogEntry] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    #: every request received, normalised (its ``raw`` is the JSON body as sent)
    seen: list[NormalizedRequest] = field(default_factory=list)
    requests: int = 0
    #: requests being answered right now, and the most at once (cluster-wide limits are tested on it)
    in_flight: int = 0
    peak_in_flight: int = 0
    #: the dated snapshot the server names in its responses (None: the model asked for)
    snapshot: str | None = None
    #: system prompts seen so far: a repeated one is reported as read from the prompt cache,
    #: as the providers report automatic (OpenAI, Gemini) or marked (Anthropic) prefix caching
    prefixes: set = field(default_factory=set)
    #: batch APIs (OpenAI files + batches, Anthropic message batches): uploaded files, jobs,
    #: how many polls a job stays in progress, and whether jobs are held (never finish)
    files: dict = field(default_factory=dict)
    batches: dict = field(default_factory=dict)
    batch_polls: int = 1
    hold_batches: bool = False
    batch_lines: int = 0
    #: the client asking how the server serves, right now; and completions sent meanwhile
    probing: int = 0
    sent_while_probed: int = 0


# -- request normalisation ------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def normalize_openai(body: dict[str, Any]) -> NormalizedRequest:
    system = "\n".join(_text_of(m["content"]) for m in body["messages"] if m["role"] == "system")
    messages = [
        (m["role"], _text_of(m["content"])) for m in body["messages"] if m["role"] != "system"
    ]
    schema = None
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt["json_schema"]["schema"]
    return NormalizedRequest(
        "openai",
        body["model"],
        system,
        messages,
        schema,
        body.get("max_tokens") or body.get("max_completion_tokens"),
        body,
    )


def normalize_anthropic(body: dict[str, Any]) -> NormalizedRequest:
    messages = [(m["role"], _text_of(m["content"])) for m in body["messages"]]
    schema = None
    choice = body.get("tool_choice") or {}
    for tool in body.get("tools", []):
        if choice.get("type") == "tool" and tool["name"] == choice.get("name"):
            schema = tool["input_schema"]
    return NormalizedRequest(
        "anthropic",
        body["model"],
        _text_of(body.get("system", "")),
        messages,
        schema,
        body.get("max_tokens"),
        body,
    )


def normalize_gemini(model: str, body: dict[str, Any]) -> NormalizedRequest:
    def parts_text(content: dict[str, Any] | None) -> str:
        return "".join(p.get("text", "") for p in (content or {}).get("parts", []))

    messages = [
        ("assistant" if c.get("role") == "model" else "user", parts_text(c))
        for c in body.get("contents", [])
    ]
    config = body.get("generationConfig", {})
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return NormalizedRequest(
        "gemini",
        model,
        parts_text(body.get("systemInstruction")),
        messages,
        schema,
        config.get("maxOutputTokens"),
        body,
    )


# -- response bodies (documented shapes) ---------------------------------------


def _tokens(req: NormalizedRequest, text: str) -> tuple[int, int]:
    prompt = len(req.system) + sum(len(t) for _, t in req.messages)
    return max(1, prompt // 4), max(1, len(text) // 4)


def _cached(req: NormalizedRequest, state: ServerState | None) -> int:
    """Prompt tokens of the request's system prompt when the server saw it before."""
    if state is None or not req.system:
        return 0
    with state.lock:
        seen = req.system in state.prefixes
        state.prefixes.add(req.system)
    return len(req.system) // 4 if seen else 0


def _model(req: NormalizedRequest, state: ServerState | None) -> str:
    return (state.snapshot if state is not None else None) or req.model


def openai_body(
    req: NormalizedRequest, reply: Reply | None, state: ServerState | None = None
) -> dict[str, Any]:
    text = reply.text if reply else ""
    tin, tout = _tokens(req, text)
    cached = _cached(req, state)
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if reply is None:
        message = {
            "role": "assistant",
            "content": None,
            "refusal": "I'm sorry, I can't help with that.",
        }
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": _model(req, state),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason if reply else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": tin,
            "completion_tokens": tout,
            "total_tokens": tin + tout,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
        "system_fingerprint": "fp_loopback",
    }


def anthropic_body(
    req: NormalizedRequest, reply: Reply | None, state: ServerState | None = None
) -> dict[str, Any]:
    text = reply.text if reply else ""
    tin, tout = _tokens(req, text)
    system = req.raw.get("system")
    marked = isinstance(system, list) and any("cache_control" in b for b in system)
    prefix = len(req.system) // 4 if marked else 0
    read = _cached(req, state) if marked else 0
    written = prefix - read
    if reply is None:
        content: list[dict[str, Any]] = []
        stop = "refusal"
    elif req.schema is not None:
        content = [
            {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:24]}",
                "name": "answer",
                "input": reply.data,
            }
        ]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": text}]
        stop = "end_turn"
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": _model(req, state),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": tin - prefix,  # Anthropic counts cache reads and writes apart
            "output_tokens": tout,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        },
    }


def gemini_body(
    req: NormalizedRequest, reply: Reply | None, state: ServerState | None = None
) -> dict[str, Any]:
    text = reply.text if reply else ""
    tin, tout = _tokens(req, text)
    cached = _cached(req, state)
    if reply is None:
        candidate: dict[str, Any] = {
            "finishReason": "SAFETY",
            "index": 0,
            "safetyRatings": [
                {
                    "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                    "probability": "HIGH",
                    "blocked": True,
                }
            ],
        }
        tout = 0
    else:
        candidate = {
            "content": {"parts": [{"text": text}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
        }
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": tin,
            "candidatesTokenCount": tout,
            "totalTokenCount": tin + tout,
            "cachedContentTokenCount": cached,
        },
        "modelVersion": _model(req, state),
        "responseId": uuid.uuid4().hex[:20],
    }


ERRORS = {
    ("openai", 429): {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
    ("openai", 500): {"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": None, "code": None}},
    ("anthropic", 429): {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit."}},
    ("anthropic", 500): {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
    ("gemini", 429): {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}},
    ("gemini", 500): {"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}},
}  # fmt: skip


#: faults that reject the request: (status, message; ``{key}`` is the API key received)
STATUS_FAULTS = {
    "unauthorized": (401, "Incorrect API key provided: {key}"),
    "forbidden": (403, "Key {key} has no access to this model"),
    "unknown_model": (404, "The model does not exist"),
    "bad_request": (400, "Invalid parameter: response_format"),
    "validation_500": (500, "response_format.type should be 'text' or 'json_object'"),
    "echo_500": (500, "upstream failure while serving key {key}"),
    "context_400": (
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9013 tokens. Please reduce the length of the messages.",
    ),
}


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    """The ``file`` field of a multipart/form-data upload."""
    from email.parser import BytesParser
    from email.policy import default

    msg = BytesParser(policy=default).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    for part in msg.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_payload(decode=True) or b""
    return b""


def _public(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if not k.startswith("_")}


def _poll(state: ServerState, batch: dict[str, Any]) -> dict[str, Any]:
    """A batch job as a poll sees it: in progress for ``batch_polls`` polls, then done."""
    batch["polls"] += 1
    view = batch["view"]
    if not state.hold_batches and batch["polls"] > state.batch_polls:
        if batch["api"] == "openai":
            view["status"] = "completed"
            view["output_file_id"] = batch["output"]
            n = view["request_counts"]["total"]
            view["request_counts"] = {"total": n, "completed": n, "failed": 0}
        elif batch["api"] == "gemini":
            meta = view["metadata"]
            meta["state"] = "BATCH_STATE_SUCCEEDED"
            meta["endTime"] = meta["updateTime"] = meta["createTime"]
            meta["output"] = {"inlinedResponses": {"inlinedResponses": batch["results"]}}
            view["done"] = True
        else:
            view["processing_status"] = "ended"
            view["ended_at"] = view["created_at"]
            counts = view["request_counts"]
            counts["succeeded"], counts["processing"] = counts["processing"], 0
            view["results_url"] = view["_results"]
    return _public(view)


# -- the server ------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body are two writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        length: int | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) if length is None else length))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def do_GET(self) -> None:
        if self.path in ("/health", "/"):
            self._send(200, b'{"status":"ok"}')
            return
        path = self.path.split("?", 1)[0]
        state = self.server.state
        if path.endswith(("/props", "/models")) and state.faults.probe_s:
            with state.lock:
                state.probing += 1
            time.sleep(state.faults.probe_s)
            with state.lock:
                state.probing -= 1
        with state.lock:
            # a Gemini job, by its name (the SDK asks at /v1/batches/ID as OpenAI's route is)
            if m := re.fullmatch(r"/(?:v1beta|v1|v1alpha)/(batches/[^/]+)", path):
                batch = state.batches.get(m.group(1))
                if batch is not None:
                    self._send(200, json.dumps(_poll(state, batch)).encode())
                    return
            if m := re.fullmatch(r"/v1/files/([^/]+)/content", path):
                content = state.files.get(m.group(1))
                if content is not None:
                    self._send(200, content)
                    return
            elif m := re.fullmatch(r"/v1/batches/([^/]+)", path):
                batch = state.batches.get(m.group(1))
                if batch is not None:
                    self._send(200, json.dumps(_poll(state, batch)).encode())
                    return
            elif m := re.fullmatch(r"/v1/messages/batches/([^/]+)/results", path):
                batch = state.batches.get(m.group(1))
                if batch is not None and batch["view"]["processing_status"] == "ended":
                    self._send(200, batch["results"])
                    return
            elif m := re.fullmatch(r"/v1/messages/batches/([^/]+)", path):
                batch = state.batches.get(m.group(1))
                if batch is not None:
                    self._send(200, json.dumps(_poll(state, batch)).encode())
                    return
        self._send(404, b'{"error":{"message":"not found"}}')

    def _batch_post(self, path: str, raw: bytes) -> bool:
        """The batch routes; True when the request was one of them."""
        state = self.server.state
        if path == "/v1/files":
            upload = _multipart_file(self.headers.get("Content-Type", ""), raw)
            file_id = f"file-{uuid.uuid4().hex[:24]}"
            with state.lock:
                state.files[file_id] = upload
            body = {
                "id": file_id,
                "object": "file",
                "bytes": len(upload),
                "created_at": int(time.time()),
                "filename": "batch.jsonl",
                "purpose": "batch",
                "status": "processed",
            }
            self._send(200, json.dumps(body).encode())
            return True
        if path == "/v1/batches":
            spec = json.loads(raw)
            with state.lock:
                lines = state.files[spec["input_file_id"]].decode().splitlines()
            out = []
            for line in filter(None, lines):
                row = json.loads(line)
                req = normalize_openai(row["body"])
                with state.lock:
                    state.seen.append(req)
                    state.batch_lines += 1
                response = openai_body(req, state.responder(req), state)
                out.append(
                    {
                        "id": f"batch_req_{uuid.uuid4().hex[:16]}",
                        "custom_id": row["custom_id"],
                        "response": {
                            "status_code": 200,
                            "request_id": uuid.uuid4().hex,
                            "body": response,
                        },
                        "error": None,
                    }
                )
            output_id = f"file-{uuid.uuid4().hex[:24]}"
            batch_id = f"batch_{uuid.uuid4().hex[:24]}"
            view = {
                "id": batch_id,
                "object": "batch",
                "endpoint": spec["endpoint"],
                "input_file_id": spec["input_file_id"],
                "completion_window": spec["completion_window"],
                "status": "in_progress",
                "created_at": int(time.time()),
                "output_file_id": None,
                "error_file_id": None,
                "request_counts": {"total": len(out), "completed": 0, "failed": 0},
            }
            with state.lock:
                state.files[output_id] = ("\n".join(json.dumps(o) for o in out) + "\n").encode()
                state.batches[batch_id] = {
                    "view": view,
                    "polls": 0,
                    "api": "openai",
                    "output": output_id,
                }
            self._send(200, json.dumps(view).encode())
            return True
        if gem := _GEMINI_BATCH.match(path):
            spec = json.loads(raw)["batch"]
            results = []
            for item in spec["inputConfig"]["requests"]["requests"]:
                # an inlined request names its model, which a call names in its path: the
                # request itself (what the scripted player hashes) is the call's
                body = {k: v for k, v in item["request"].items() if k != "model"}
                req = normalize_gemini(gem.group(2), body)
                with state.lock:
                    state.seen.append(req)
                    state.batch_lines += 1
                results.append(
                    {
                        "response": gemini_body(req, state.responder(req), state),
                        "metadata": item.get("metadata", {}),
                    }
                )
            batch_id = uuid.uuid4().hex[:20]
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            view = {
                "name": f"batches/{batch_id}",
                "metadata": {
                    "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                    "model": f"models/{gem.group(2)}",
                    "displayName": spec.get("displayName", ""),
                    "state": "BATCH_STATE_PENDING",
                    "createTime": now,
                    "updateTime": now,
                },
            }
            with state.lock:
                state.batches[view["name"]] = {
                    "view": view,
                    "polls": 0,
                    "api": "gemini",
                    "results": results,
                }
            self._send(200, json.dumps(view).encode())
            return True
        if path == "/v1/messages/batches":
            spec = json.loads(raw)
            results = []
            for item in spec["requests"]:
                req = normalize_anthropic(item["params"])
                with state.lock:
                    state.seen.append(req)
                    state.batch_lines += 1
                message = anthropic_body(req, state.responder(req), state)
                results.append(
                    {
                        "custom_id": item["custom_id"],
                        "result": {"type": "succeeded", "message": message},
                    }
                )
            batch_id = f"msgbatch_{uuid.uuid4().hex[:24]}"
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            host, port = self.server.server_address[:2]
            view = {
                "id": batch_id,
                "type": "message_batch",
                "processing_status": "in_progress",
                "request_counts": {
                    "processing": len(results),
                    "succeeded": 0,
                    "errored": 0,
                    "canceled": 0,
                    "expired": 0,
                },
                "ended_at": None,
                "created_at": now,
                "expires_at": now,
                "cancel_initiated_at": None,
                "archived_at": None,
                "results_url": None,
                "_results": f"http://{host}:{port}/v1/messages/batches/{batch_id}/results",
            }
            with state.lock:
                state.batches[batch_id] = {
                    "view": view,
                    "polls": 0,
                    "api": "anthropic",
                    "results": ("\n".join(json.dumps(r) for r in results) + "\n").encode(),
                }
            self._send(200, json.dumps(_public(view)).encode())
            return True
        return False

    def do_POST(self) -> None:
        state = self.server.state
        with state.lock:
            state.in_flight += 1
            state.peak_in_flight = max(state.peak_in_flight, state.in_flight)
        try:
            self._post()
        except (
            Exception
        ) as exc:  # a bug in the test server must show, not look like a network fault
            with self.server.state.lock:
                self.server.state.counts["server_bug"] += 1
                self.server.state.errors.append(repr(exc))
            self._send(
                500, json.dumps({"error": {"message": f"test server bug: {exc!r}"}}).encode()
            )
        finally:
            with state.lock:
                state.in_flight -= 1

    def _post(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        if self.path.split("?", 1)[0] == "/v1/files":
            self._batch_post("/v1/files", raw)
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, b'{"error":{"message":"invalid JSON body"}}')
            return
        path = self.path.split("?", 1)[0]
        if self._batch_post(path, raw):
            return
        gem = _GEMINI_PATH.match(path)
        if path.endswith("/chat/completions"):
            req, make = normalize_openai(body), openai_body
        elif path.endswith("/messages"):
            req, make = normalize_anthropic(body), anthropic_body
        elif gem:
            req, make = normalize_gemini(gem.group(2), body), gemini_body
        else:
            self._send(404, b'{"error":{"message":"no such route"}}')
            return
        with state.lock:
            state.requests += 1
            state.sent_while_probed += state.probing > 0
            n = state.requests
            fault = None if n <= state.faults.skip_first else state.faults.pick(state.rng, n)
            state.seen.append(req)
            state.counts[fault or "ok"] += 1
            state.counts[f"api:{req.api}"] += 1
        digest = hashlib.sha256(raw).hexdigest()[:16]
        status = 200
        retry_count = self.headers.get("x-stainless-retry-count")
        if state.latency_s:
            time.sleep(state.latency_s)
        if fault in STATUS_FAULTS:  # a rejection: the message echoes the key, as some servers do
            status, message = STATUS_FAULTS[fault]
            key = (
                self.headers.get("Authorization", "").removeprefix("Bearer ")
                or self.headers.get("x-api-key")
                or self.headers.get("x-goog-api-key")
                or ""
            )
            body = {"error": {"message": message.format(key=key), "code": status}}
            self._log(req.api, digest, status, fault, retry_count)
            self._send(status, json.dumps(body).encode())
            return
        if fault in ("rate_limit", "server_error"):
            status = 429 if fault == "rate_limit" else 500
            headers = {"Retry-After": state.faults.retry_after} if status == 429 else {}
            self._log(req.api, digest, status, fault, retry_count)
            self._send(status, json.dumps(ERRORS[(req.api, status)]).encode(), headers)
            return
        if fault == "slow":
            time.sleep(state.faults.slow_s)
        reply: Reply | None
        if fault == "refusal":
            reply = None
        elif fault == "invalid":
            reply = invalid_reply(req)
        else:
            reply = state.responder(req)
        payload = json.dumps(make(req, reply, state)).encode()
        self._log(req.api, digest, status, fault, retry_count)
        if fault == "truncated":
            cut = payload[: len(payload) // 2]
            self._send(200, cut)
            return
        self._send(200, payload)

    def _log(
        self, api: str, digest: str, status: int, fault: str | None, retry_count: str | None
    ) -> None:
        state = self.server.state
        with state.lock:
            state.log.append(LogEntry(time.monotonic(), api, digest, status, fault, retry_count))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    state: ServerState

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):  # a client that timed out or was killed
            return
        super().handle_error(request, client_address)


class WireServer:
    """A loopback server on 127.0.0.1 (a free port); use as a context manager."""

    def __init__(
        self,
        faults: Faults | None = None,
        latency_s: float = 0.0,
        responder: Callable[[NormalizedRequest], Reply] = scripted_reply,
        port: int = 0,
        snapshot: str | None = None,
    ) -> None:
        faults = faults or Faults()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.state = ServerState(faults, latency_s, responder, random.Random(faults.seed))
        self._server.state.snapshot = snapshot
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def state(self) -> ServerState:
        return self._server.state

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:  # pragma: no cover - for benchmarks and manual runs
    """``python -m tests.llm_servers.wire --port 8765 --latency 0.2`` serves until killed."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    args = ap.parse_args()
    server = WireServer(latency_s=args.latency, port=args.port)
    print(server.url, flush=True)
    server._server.serve_forever()


if __name__ == "__main__":  # pragma: no cover
    main()
