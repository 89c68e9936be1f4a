"""What every provider backend shares: the Backend interface, remote call plumbing and the
mapping of HTTP statuses to the LLM layer's errors."""

from __future__ import annotations

import asyncio
import importlib
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mesa_dilemmas import redaction
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from mesa_dilemmas.llm.settings import LLMSettings
    from mesa_dilemmas.llm.specs import ModelSpec


class Backend:
    """Base backend.  ``paid``: calls cost money/budget (not the replay backend)."""

    provider: str = ""
    paid: bool = True
    #: calls in flight at once that make sense for this backend (None: the provider setting)
    max_concurrency: int | None = None

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        self.spec = spec
        self.settings = settings

    @property
    def endpoint(self) -> str:
        """What the throttle is shared by: the provider plus its base URL."""
        return f"{self.provider}@{getattr(self, 'base_url', None) or 'default'}"

    async def acomplete(self, request: ChatRequest) -> ChatResponse:  # pragma: no cover - interface
        raise NotImplementedError

    def context_info(self, request: ChatRequest) -> tuple[int | None, int | None]:
        """The request's prompt tokens and the context window it goes into, where this backend
        knows them before a call (the local model does; remote providers report usage only)."""
        return None, None


class RemoteBackend(Backend):
    """A provider reached over HTTP: its URL, its key (checked here), timeout and retries."""

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        from mesa_dilemmas.llm.errors import LLMConfigError
        from mesa_dilemmas.llm.specs import api_key, endpoint_url

        super().__init__(spec, settings)
        self.base_url = endpoint_url(spec, settings)
        env, self.api_key, required = api_key(spec, settings)
        redaction.register(self.api_key)  # never stored or printed, even when a server echoes it
        if self.api_key is None and required:
            raise LLMConfigError(f"llm: {env} is not set (needed by {spec})")
        ps = settings.provider(self.provider)
        self.timeout = ps.timeout_s or settings.timeout_s
        self.max_retries = settings.max_retries if ps.max_retries is None else ps.max_retries
        self.model = spec.model

    def sdk_clients(self, client_cls: Callable[..., Any]) -> PerLoop[Any]:
        """One SDK client per event loop, built with this backend's key, URL, timeout and retries."""
        return PerLoop(
            lambda: client_cls(
                api_key=self.api_key or "no-key-needed",
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=0,  # the client retries, recording every attempt
            )
        )


class PerLoop[T]:
    """One object (an SDK client) per running event loop.

    SDK async clients hold connections bound to the loop that opened them; the
    broker runs one loop per model, so a client must never cross to another."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._items: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                item = self._items[loop] = self._factory()
            return item


def retry_after_seconds(headers: Any) -> float | None:
    """``Retry-After`` in seconds (integer or float form), when the server sent one."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            continue
    return None


#: statuses worth another attempt (timeouts, conflicts, rate limits, server errors)
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_VALIDATION_WORDS = (
    "validation",
    "invalid",
    "should be",
    "must be",
    "not supported",
    "unsupported",
    "unexpected",
    "required",
    "schema",
    "response_format",
)


#: how providers word "the prompt does not fit the context window" (OpenAI and compatible
#: servers, Anthropic, Gemini, vLLM, llama.cpp's server)
_CONTEXT_WORDS = (
    "context length",
    "context window",
    "maximum context",
    "context_length_exceeded",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "exceeds the maximum number of tokens",
    "exceed context window",
)


def status_error(provider: str, status: int, message: str, headers: Any = None) -> Exception:
    """The exception an HTTP error status means for the run.

    401/403 and 404 stop the run (:class:`ProviderRejected`), and so does a 400/413/422 that
    says the prompt is longer than the model's context (:class:`ContextOverflow`: remote
    prompts are not counted before the call, the provider counts); 400/422 -- and a 500 whose body
    reads as a validation error -- are malformed requests (:class:`CallFailed` with
    ``malformed_request``); 408/409/429/5xx are retried (:class:`TransientCallError`)."""
    from mesa_dilemmas.llm.errors import CallFailed, ProviderRejected, TransientCallError

    text = redaction.redact(" ".join(str(message).split())[:300]) or ""
    head = f"{provider}: HTTP {status}: {text}"
    if status in (401, 403):
        return ProviderRejected(f"{head} (the API key was rejected or lacks permission)", status)
    if status == 404:
        return ProviderRejected(f"{head} (unknown model or wrong base URL)", status)
    lowered = text.lower()
    if status in (400, 413, 422) and any(words in lowered for words in _CONTEXT_WORDS):
        from mesa_dilemmas.llm.errors import ContextOverflow

        return ContextOverflow(
            f"{head} (the provider counted the prompt longer than the model's context: "
            "shorten the prompt or lower [llm] max_tokens, or use a model with a longer context)"
        )
    if status in (400, 422) or (
        status == 500 and any(word in lowered for word in _VALIDATION_WORDS)
    ):
        return CallFailed(f"{head} (the server rejected the request)", status, True)
    if status in RETRYABLE_STATUS:
        return TransientCallError(head, retry_after_seconds(headers), status)
    return CallFailed(head, status)


def transport_errors() -> tuple[type[BaseException], ...]:
    """Timeout/connection error classes of the HTTP library the SDKs use (httpx or its fork)."""
    found: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)
