"""What an LLM run will cost, before it runs: calls, tokens, dollars and wall time.

The estimate is built from the real prompts.  A *dry run* (``[llm] dry_run = true``) plays
the first rounds of the scenario with every LLM seat answered by a random legal answer
(no provider, no network, no key): each decision's prompt is rendered exactly as the run
would send it and recorded with its token count (source ``dry``).  :func:`tally` reads that
record; the scenario side (``mesa_dilemmas.scenarios.size``) scales the rounds it played
to the scenario's rounds, replications and grid cells, and :func:`format_table` prints it.

Counted, not guessed: calls, input tokens (the rendered messages and schema, ~4 characters
a token plus each message's chat-template overhead), the shared prefix a provider can serve
from its prompt cache (the part of a prompt identical to an earlier prompt's, from
``CACHE_MIN_TOKENS`` tokens on).  Assumed: the reply length (``output_tokens``: a short JSON
answer in native mode without reasoning, else ``TAGS_OUTPUT_SHARE`` of ``max_tokens``) and
no corrective re-asks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mesa_dilemmas.llm.accounting import PriceTable, price_tokens, prices_checked
from mesa_dilemmas.llm.providers import provider
from mesa_dilemmas.llm.request import CallContext, ChatRequest, ChatResponse
from mesa_dilemmas.llm.settings import LLMSettings

#: characters per token of English prompt text (OpenAI's rule of thumb; SmolLM2's tokenizer
#: gives 3.9-4.3 on this project's prompts)
CHARS_PER_TOKEN = 4.0
#: tokens a chat template adds around each message (role markers), and per request
PER_MESSAGE_TOKENS = 4
PER_REQUEST_TOKENS = 3
#: providers serve a repeated prefix from their prompt cache only from this length on
#: (OpenAI 1,024 tokens in steps of 128; Anthropic 1,024-2,048; Gemini 1,024-2,048)
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128
#: tags mode: the reasoning before the tagged answer, as a share of max_tokens (assumed)
TAGS_OUTPUT_SHARE = 0.5
#: a call's duration when nothing else is known (seconds; remote providers' typical latency)
DEFAULT_LATENCY_S = 2.0
#: paid runs estimated above this many dollars ask for confirmation (``--yes`` skips)
CONFIRM_USD = 5.0


def count_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def request_tokens(request: ChatRequest, schema_read: bool = True) -> int:
    """The input tokens of a request as a provider would count them (approximately).
    ``schema_read``: the provider reads the request's answer schema as input (a provider's own
    API); a self-hosted server or the embedded model turns it into a grammar instead, and the
    model reads it in the instructions' text (:func:`mesa_dilemmas.llm.specs.schema_in_text`),
    where the messages already count it."""
    schema = json.dumps(request.schema) if request.schema is not None and schema_read else ""
    body = sum(count_tokens(m.content) for m in request.messages) + count_tokens(schema)
    return body + PER_MESSAGE_TOKENS * len(request.messages) + PER_REQUEST_TOKENS


def assumed_output(
    settings: LLMSettings, mode: str, answer: Any, request: ChatRequest | None = None
) -> int:
    """The reply's tokens: the JSON answer (native), with half its reasoning field when the
    request's schema asks for one; in tags mode the prose before the tagged answer.  Capped at
    the request's token limit (``max_tokens`` unless the decision's longest answer needs more)."""
    answer_text = json.dumps({"answer": answer}, default=str)
    limit = request.max_tokens if request is not None else settings.max_tokens
    if mode == "native":
        schema = (request.schema if request is not None else None) or {}
        field = (schema.get("properties") or {}).get("reasoning")
        reasoning = int(field.get("maxLength", settings.reasoning_max_chars)) // 2 if field else 0
        return min(limit, count_tokens(answer_text) + count_tokens("x" * reasoning))
    return min(limit, int(limit * TAGS_OUTPUT_SHARE))


def dry_response(
    request: ChatRequest,
    settings: LLMSettings,
    mode: str,
    value: Any,
    schema_read: bool = True,
) -> ChatResponse:
    """The stand-in reply of a dry run: the value drawn, and the token counts
    (``schema_read``: :func:`request_tokens`)."""
    text = json.dumps({"answer": value}, default=str)
    return ChatResponse(
        text=text if mode == "native" else f"<answer>{value}</answer>",
        tokens_in=request_tokens(request, schema_read),
        tokens_out=assumed_output(settings, mode, value, request),
        finish_reason="stop",
        model="dry-run",
        extra={"prefix": request.system},
    )


@dataclass
class Tally:
    """What a dry run's calls of one model add up to."""

    label: str
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    #: input tokens a prompt cache could serve (repeated prefix >= CACHE_MIN_TOKENS)
    cached_in: int = 0
    #: input tokens identical to an earlier prompt's beginning, whatever their length, read in
    #: the order the model's provider reads a request (:func:`schema_first`)
    shared_in: int = 0
    #: the same with the schema read first / last whatever the provider (how the share depends
    #: on where a provider puts the schema)
    shared_schema_first: int = 0
    shared_schema_last: int = 0
    #: calls asked at once (same round, step and decision): how wide a phase is
    widths: list[int] = field(default_factory=list)
    rounds: int = 0

    def scaled(self, factor: float) -> Tally:
        return Tally(
            self.label,
            round(self.calls * factor),
            round(self.tokens_in * factor),
            round(self.tokens_out * factor),
            round(self.cached_in * factor),
            round(self.shared_in * factor),
            round(self.shared_schema_first * factor),
            round(self.shared_schema_last * factor),
            list(self.widths),
            self.rounds,
        )

    def add(self, other: Tally) -> None:
        self.calls += other.calls
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.cached_in += other.cached_in
        self.shared_in += other.shared_in
        self.shared_schema_first += other.shared_schema_first
        self.shared_schema_last += other.shared_schema_last
        self.widths += other.widths


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search on the prefix length (string slices compare in C)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def schema_first(label: str) -> bool:
    """Whether the provider of ``label`` (``provider:model``) reads the schema first."""
    record = provider(label.partition(":")[0])
    return record is not None and record.schema_first


