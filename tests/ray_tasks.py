"""Module-level task functions for the Ray tests (Ray workers import them by name)."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def square(x: int) -> int:
    return x * x


def die_once(task: tuple[int, str]) -> int:
    """Kill this worker process the first time task 0 runs (a marker file remembers it)."""
    x, marker = task
    if x == 0 and not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def die_always(task: tuple[int, str]) -> int:
    x, marker = task
    if x == 3:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x
