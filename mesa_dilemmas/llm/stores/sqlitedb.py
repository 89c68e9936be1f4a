"""A small SQLite wrapper that is safe across threads, forked workers and concurrent runs.

Why SQLite: the cache and the run record must survive SIGKILL (every write is
committed at once), be shared by Mesa's batch worker processes and by several
runs at once, and need no server.  WAL mode lets readers run beside the one
writer; ``busy_timeout`` makes writers queue instead of failing.  A connection
is never carried across ``fork``: each process opens its own on first use.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _use_wal(conn: sqlite3.Connection, wait_s: float = 60.0) -> None:
    """Put the file in WAL mode (once per file: the mode persists).  Several processes opening a
    new file at once can get "database is locked" from the switch itself, which SQLite does not
    always retry through the busy timeout: try again until ``wait_s`` has passed."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class SQLiteFile:
    """One database file; ``schema`` is run once per process connection."""

    def __init__(self, path: Path, schema: str) -> None:
        self.path = Path(path)
        self.schema = schema
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA busy_timeout = 60000")
            _use_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(self.schema)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _fork_safe_lock(self) -> threading.RLock:
        # a lock inherited through fork may be held by a thread that does not exist here
        if self._pid != os.getpid() and self._conn is not None:
            self._lock = threading.RLock()
            self._conn = None
        return self._lock

    def execute(
        self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        with self._fork_safe_lock():
            return self._connection().execute(sql, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An IMMEDIATE transaction: takes the write lock up front, so read-check-write is atomic
        across processes (the budget reservation relies on this)."""
        with self._fork_safe_lock():
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["schema"])  # type: ignore[misc]
