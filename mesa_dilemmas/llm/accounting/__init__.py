"""Accounting: prices per model, cost per call, and the run summary; the budgets (``budget``),
per-provider throttling (``ratelimit``) and the Ray run's gate of both (``cluster``) beside it.

Prices are data (``prices.toml`` beside this module, overridable per scenario
in ``[llm.prices]``).  The summary is computed from the run record, so it is
the same whether the run used one process or many, and whether it was resumed.

What the numbers mean: ``tokens_in``, ``tokens_out`` and ``cost_usd`` are what
the run paid for, over all its segments (a resumed run includes the calls made
before it was killed).  ``calls``, ``cache_hits`` and the decision counters
(parse failures, retries, fallbacks, call errors) describe the latest, complete
execution.  ``attempts`` counts every paid attempt -- a call retried after a 429,
a 5xx, a timeout or a garbled body is several attempts, ``retried_attempts`` of
them followed by another, ``failed_attempts`` failed (``errors_by_status`` by HTTP
status, ``none`` without one); ``failed_calls`` are calls whose every attempt failed.
"""

from __future__ import annotations

import json
import statistics
import tomllib
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from mesa_dilemmas.files import to_parquet_atomic
from mesa_dilemmas.llm.settings import PriceEntry
from mesa_dilemmas.llm.stores.recorder import RunRecorder
from mesa_dilemmas.redaction import redact_frame


@cache
def _prices_file() -> dict[str, Any]:
    return tomllib.loads(
        (resources.files("mesa_dilemmas.llm.accounting") / "prices.toml").read_text()
    )


@cache
def _file_prices() -> dict[str, dict[str, PriceEntry]]:
    return {
        prov: {m: PriceEntry(**p) for m, p in models.items()}
        for prov, models in _prices_file().items()
        if isinstance(models, dict)
    }


def bundled_prices() -> dict[str, dict[str, PriceEntry]]:
    """provider -> model prefix -> price, from ``prices.toml`` and the records of providers
    that bring their own prices (:attr:`~.providers.Provider.prices`; the file wins)."""
    from mesa_dilemmas.llm.providers import extra_prices

    tables = dict(_file_prices())
    for prov, models in extra_prices().items():
        tables[prov] = {**{m: PriceEntry(**p) for m, p in models.items()}, **tables.get(prov, {})}
    return tables


def prices_checked() -> str:
    """The date the bundled price table was last checked against the providers' pages."""
    return str(_prices_file().get("checked", "unknown"))


class PriceTable:
    """Looks up the price of ``provider:model``: overrides first, then the longest prefix."""

    def __init__(self, overrides: dict[str, PriceEntry] | None = None) -> None:
        self.overrides = dict(overrides or {})

    def price(self, label: str) -> PriceEntry | None:
        if label in self.overrides:
            return self.overrides[label]
        provider, _, model = label.partition(":")
        candidates: dict[str, PriceEntry] = {}
        for key, entry in self.overrides.items():
            prov, sep, prefix = key.partition(":")
            if sep and prov == provider:
                candidates[prefix] = entry
        table = {**bundled_prices().get(provider, {}), **candidates}
        best = max((p for p in table if model.startswith(p)), key=len, default=None)
        return None if best is None else table[best]

    def cost(
        self,
        label: str,
        tokens_in: int,
        tokens_out: int,
        cached_in: int = 0,
        cache_write: int = 0,
        batch: bool = False,
    ) -> float | None:
        """USD for one call.  ``tokens_in`` counts every input token, ``cached_in`` of them
        read from the provider's prompt cache and ``cache_write`` written to it; ``batch``:
        the Batch API's prices (half the list price where the table gives none)."""
        entry = self.price(label)
        if entry is None:
            return None
        return price_tokens(entry, tokens_in, tokens_out, cached_in, cache_write, batch)


