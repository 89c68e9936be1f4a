"""Writing files so that a kill never leaves a truncated one.

Every output of a run is written to a temporary name beside its final one,
flushed to disk and renamed into place (``os.replace`` is atomic on POSIX and
Windows): a process killed mid-write leaves the old file or the new one, and at
worst a stray ``.<name>.<pid>.tmp`` that nothing reads.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; renamed into place on success.

    On an exception the temporary file is removed and ``path`` is untouched."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def to_parquet_atomic(frame: Any, path: Path) -> None:
    """``frame.to_parquet(path, index=False)``, atomically (``frame``: a pandas DataFrame)."""
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def out_dir_problem(name: str | Path) -> str | None:
    """Why ``name`` cannot be a run's output directory (None: it can), checked before anything
    is written: an empty name, an existing file, a parent that is a file or not writable."""
    if isinstance(name, str) and not name.strip():
        return "an empty name is not a directory"
    out = Path(name)
    if out.exists() and not out.is_dir():
        return "exists and is not a directory"
    for parent in out.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is not a directory"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"cannot write in {parent} (permission denied)"
            break
    return None


def out_dir_unusable(name: str | Path) -> str | None:
    """:func:`out_dir_problem`, and then whether a directory can really be made where ``name``
    would go (``/proc``, a read-only mount say no although ``os.access`` says yes)."""
    if problem := out_dir_problem(name):
        return problem
    out = Path(name).absolute()
    for folder in (out, *out.parents):
        if folder.is_dir():
            return _probe(folder)
    return None


def _probe(folder: Path) -> str | None:
    """Whether a directory can really be made in ``folder`` (``/proc``, a read-only mount, a
    full disk say no although ``os.access`` says yes): one is made and removed."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".probe-", dir=folder))
    except OSError as exc:
        return f"cannot create a directory in {folder} ({exc.strerror or exc})"
    return None


def save_task_output(folder: Path, index: int, key: str, output: dict[str, Any]) -> None:
    """Keep one finished task's output (numpy arrays and JSON-like values) for ``--resume``.

    ``key`` names the task (its fingerprint): :func:`load_task_output` returns the output only
    for the same key, so a changed scenario never reuses an old result."""
    import json

    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    arrays = {k: v for k, v in output.items() if isinstance(v, np.ndarray)}
    rest = {k: v for k, v in output.items() if k not in arrays}
    with atomic_path(folder / f"{index:06d}.npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    meta = {"key": key, "rest": rest, "arrays": sorted(arrays)}
    write_text_atomic(folder / f"{index:06d}.json", json.dumps(meta))


def load_task_output(folder: Path, index: int, key: str) -> dict[str, Any] | None:
    """A task output saved by :func:`save_task_output` under the same ``key``, or None."""
    import json

    import numpy as np

    try:
        meta = json.loads((folder / f"{index:06d}.json").read_text())
        if meta.get("key") != key:
            return None
        with np.load(folder / f"{index:06d}.npz", allow_pickle=False) as data:
            arrays = {k: data[k] for k in meta["arrays"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {**meta["rest"], **arrays}
