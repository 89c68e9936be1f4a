"""The one way tests run the command line: ``cli(...)`` in a child process (what a user runs),
``cli_in_process([...])`` through ``main()`` when a test needs the exit code and stderr fast."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cli(
    *args: str,
    cwd: Path | None = None,
    cache: Path | None = None,
    columns: int | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    """``mesa-dilemmas ARGS`` in a child process: its exit code, stdout and stderr as text.

    The child gets this checkout on its path, no inherited LLM run of the parent, and, when
    given, its own LLM cache folder (``cache``) and terminal width (``columns``)."""
    child = child_env(cache)
    if columns is not None:
        child["COLUMNS"] = str(columns)
    child.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "mesa_dilemmas", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=child,
        timeout=timeout,
    )


def child_env(cache: Path | None = None) -> dict[str, str]:
    """The environment of a child ``mesa-dilemmas`` (for tests that start it themselves)."""
    child = dict(os.environ)  # a run is never handed down through the environment
    child["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), child.get("PYTHONPATH")]))
    if cache is not None:
        child["MESA_DILEMMAS_CACHE_DIR"] = str(cache)
    return child


def cli_in_process(args: list[str]) -> tuple[int, str]:
    """``main(args)`` in this process: the exit code and what went to stderr."""
    from mesa_dilemmas.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    return code, err.getvalue()