def prompt_text(request: dict[str, Any], schema_first: bool = False) -> str:
    """A recorded request as one string in the order a provider reads it: the messages, with
    the answer schema before them (``schema_first``) or after them."""
    parts = [m["content"] for m in request["messages"]]
    if request.get("schema") is not None:
        parts.insert(0 if schema_first else len(parts), json.dumps(request["schema"]))
    return "\n".join(parts)


def tally(calls: Iterable[dict[str, Any]], recent: int = 64) -> dict[str, Tally]:
    """Per ``provider:model``: the dry run's calls, tokens and shareable prefixes.

    A call's shared prefix is its longest common beginning with one of the model's last
    ``recent`` distinct prompts (a provider's cache holds recent prefixes)."""
    out: dict[str, Tally] = {}
    history: dict[tuple[str, bool], list[str]] = {}
    groups: dict[tuple[str, Any, Any, Any, Any], int] = {}
    rounds: dict[str, set[tuple[Any, Any]]] = {}
    for call in calls:
        if call["source"] not in ("dry", "provider") or call.get("error"):
            continue
        label = call["label"]
        t = out.setdefault(label, Tally(label))
        tokens_in = int(call["tokens_in"] or 0)
        t.calls += 1
        t.tokens_in += tokens_in
        t.tokens_out += int(call["tokens_out"] or 0)
        for first in (True, False):
            text = prompt_text(call["request"], schema_first=first)
            seen = history.setdefault((label, first), [])
            best = max((_common_prefix(text, old) for old in seen), default=0)
            shared = min(tokens_in, count_tokens(text[:best]))
            if first:
                t.shared_schema_first += shared
            else:
                t.shared_schema_last += shared
            if first == schema_first(label):
                t.shared_in += shared
                if shared >= CACHE_MIN_TOKENS:
                    t.cached_in += shared - shared % CACHE_STEP_TOKENS
            if text not in seen:
                seen.append(text)
                del seen[:-recent]
        key = (label, call["run_seed"], call["round"], call["step"], call["kind"])
        groups[key] = groups.get(key, 0) + 1
        rounds.setdefault(label, set()).add((call["run_seed"], call["round"]))
    for (label, *_), width in groups.items():
        out[label].widths.append(width)
    for label, played in rounds.items():
        out[label].rounds = len(played)
    return out


@dataclass
class Row:
    label: str
    tally: Tally
    list_usd: float | None
    cached_usd: float | None
    batch_usd: float | None
    seconds: float


def price_rows(
    tallies: dict[str, Tally],
    settings: LLMSettings,
    processes: int = 1,
    latency_s: dict[str, float] | None = None,
) -> list[Row]:
    """Dollars (list, with prompt caching, batch) and wall time per model."""
    prices = PriceTable(settings.prices)
    rows = []
    for label, t in sorted(tallies.items()):
        entry = prices.price(label)
        list_usd = cached_usd = batch_usd = None
        if entry is not None:
            list_usd = price_tokens(entry, t.tokens_in, t.tokens_out)
            cached_usd = price_tokens(entry, t.tokens_in, t.tokens_out, t.cached_in)
            batch_usd = price_tokens(entry, t.tokens_in, t.tokens_out, t.cached_in, batch=True)
        rows.append(
            Row(
                label,
                t,
                list_usd,
                cached_usd,
                batch_usd,
                wall_seconds(t, settings, processes, (latency_s or {}).get(label)),
            )
        )
    return rows