def price_tokens(
    entry: PriceEntry,
    tokens_in: float,
    tokens_out: float,
    cached_in: float = 0,
    cache_write: float = 0,
    batch: bool = False,
) -> float:
    """USD of these token counts at ``entry``'s prices (see :meth:`PriceTable.cost`)."""
    rate_in, rate_out = entry.input, entry.output
    cached_rate = entry.cached_input if entry.cached_input is not None else entry.input
    write_rate = entry.cache_write if entry.cache_write is not None else entry.input
    if batch:
        rate_in = entry.batch_input if entry.batch_input is not None else entry.input / 2
        rate_out = entry.batch_output if entry.batch_output is not None else entry.output / 2
        # batch discounts stack with caching where both apply (at the batch ratio)
        ratio = rate_in / entry.input if entry.input else 0.0
        cached_rate, write_rate = cached_rate * ratio, write_rate * ratio
    plain = max(0.0, tokens_in - cached_in - cache_write)
    return (
        plain * rate_in + cached_in * cached_rate + cache_write * write_rate + tokens_out * rate_out
    ) / 1e6


def _latency(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {
        "mean": round(statistics.fmean(ordered), 4),
        "p50": round(statistics.median(ordered), 4),
        "p95": round(p95, 4),
        "max": round(ordered[-1], 4),
    }


def _empty_group() -> dict[str, Any]:
    return {
        "calls": 0,
        "provider_calls": 0,
        "cache_hits": 0,
        "failed_calls": 0,
        "attempts": 0,
        "failed_attempts": 0,
        "retried_attempts": 0,
        "errors_by_status": {},
        "modes": {},
        "tokens_in": 0,
        "tokens_out": 0,
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "snapshots": {},
        "cost_usd": 0.0,
        "latencies": [],
        "decisions": 0,
        "parse_failures": 0,
        "retries": 0,
        "fallbacks": 0,
        "fallbacks_by_kind": {},
        "call_errors": 0,
        "reasoning": {},
    }


def _finish(group: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in group.items() if k != "latencies"}
    out["cost_usd"] = round(out["cost_usd"], 6)
    out["latency_s"] = _latency(group["latencies"])
    return out


def model_label(policy: str | None) -> str:
    """``provider:model`` of a policy name (``llm:openai:gpt-4o``, ``llm:replay:openai:x``)."""
    text = policy or "unknown"
    for prefix in ("llm:replay:", "llm:"):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def fallback_rates(summary: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per model of an ``llm`` summary: (fallbacks, decisions)."""
    return {
        label: (int(group.get("fallbacks", 0)), int(group.get("decisions", 0)))
        for label, group in summary.get("by_model", {}).items()
        if group.get("decisions")
    }


def summarize(recorder: RunRecorder, budget: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``"llm"`` entry of ``summary.json`` for one run."""
    segment = recorder.segment
    calls = recorder.db.execute(
        "SELECT segment, source, label, kind, agent_id, tokens_in, tokens_out, latency_s,"
        " cost_usd, error, retried, http_status, mode, cached_tokens, cache_write_tokens,"
        " snapshot FROM calls"
    )
    decisions = recorder.db.execute(
        "SELECT kind, agent_id, retries, parse_failures, fell_back, call_errors, policy, fallback,"
        " reasoning FROM decisions WHERE segment = ?",
        (segment,),
    )
    total = _empty_group()
    groups: dict[str, dict[str, dict[str, Any]]] = {"by_model": {}, "by_kind": {}, "by_agent": {}}
    unpriced = 0
    for row in calls:
        (
            seg,
            source,
            label,
            kind,
            agent_id,
            tin,
            tout,
            latency,
            cost,
            error,
            retried,
            status,
            mode,
            cached,
            written,
            snapshot,
        ) = row
        agent = "narrator" if agent_id is None else str(agent_id)
        targets = [total] + [
            groups[name].setdefault(key, _empty_group())
            for name, key in (("by_model", label), ("by_kind", kind), ("by_agent", agent))
        ]
        for g in targets:
            if source == "provider":  # every attempt, a failed one retried included
                g["attempts"] += 1
                if mode:  # the structured-output mode the attempt was sent in
                    g["modes"][mode] = g["modes"].get(mode, 0) + 1
                g["tokens_in"] += tin or 0
                g["tokens_out"] += tout or 0
                g["cached_tokens"] += cached or 0
                g["cache_write_tokens"] += written or 0
                if snapshot:
                    g["snapshots"][snapshot] = g["snapshots"].get(snapshot, 0) + 1
                g["cost_usd"] += cost or 0.0
                if error:
                    g["failed_attempts"] += 1
                    code = "none" if status is None else str(status)
                    g["errors_by_status"][code] = g["errors_by_status"].get(code, 0) + 1
                elif latency is not None:
                    g["latencies"].append(latency)
                if retried:
                    g["retried_attempts"] += 1
                    continue  # the call goes on with its next attempt
                g["provider_calls"] += 1
                if error:
                    g["failed_calls"] += 1
            if seg == segment:
                g["calls"] += 1
                if source != "provider":
                    g["cache_hits"] += 1
        if source == "provider" and not error and cost is None:
            unpriced += 1
    for row in decisions:
        kind, agent_id, retries, failures, fell_back, call_errors, policy, why, reasons = row
        agent = "narrator" if agent_id is None else str(agent_id)
        for g in (
            total,
            groups["by_model"].setdefault(model_label(policy), _empty_group()),
            groups["by_kind"].setdefault(kind, _empty_group()),
            groups["by_agent"].setdefault(agent, _empty_group()),
        ):
            g["decisions"] += 1
            g["retries"] += retries
            g["parse_failures"] += failures
            g["fallbacks"] += fell_back
            if fell_back:
                why = why or "invalid"
                g["fallbacks_by_kind"][why] = g["fallbacks_by_kind"].get(why, 0) + 1
            g["call_errors"] += call_errors
            if reasons is not None:  # decisions asked for reasoning first (on) or not (off)
                which = "on" if reasons else "off"
                g["reasoning"][which] = g["reasoning"].get(which, 0) + 1
    summary = _finish(total)
    summary["unpriced_calls"] = unpriced
    for name, table in groups.items():
        summary[name] = {k: _finish(v) for k, v in sorted(table.items())}
    summary["segments"] = segment
    summary["resumed"] = segment > 1
    if budget is not None:
        summary["budget"] = budget
    return summary


CALL_COLUMNS = (
    "id",
    "ts",
    "segment",
    "pid",
    "key",
    "label",
    "policy",
    "source",
    "run_seed",
    "agent_id",
    "round",
    "step",
    "kind",
    "counter",
    "attempt",
    "tokens_in",
    "tokens_out",
    "latency_s",
    "cost_usd",
    "finish_reason",
    "error",
    "request",
    "response",
    "status",
    "http_status",
    "retried",
    "mode",
    "snapshot",
    "fingerprint",
    "params",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "batch_id",
    "reasoning",
    "variant",
)
DECISION_COLUMNS = (
    "id",
    "ts",
    "segment",
    "pid",
    "policy",
    "run_seed",
    "agent_id",
    "round",
    "step",
    "kind",
    "counter",
    "retries",
    "parse_failures",
    "fell_back",
    "call_errors",
    "error",
    "value",
    "fallback",
    "reasoning",
    "variant",
)


def export_parquet(recorder: RunRecorder, out_dir: Path) -> list[str]:
    """Write ``llm_calls.parquet`` and ``llm_decisions.parquet``; returns the file names."""
    import pandas as pd

    written = []
    for table, columns in (("calls", CALL_COLUMNS), ("decisions", DECISION_COLUMNS)):
        rows = recorder.db.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY id")
        frame = pd.DataFrame(rows, columns=list(columns))
        name = f"llm_{table}.parquet"
        to_parquet_atomic(redact_frame(frame), Path(out_dir) / name)  # answers come from outside
        written.append(name)
    return written


def load_calls(run_dir: Path) -> Iterable[dict[str, Any]]:
    """The recorded calls of a run directory as dicts (request/response decoded)."""
    rec = RunRecorder(Path(run_dir))
    for row in rec.db.execute(f"SELECT {', '.join(CALL_COLUMNS)} FROM calls ORDER BY id"):
        item = dict(zip(CALL_COLUMNS, row, strict=True))
        for k in ("request", "response", "params"):
            item[k] = json.loads(item[k]) if item[k] else None
        yield item
    rec.close()
