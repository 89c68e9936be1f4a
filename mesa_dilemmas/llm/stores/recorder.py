"""The run record: every call and every decision outcome, written as it happens.

``<run dir>/llm_calls.sqlite`` gets one committed row per call (request,
response, tokens, latency, cost, agent, round, decision, where the answer came
from) the moment the call returns, so a SIGKILL loses nothing already
answered.  Worker processes of one run append to the same file.  At the end of
the run the session exports it to ``llm_calls.parquet`` and summarises it.

The file also holds the run's budget counters (shared by all workers) and the
segment number: a ``--resume`` starts a new segment of the same run, and its
lookups find the answers of earlier segments here even if the shared cache
was cleared.
"""

from __future__ import annotations

import json
import os
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from mesa_dilemmas.llm.request import CallContext, ChatResponse
from mesa_dilemmas.llm.stores.sqlitedb import SQLiteFile
from mesa_dilemmas.redaction import redact

FILENAME = "llm_calls.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL, segment INTEGER, pid INTEGER,
    key TEXT, label TEXT, policy TEXT, source TEXT,
    run_seed TEXT, agent_id INTEGER, round INTEGER, step INTEGER, kind TEXT,
    counter INTEGER, attempt INTEGER,
    tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, cost_usd REAL,
    finish_reason TEXT, error TEXT, request TEXT, response TEXT,
    status TEXT, http_status INTEGER, retried INTEGER, mode TEXT,
    snapshot TEXT, fingerprint TEXT, params TEXT, cached_tokens INTEGER,
    cache_write_tokens INTEGER, reasoning_tokens INTEGER, batch_id TEXT, reasoning INTEGER,
    variant INTEGER
);
CREATE INDEX IF NOT EXISTS calls_key ON calls(key);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL, segment INTEGER, pid INTEGER, policy TEXT,
    run_seed TEXT, agent_id INTEGER, round INTEGER, step INTEGER, kind TEXT, counter INTEGER,
    retries INTEGER, parse_failures INTEGER, fell_back INTEGER, call_errors INTEGER,
    error TEXT, value TEXT, fallback TEXT, reasoning INTEGER, variant INTEGER
);
CREATE TABLE IF NOT EXISTS budget (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    calls INTEGER NOT NULL, tokens INTEGER NOT NULL, cost REAL NOT NULL,
    in_flight INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO budget (id, calls, tokens, cost, in_flight) VALUES (1, 0, 0, 0.0, 0);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY, label TEXT, created REAL, status TEXT, keys TEXT
);
"""

#: columns describing each attempt: status ("ok" | "error"), the HTTP status of a failed one,
#: whether another attempt followed it (retried), the structured-output mode used
#: and what exactly was sent and answered: the dated model snapshot the provider named, its
#: system fingerprint, the parameters as sent (after any SDK filtering), prompt-cache reads and
#: writes, reasoning tokens, the batch job that carried the call, and whether the prompt asked
#: for reasoning before the answer (1/0; null when the caller did not say), and the prompt
#: variant its prompt was rendered in (null when the caller did not say)
ATTEMPT_COLUMNS = (
    ("status", "TEXT"),
    ("http_status", "INTEGER"),
    ("retried", "INTEGER"),
    ("mode", "TEXT"),
    ("snapshot", "TEXT"),
    ("fingerprint", "TEXT"),
    ("params", "TEXT"),
    ("cached_tokens", "INTEGER"),
    ("cache_write_tokens", "INTEGER"),
    ("reasoning_tokens", "INTEGER"),
    ("batch_id", "TEXT"),
    ("reasoning", "INTEGER"),
    ("variant", "INTEGER"),
)

#: the prompt variant (``[llm] prompt_variant``) of the call being made: the LLM policy sets it
#: around its calls, the run's recording writes it with every call row (``variant``; null for
#: calls made outside a policy, e.g. a strategy-writing pipeline)
PROMPT_VARIANT: ContextVar[int | None] = ContextVar("prompt_variant", default=None)

#: sources of an answer: a paid provider call, the shared cache, an earlier segment of this run
SOURCES = ("provider", "cache", "run", "replay")

_OPEN: dict[Path, RunRecorder] = {}


class RunRecorder:
    """Appends calls and decisions of one run; also the store behind the run's budget."""

    def __init__(self, run_dir: Path, segment: int = 1) -> None:
        self.run_dir = Path(run_dir)
        self.segment = segment
        self.db = SQLiteFile(self.run_dir / FILENAME, SCHEMA)
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(calls)")}
        for name, kind in ATTEMPT_COLUMNS:  # a record written before these columns existed
            if name not in columns:
                self.db.execute(f"ALTER TABLE calls ADD COLUMN {name} {kind}")
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(decisions)")}
        for name, kind in (("fallback", "TEXT"), ("reasoning", "INTEGER"), ("variant", "INTEGER")):
            if name not in columns:
                self.db.execute(f"ALTER TABLE decisions ADD COLUMN {name} {kind}")

    @classmethod
    def at(cls, run_dir: Path, segment: int = 1) -> RunRecorder:
        run_dir = Path(run_dir).resolve()
        rec = _OPEN.get(run_dir)
        if rec is None or rec.segment != segment:
            rec = _OPEN[run_dir] = cls(run_dir, segment)
        return rec

    # -- segments ------------------------------------------------------------
    def next_segment(self) -> int:
        """Start a new segment (called once per run start / resume, by the parent)."""
        with self.db.transaction() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'segment'").fetchone()
            segment = int(row[0]) + 1 if row else 1
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('segment', ?)", (str(segment),)
            )
        self.segment = segment
        return segment

    # -- writing -------------------------------------------------------------
    def record_call(
        self,
        ctx: CallContext,
        *,
        key: str,
        label: str,
        source: str,
        request: dict[str, Any],
        response: ChatResponse | None,
        latency_s: float,
        cost_usd: float | None,
        error: str | None = None,
        http_status: int | None = None,
        retried: bool = False,
        mode: str | None = None,
        params: dict[str, Any] | None = None,
        batch_id: str | None = None,
        variant: int | None = None,
    ) -> None:
        """One attempt: a paid call (``source="provider"``, failed ones included, each
        transport retry its own row with ``retried=1``) or an answer found again.
        ``params``: the parameters as sent, when the response does not carry them;
        ``variant``: the prompt variant (default: :data:`PROMPT_VARIANT`'s current value)."""
        if variant is None:
            variant = PROMPT_VARIANT.get()
        extra = (response.extra or {}) if response else {}
        sent = extra.get("sent", params)
        self.db.execute(
            "INSERT INTO calls (ts, segment, pid, key, label, policy, source, run_seed, agent_id,"
            " round, step, kind, counter, attempt, tokens_in, tokens_out, latency_s, cost_usd,"
            " finish_reason, error, request, response, status, http_status, retried, mode,"
            " snapshot, fingerprint, params, cached_tokens, cache_write_tokens,"
            " reasoning_tokens, batch_id, reasoning, variant)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                time.time(),
                self.segment,
                os.getpid(),
                key,
                label,
                ctx.policy,
                source,
                ctx.run_seed,
                ctx.agent_id,
                ctx.round,
                ctx.step,
                ctx.kind,
                ctx.counter,
                ctx.attempt,
                response.tokens_in if response else 0,
                response.tokens_out if response else 0,
                latency_s,
                cost_usd,
                response.finish_reason if response else None,
                redact(error),
                redact(json.dumps(request)),
                redact(json.dumps(response.to_json())) if response else None,
                "error" if error else "ok",
                http_status,
                int(retried),
                mode,
                response.model if response else None,
                extra.get("system_fingerprint"),
                redact(json.dumps(sent)) if sent is not None else None,
                int(extra.get("cached_tokens") or 0),
                int(extra.get("cache_write_tokens") or 0),
                int(extra.get("reasoning_tokens") or 0),
                batch_id,
                None if ctx.reasoning is None else int(ctx.reasoning),
                variant,
            ),
        )

    def record_decision(
        self,
        ctx: CallContext,
        *,
        retries: int,
        parse_failures: int,
        fell_back: bool,
        call_errors: int,
        error: str | None,
        value: Any,
        fallback: str | None = None,
        variant: int | None = None,
    ) -> None:
        """One decision; ``fallback`` names why it is the rule's fallback answer
        (``refusal`` / ``truncated`` / ``invalid``), ``None`` when the model answered;
        ``variant``: its prompt variant (default: :data:`PROMPT_VARIANT`'s current value)."""
        if fell_back and fallback is None:
            fallback = "invalid"
        if variant is None:
            variant = PROMPT_VARIANT.get()
        self.db.execute(
            "INSERT INTO decisions (ts, segment, pid, policy, run_seed, agent_id, round, step, kind,"
            " counter, retries, parse_failures, fell_back, call_errors, error, value, fallback,"
            " reasoning, variant)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                time.time(),
                self.segment,
                os.getpid(),
                ctx.policy,
                ctx.run_seed,
                ctx.agent_id,
                ctx.round,
                ctx.step,
                ctx.kind,
                ctx.counter,
                retries,
                parse_failures,
                int(fell_back),
                call_errors,
                redact(error),
                redact(json.dumps(value, default=str)),
                fallback,
                None if ctx.reasoning is None else int(ctx.reasoning),
                variant,
            ),
        )

    # -- batch jobs: recorded as soon as they exist, so a killed run polls them again ------
    def record_batch(self, batch_id: str, label: str, keys: list[str]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO batches (batch_id, label, created, status, keys)"
            " VALUES (?, ?, ?, 'pending', ?)",
            (batch_id, label, time.time(), json.dumps(keys)),
        )

    def finish_batch(self, batch_id: str) -> None:
        """Mark a job read once every call it carried is in the record (a run killed while
        its results were being recorded polls it again, and pays nothing for that)."""
        rows = self.db.execute("SELECT keys FROM batches WHERE batch_id = ?", (batch_id,))
        if not rows:
            return
        keys = json.loads(rows[0][0])
        done = self.db.execute(
            f"SELECT COUNT(DISTINCT key) FROM calls WHERE response IS NOT NULL AND key IN"
            f" ({','.join('?' * len(keys))})",
            tuple(keys),
        )[0][0]
        if done >= len(set(keys)):
            self.db.execute("UPDATE batches SET status = 'done' WHERE batch_id = ?", (batch_id,))

    def pending_batches(self, label: str) -> dict[str, list[str]]:
        """batch id -> the call keys it carries, for the batches of ``label`` not yet read."""
        rows = self.db.execute(
            "SELECT batch_id, keys FROM batches WHERE label = ? AND status = 'pending'", (label,)
        )
        return {r[0]: json.loads(r[1]) for r in rows}

    # -- reading -------------------------------------------------------------
    def lookup(self, key: str) -> ChatResponse | None:
        """A response already obtained for this key by this run (any segment)."""
        rows = self.db.execute(
            "SELECT response FROM calls WHERE key = ? AND response IS NOT NULL AND error IS NULL"
            " ORDER BY id LIMIT 1",
            (key,),
        )
        return ChatResponse.from_json(json.loads(rows[0][0])) if rows else None

    def close(self) -> None:
        self.db.close()