def wall_seconds(
    t: Tally, settings: LLMSettings, processes: int = 1, latency_s: float | None = None
) -> float:
    """The run's LLM time: calls go out a phase at a time (as wide as the phase, at most
    ``max_concurrency``), and never faster than the requests/tokens per minute allow."""
    provider = t.label.partition(":")[0]
    ps = settings.provider(provider)
    latency = latency_s if latency_s is not None else DEFAULT_LATENCY_S
    width = sum(t.widths) / len(t.widths) if t.widths else 1.0
    concurrency = 1 if provider == "local" else (ps.max_concurrency or 16)
    parallel = max(1.0, min(width, concurrency)) * (1 if provider == "local" else processes)
    seconds = t.calls * latency / parallel
    if ps.requests_per_minute:
        seconds = max(seconds, 60.0 * t.calls / ps.requests_per_minute)
    if ps.tokens_per_minute:
        seconds = max(seconds, 60.0 * (t.tokens_in + t.tokens_out) / ps.tokens_per_minute)
    return seconds


def _usd(x: float | None) -> str:
    return "unpriced" if x is None else f"${x:,.2f}"


def _time(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_table(rows: list[Row], sampled: str = "") -> str:
    """The estimate as a table (one line per model), with the price table's date."""
    head = ("model", "calls", "input", "cached", "output", "list", "cached $", "batch", "wall time")
    body = [
        (
            r.label,
            f"{r.tally.calls:,}",
            f"{r.tally.tokens_in:,}",
            f"{r.tally.cached_in:,}",
            f"{r.tally.tokens_out:,}",
            _usd(r.list_usd),
            _usd(r.cached_usd),
            _usd(r.batch_usd),
            _time(r.seconds),
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    lines = [
        "  ".join(
            f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in (head, *body)
    ]
    total = sum(r.list_usd or 0.0 for r in rows)
    lines.append(
        f"total about {_usd(total)} at list prices (prices.toml checked {prices_checked()}; "
        "tokens counted from the real prompts, replies assumed"
        + (f"; {sampled}" if sampled else "")
        + ")"
    )
    return "\n".join(lines)


def priced_dry(play: Callable[[LLMSettings], Any], settings: LLMSettings, what: str) -> str:
    """What ``play`` would cost: it runs once with ``dry_run`` settings in a session of its own
    (every prompt rendered and counted as it would be sent, answered at random from its spec;
    no provider, no network, no key, nothing cached or stored), and the calls it made are priced
    as a run's are (:func:`tally`, :func:`price_rows`).  ``what`` names the design in the table's
    last line.  For instruments (persona checks, comprehension), whose calls are known in full,
    nothing is scaled."""
    import tempfile
    from pathlib import Path

    from mesa_dilemmas.llm import session
    from mesa_dilemmas.llm.accounting import load_calls

    dry = settings.model_copy(update={"dry_run": True, "cache": False})
    with session.use(None), tempfile.TemporaryDirectory(prefix="mesa-dilemmas-estimate-") as tmp:
        run = session.start_run(dry, Path(tmp))
        try:
            play(dry)
        finally:
            session.finish_run(run)
            calls = list(load_calls(Path(tmp)))
    return format_table(price_rows(tally(calls), settings), f"{what}, every call rendered dry")


def dry_call(
    spec: Any, settings: LLMSettings, ctx: CallContext, request: ChatRequest, mode: str, value: Any
) -> Any:
    """A dry run's call (``dry_run``): the reply a model of ``spec`` would give with ``value``,
    recorded with the request's token count (source ``dry``) in the current run; no provider,
    no network.  The LLM policy and the instruments that ask on their own use it alike."""
    from mesa_dilemmas.llm import session
    from mesa_dilemmas.llm.request import call_key
    from mesa_dilemmas.llm.specs import schema_in_text

    response = dry_response(request, settings, mode, value, schema_read=not schema_in_text(spec))
    run = session.current()
    if run is not None:
        run.recorder.record_call(
            ctx,
            key=call_key(spec.label, request, ctx.sample_id),
            label=spec.label,
            source="dry",
            request=request.to_json(),
            response=response,
            latency_s=0.0,
            cost_usd=0.0,
            mode=mode,
            variant=settings.prompt_variant,
        )
    return response
