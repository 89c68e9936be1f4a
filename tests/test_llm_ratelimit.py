"""Rate limits are per key, not per process: every process on the machine that calls one
endpoint with one key takes from the same request/token buckets (a SQLite file beside the
response cache)."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

from mesa_dilemmas.llm.accounting.ratelimit import RATE_FILE, SharedRate


def _take(directory: str, identity: str, n: int, out: mp.Queue) -> None:
    rate = SharedRate(Path(directory), identity, requests_per_minute=60, tokens_per_minute=None)
    out.put(sum(rate.acquire(0) == 0 for _ in range(n)))


def test_processes_share_one_bucket_per_key(tmp_path):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_take, args=(str(tmp_path), "openai@x#sk-1", 50, out)) for _ in range(2)
    ]
    start = time.time()
    for p in procs:
        p.start()
    granted = sum(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    refill = (time.time() - start) * 60 / 60.0  # one request a second comes back
    assert 60 <= granted <= 60 + refill + 1, granted  # not 2 x 50: one budget for both
    # another key has its own bucket; the key itself is not stored
    other = SharedRate(tmp_path, "openai@x#sk-2", requests_per_minute=60, tokens_per_minute=None)
    assert other.acquire(0) == 0
    assert b"sk-1" not in (tmp_path / RATE_FILE).read_bytes()


def test_tokens_are_taken_and_settled(tmp_path):
    rate = SharedRate(tmp_path, "k", requests_per_minute=None, tokens_per_minute=600)
    assert rate.acquire(500) == 0
    wait = rate.acquire(500)  # 100 left, 10 a second come back
    assert 35 <= wait <= 41
    rate.settle(-400)  # the call used 400 fewer than estimated: refunded
    assert rate.acquire(500) == 0
