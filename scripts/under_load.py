"""Run a command while every core is kept busy: the test suite on a loaded machine.

    python scripts/under_load.py -- python -m pytest -q
    python scripts/under_load.py --workers 4 -- python -m pytest -q tests/test_dashboard_browser.py

Starts ``--workers`` busy-looping processes (default: one per core) at normal priority, runs
the command, stops the load and exits with the command's status.  Prints the load average at
the start and the end, so a report can say how loaded the machine was.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import time


def _spin() -> None:  # pragma: no cover - runs in the load processes
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2147483648


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    ctx = mp.get_context("spawn")
    load = [ctx.Process(target=_spin, daemon=True) for _ in range(args.workers)]
    for p in load:
        p.start()
    started = time.perf_counter()
    print(f"under_load: {args.workers} busy processes; load average {os.getloadavg()}", flush=True)
    try:
        status = subprocess.call(command)
    finally:
        end_load = os.getloadavg()
        for p in load:
            p.terminate()
        for p in load:
            p.join()
    print(
        f"under_load: exit {status} after {time.perf_counter() - started:.0f} s; "
        f"load average at the end {end_load}",
        flush=True,
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
