"""``mesa-dilemmas llm ...``: check a provider, inspect and clear the response cache.

``llm check PROVIDER:MODEL`` makes one tiny real call (never from the cache) and
prints latency, tokens, the answer, whether it is the expected one ("OK") and why the
reply ended, and the context window -- the quickest way to see that a key, a base URL
or a local model works before starting a long run.  The exit code is 0 whenever the
call succeeded (a model that answers something else is reachable, and says so); 1 when
it failed, 2 for a configuration error, 3 for what would stop a run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mesa_dilemmas.llm.checks import check_spec, resolve
from mesa_dilemmas.llm.errors import CallFailed, LLMConfigError, ProviderRejected
from mesa_dilemmas.llm.request import ChatRequest, Message
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.stores.cache import ResponseCache
from mesa_dilemmas.redaction import redact

CHECK_PROMPT = "Reply with the single word OK."
#: the answer the check prompt asks for
CHECK_EXPECTED = "ok"


def answered_as_asked(answer: str) -> bool:
    """Whether a reply to :data:`CHECK_PROMPT` is the single word OK (any case, quotes and
    punctuation around it ignored)."""
    return re.sub(r"[^a-z]", "", answer.lower()) == CHECK_EXPECTED


def _finish_text(reason: str | None, max_tokens: int) -> str:
    if reason == "length":
        return f"length  (cut off at --max-tokens {max_tokens})"
    return f"{reason}  (the model ended its reply)" if reason == "stop" else str(reason)


def register(subparsers: Any) -> None:
    """Add the ``llm`` command group to the main CLI's subparsers."""
    llm = subparsers.add_parser("llm", help="LLM providers and the response cache")
    sub = llm.add_subparsers(dest="llm_command", required=True)

    p = sub.add_parser("check", help="one tiny call to a model: latency, tokens, the answer")
    p.add_argument(
        "spec",
        help="local, local:/path/model.gguf, openai:gpt-4o, openai:MODEL@URL, anthropic:..., gemini:...",
    )
    p.add_argument("--base-url", help="an OpenAI/Anthropic/Gemini-compatible endpoint")
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per attempt")
    p.add_argument("--retries", type=int, default=1, help="transport retries")
    p.set_defaults(func=cmd_check)

    cache = sub.add_parser("cache", help="the shared response cache")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    p = cache_sub.add_parser("stats", help="entries, size and models in the cache")
    p.add_argument("--cache-dir", help="default: $MESA_DILEMMAS_CACHE_DIR or the user cache dir")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_cache_stats)
    p = cache_sub.add_parser("clear", help="delete cached responses")
    p.add_argument("--cache-dir", help="default: $MESA_DILEMMAS_CACHE_DIR or the user cache dir")
    p.add_argument("--model", help="only this provider:model (as shown by 'cache stats')")
    p.set_defaults(func=cmd_cache_clear)


def _settings(args: argparse.Namespace) -> LLMSettings:
    table: dict[str, Any] = {"cache": False}
    if getattr(args, "cache_dir", None):
        table["cache_dir"] = args.cache_dir
    return LLMSettings.from_table(table)


def cmd_check(args: argparse.Namespace) -> int:
    from mesa_dilemmas.llm.client import get_client

    spec_text = args.spec
    if args.base_url:
        spec_text = f"{spec_text}@{args.base_url}"
    from mesa_dilemmas.llm.backends.openai_models import is_reasoning_model

    table: dict[str, Any] = {
        "cache": False,
        "timeout_s": args.timeout,
        "max_retries": args.retries,
        "max_tokens": args.max_tokens,
    }
    if not is_reasoning_model(spec_text.partition(":")[2].partition("@")[0]):
        table["temperature"] = 0.0  # reasoning models take no temperature
    settings = LLMSettings.from_table(table)
    try:
        spec = resolve(spec_text, settings)
        if spec.provider == "replay":
            raise LLMConfigError("llm check: a replay spec makes no calls; name a provider")
        check_spec(spec, settings)
        client = get_client(spec, settings)
        request = ChatRequest(
            messages=(Message("user", CHECK_PROMPT),),
            temperature=0.0,
            max_tokens=args.max_tokens,
            seed=0,
        )
        probe = getattr(client.backend, "native_mode", None)
        mode = asyncio.run(probe()) if probe is not None else "native"
        start = time.perf_counter()
        response = asyncio.run(client.call_uncached(request))
        latency = time.perf_counter() - start
    except LLMConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ProviderRejected as exc:  # what would stop a run: key, permission, model, endpoint
        print(f"{spec_text}: FAILED: {redact(str(exc))}", file=sys.stderr)
        return 3
    except CallFailed as exc:
        print(f"{spec_text}: FAILED: {redact(str(exc))}", file=sys.stderr)
        return 1
    answer = (response.refusal or response.text).strip()
    as_asked = answered_as_asked(answer)
    prompt_tokens, window = client.backend.context_info(request)
    if prompt_tokens is None:
        prompt_tokens = response.tokens_in or None
    status = "ok" if as_asked else "reachable, but the answer is not the expected 'OK'"
    print(f"{spec.label}  {status}")
    print(f"  latency   {latency:.3f} s")
    print(f"  tokens    {response.tokens_in} in, {response.tokens_out} out")
    print(f"  finish    {_finish_text(response.finish_reason, args.max_tokens)}")
    print(f"  native    {mode}  (structured output the endpoint accepts)")
    print(f"  answer    {answer!r}")
    print(f"  expected  {'yes' if as_asked else 'no'}  ({CHECK_PROMPT!r})")
    print(
        f"  context   window {window if window else 'not known'} tokens; the check prompt is "
        f"{prompt_tokens if prompt_tokens is not None else 'an unknown number of'} tokens"
    )
    return 0


def _when(stamp: float | None) -> str:
    return (
        "-" if stamp is None else datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC")
    )


def cmd_cache_stats(args: argparse.Namespace) -> int:
    cache = ResponseCache.at(_settings(args).resolved_cache_dir())
    stats = cache.stats()
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    print(f"cache     {stats['path']}")
    print(f"entries   {stats['entries']}")
    print(f"size      {stats['bytes'] / 1e6:.2f} MB")
    if stats["entries"]:
        print(f"oldest    {_when(stats['oldest'])}")
        print(f"newest    {_when(stats['newest'])}")
        width = max(len(k) for k in stats["by_model"])
        for label, n in stats["by_model"].items():
            print(f"  {label:<{width}}  {n}")
    return 0


def cmd_cache_clear(args: argparse.Namespace) -> int:
    directory = _settings(args).resolved_cache_dir()
    if not Path(directory).exists():
        print(f"nothing to clear: {directory} does not exist")
        return 0
    n = ResponseCache.at(directory).clear(args.model)
    what = f" of {args.model}" if args.model else ""
    print(f"deleted {n} cached responses{what} from {directory}")
    return 0
