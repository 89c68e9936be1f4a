"""The shared response cache: content-addressed, on disk, safe under concurrent runs.

The key (:func:`mesa_dilemmas.llm.request.call_key`) hashes provider:model, the
full request and the sample id, so a re-run of the same replication finds
every answer here while another replication (another run seed) draws fresh
samples.  Only successful responses are stored (a refusal is a response; a
timeout is not).  One SQLite file under the cache directory; ``mesa-dilemmas
llm cache stats|clear`` inspects and empties it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mesa_dilemmas.llm.request import ChatResponse
from mesa_dilemmas.llm.sqlitedb import SQLiteFile

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_label ON responses(label);
"""

FILENAME = "cache.sqlite"

_OPEN: dict[Path, ResponseCache] = {}


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

    def get(self, key: str) -> ChatResponse | None:
        rows = self.db.execute("SELECT response FROM responses WHERE key = ?", (key,))
        return ChatResponse.from_json(json.loads(rows[0][0])) if rows else None

    def put(self, key: str, label: str, request: dict[str, Any], response: ChatResponse) -> None:
        self.db.execute(
            "INSERT OR IGNORE INTO responses (key, label, request, response, created) VALUES (?, ?, ?, ?, ?)",
            (key, label, json.dumps(request), json.dumps(response.to_json()), time.time()),
        )

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
