"""The shared response cache: content-addressed, on disk, safe under concurrent runs.

The key (:func:`mesa_dilemmas.llm.request.call_key`) hashes provider:model, the
full request and the sample id, so a re-run of the same replication finds
every answer here while another replication (another run seed) draws fresh
samples.  Only successful responses are stored (a refusal is a response; a
timeout is not).  A call being made is visible to other processes (``in_flight``):
one that needs the same answer waits for it (bounded) instead of paying for it
again.  One SQLite file under the cache directory; ``mesa-dilemmas
llm cache stats|clear`` inspects and empties it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from mesa_dilemmas.llm.request import ChatResponse
from mesa_dilemmas.llm.stores.sqlitedb import SQLiteFile
from mesa_dilemmas.redaction import redact

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_label ON responses(label);
CREATE TABLE IF NOT EXISTS snapshots (
    label TEXT PRIMARY KEY,
    snapshot TEXT NOT NULL,
    seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS in_flight (
    key TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    started REAL NOT NULL
);
"""

FILENAME = "cache.sqlite"

_OPEN: dict[Path, ResponseCache] = {}


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (the cache is a local file)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


class ResponseCache:
    """Responses by call key."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.db = SQLiteFile(self.directory / FILENAME, SCHEMA)

    @classmethod
    def at(cls, directory: Path) -> ResponseCache:
        """The process-wide cache object of a directory (one connection per process)."""
        directory = Path(directory).expanduser().resolve()
        if directory not in _OPEN:
            _OPEN[directory] = cls(directory)
        return _OPEN[directory]

    def get(self, key: str, label: str | None = None) -> ChatResponse | None:
        """The cached response of ``key``; with ``label``, only if it came from the model
        snapshot the provider last named for that label (an alias such as ``gpt-4o`` that
        now resolves to a newer dated snapshot does not re-use the older one's answers:
        the resolved snapshot is part of what a cached answer is keyed by)."""
        rows = self.db.execute("SELECT response FROM responses WHERE key = ?", (key,))
        if not rows:
            return None
        hit = ChatResponse.from_json(json.loads(rows[0][0]))
        if label is not None and hit.model:
            latest = self.snapshot(label)
            if latest is not None and latest != hit.model:
                return None
        return hit

    def snapshot(self, label: str) -> str | None:
        """The dated model snapshot the provider last answered ``label`` with."""
        rows = self.db.execute("SELECT snapshot FROM snapshots WHERE label = ?", (label,))
        return rows[0][0] if rows else None

    def put(self, key: str, label: str, request: dict[str, Any], response: ChatResponse) -> None:
        if response.model:
            self.db.execute(
                "INSERT OR REPLACE INTO snapshots (label, snapshot, seen) VALUES (?, ?, ?)",
                (label, response.model, time.time()),
            )
        self.db.execute(
            # the first answer stays, unless it came from another model snapshot
            "INSERT INTO responses (key, label, request, response, created)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
            " response = excluded.response, created = excluded.created"
            " WHERE json_extract(responses.response, '$.model')"
            " IS NOT json_extract(excluded.response, '$.model')",
            (
                key,
                label,
                redact(json.dumps(request)),
                redact(json.dumps(response.to_json())),
                time.time(),
            ),
        )

    # -- calls in flight: a second process waits for the first instead of paying twice -----
    def claim(self, key: str, stale_after: float) -> bool:
        """Mark ``key`` as being called by this process; False if another process already is
        (a claim older than ``stale_after`` seconds is taken over: its owner died)."""
        now = time.time()
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT pid, started FROM in_flight WHERE key = ?", (key,)
            ).fetchone()
            if (
                row is not None
                and row[0] != os.getpid()
                and now - row[1] < stale_after
                and _alive(row[0])
            ):
                return False
            conn.execute(
                "INSERT OR REPLACE INTO in_flight (key, pid, started) VALUES (?, ?, ?)",
                (key, os.getpid(), now),
            )
        return True

    def release(self, key: str) -> None:
        self.db.execute("DELETE FROM in_flight WHERE key = ? AND pid = ?", (key, os.getpid()))

    def claimed(self, key: str) -> bool:
        """Whether a live process is calling for ``key`` (a killed one's claim does not count)."""
        rows = self.db.execute("SELECT pid FROM in_flight WHERE key = ?", (key,))
        return bool(rows) and _alive(rows[0][0])

    async def wait_for(self, key: str, timeout: float, poll_s: float = 0.05) -> ChatResponse | None:
        """The response another process is fetching for ``key``: returned once it is cached;
        None when that process gave up (its claim is gone) or after ``timeout`` seconds."""
        import asyncio

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hit = self.get(key)
            if hit is not None:
                return hit
            if not self.claimed(key):
                return self.get(key)
            await asyncio.sleep(poll_s)
        return None

    def stats(self) -> dict[str, Any]:
        """Entries, bytes on disk and entries per provider:model."""
        if not self.db.path.exists():
            return {"path": str(self.db.path), "entries": 0, "bytes": 0, "by_model": {}}
        rows = self.db.execute(
            "SELECT label, COUNT(*), MIN(created), MAX(created) FROM responses GROUP BY label ORDER BY label"
        )
        size = sum(p.stat().st_size for p in self.directory.glob(FILENAME + "*") if p.is_file())
        return {
            "path": str(self.db.path),
            "entries": sum(r[1] for r in rows),
            "bytes": size,
            "by_model": {r[0]: r[1] for r in rows},
            "oldest": min((r[2] for r in rows), default=None),
            "newest": max((r[3] for r in rows), default=None),
        }

    def clear(self, label: str | None = None) -> int:
        """Delete every entry (or those of one provider:model); returns how many."""
        if not self.db.path.exists():
            return 0
        if label is None:
            n = self.db.execute("SELECT COUNT(*) FROM responses")[0][0]
            self.db.execute("DELETE FROM responses")
        else:
            n = self.db.execute("SELECT COUNT(*) FROM responses WHERE label = ?", (label,))[0][0]
            self.db.execute("DELETE FROM responses WHERE label = ?", (label,))
        self.db.execute("VACUUM")
        return int(n)
