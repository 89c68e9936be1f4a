"""A stable hash of a run's state after every round: ``state_hashes.parquet``.

The state of round ``t`` is what the run recorded at step ``t``: every model reporter of the
``steps`` row and every agent reporter of the ``agents`` rows (when the game has agent
reporters).  The keys (``RunId``, ``iteration``, ``seed``, ``Step``) and the parameters are not
state; neither are timing columns.  Numbers are hashed as float64 rounded to 30 bits of mantissa
(about nine significant digits: a game's vectorised engine and its Mesa model agree to 1e-12,
not bit for bit), so an integer column that became a float column in a table of several
chunks hashes the same; text is hashed as text, and a missing value is one value.

A branch (:mod:`mesa_dilemmas.scenarios.branch`) replays a recorded run up to a round and
compares its hashes with the recorded ones round by round: the replayed history is the
recorded one, or the branch stops.  The hashes are computed from the tables after the run,
so a run's numbers are the same with or without them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from mesa_dilemmas.files import to_parquet_atomic

FILENAME = "state_hashes.parquet"
KEYS = ("RunId", "iteration", "seed", "Step")
#: columns whose values measure time, not state (as ``scripts/scenario_fingerprints.py``)
TIMING = ("seconds", "wall", "elapsed", "latency", "duration", "_time_s", "timestamp")
_MISSING_TEXT = "\x00<missing>"


def _is_timing(name: str) -> bool:
    return any(part in name.lower() for part in TIMING)


def _numeric(col: pd.Series) -> np.ndarray | None:
    """The column as float64 (bools and integers included), or None for text."""
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype="float64", na_value=np.nan)
    values = pd.to_numeric(col, errors="coerce")
    if (
        bool((values.isna() == col.isna()).all())
        and not col.map(lambda v: isinstance(v, str)).any()
    ):
        return values.to_numpy(dtype="float64", na_value=np.nan)
    return None


def _column_hash(col: pd.Series) -> np.ndarray:
    numbers = _numeric(col)
    if numbers is None:
        text = col.map(lambda v: _MISSING_TEXT if v is None or v is pd.NA or v != v else str(v))
        return pd.util.hash_array(text.to_numpy(dtype=object))
    mantissa, exponent = np.frexp(numbers + 0.0)  # + 0.0: -0.0 is 0.0
    rounded = np.ldexp(np.round(mantissa * 2.0**30), exponent).astype("float64")
    rounded[np.isnan(numbers)] = np.nan  # one missing value
    return pd.util.hash_array(rounded)


def row_hashes(frame: pd.DataFrame, skip: Iterable[str] = ()) -> np.ndarray:
    """One uint64 per row over the frame's state columns (sorted by name)."""
    skipped = set(skip) | set(KEYS)
    columns = sorted(c for c in frame.columns if c not in skipped and not _is_timing(c))
    out = np.zeros(len(frame), dtype="uint64")
    for i, name in enumerate(columns):
        h = _column_hash(frame[name].reset_index(drop=True))
        name_salt = np.uint64(int(pd.util.hash_array(np.array([name], dtype=object))[0]))
        with np.errstate(over="ignore"):
            out = out * np.uint64(1_000_003) + (h ^ name_salt) + np.uint64(i)
    return out


def state_hashes(
    steps: pd.DataFrame, agents: pd.DataFrame | None = None, skip: Iterable[str] = ()
) -> pd.DataFrame:
    """``RunId``, ``Step``, ``state_hash`` (16 hex digits) for every row of ``steps``."""
    skip = set(skip)
    base = steps[["RunId", "Step"]].astype("int64").reset_index(drop=True)
    combined = row_hashes(steps, skip)
    if agents is not None and len(agents):
        keys = agents[["RunId", "Step"]].to_numpy(dtype="int64")
        hashes = row_hashes(agents, skip - {"AgentID"})  # each row names its agent
        order = np.lexsort((keys[:, 1], keys[:, 0]))
        keys, hashes = keys[order], hashes[order]
        starts = np.flatnonzero(np.r_[True, (np.diff(keys, axis=0) != 0).any(axis=1)])
        with np.errstate(over="ignore"):  # a sum: independent of the agents' row order
            sums = np.add.reduceat(hashes, starts)
        counts = np.diff(np.r_[starts, len(hashes)]).astype("uint64")
        found = {
            (int(r), int(t)): (s, n)
            for (r, t), s, n in zip(keys[starts], sums, counts, strict=True)
        }
        none = (np.uint64(0), np.uint64(0))
        pairs = [found.get((int(r), int(t)), none) for r, t in base.to_numpy()]
        agent_sum = np.array([p[0] for p in pairs], dtype="uint64")
        agent_n = np.array([p[1] for p in pairs], dtype="uint64")
        with np.errstate(over="ignore"):
            combined = combined * np.uint64(31) + agent_sum + agent_n
    base["state_hash"] = [f"{int(h):016x}" for h in combined]
    return base


def from_run_dir(run_dir: Path, skip: Iterable[str] = ()) -> pd.DataFrame | None:
    """The state hashes of a run directory's tables (None: it has no per-step table)."""
    steps_path = run_dir / "steps.parquet"
    if not steps_path.is_file():
        return None
    steps = pd.read_parquet(steps_path)
    if not {"RunId", "Step"} <= set(steps.columns) or steps.empty:
        return None
    agents_path = run_dir / "agents.parquet"
    agents = pd.read_parquet(agents_path) if agents_path.is_file() else None
    return state_hashes(steps, agents, skip)


def write(run_dir: Path, skip: Iterable[str] = ()) -> Path | None:
    """Write ``state_hashes.parquet`` beside the run's tables (None: nothing to hash)."""
    hashes = from_run_dir(run_dir, skip)
    if hashes is None:
        return None
    path = run_dir / FILENAME
    to_parquet_atomic(hashes, path)
    return path


def read(run_dir: Path) -> pd.DataFrame | None:
    path = run_dir / FILENAME
    return pd.read_parquet(path) if path.is_file() else None
