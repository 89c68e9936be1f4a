"""The run directory: config.toml, runs.parquet, steps.parquet, summary.json, manifest.json.

``summary.json`` is computed from the runs alone (a row per run); the tables that grow with
every step may have been streamed to disk by the experiment (``Results.streamed``).

Every file is written atomically (:mod:`mesa_dilemmas.files`): a process killed
mid-write leaves either the old file or the new one, never a truncated one.
"""

from __future__ import annotations

import contextlib
import json
import math
import platform
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import tomli_w

from mesa_dilemmas.dilemmas.metrics import mean_sem
from mesa_dilemmas.files import to_parquet_atomic, write_text_atomic
from mesa_dilemmas.redaction import redact_frame, redact_value
from mesa_dilemmas.scenarios.experiment import Results

PACKAGES = (
    "mesa-dilemmas",
    "mesa",
    "numpy",
    "pandas",
    "pyarrow",
    "pydantic",
    "scipy",
    "matplotlib",
)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _drop_none(value: Any) -> Any:
    """TOML has no null: drop None entries."""
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value


def config_text(resolved: dict[str, Any]) -> str:
    return tomli_w.dumps(_drop_none(resolved))


def write_config(out_dir: Path, resolved: dict[str, Any]) -> None:
    write_text_atomic(out_dir / "config.toml", config_text(resolved))


#: settings that cannot change a run's results: a resume may change them
RESUME_MAY_CHANGE = (
    "processes",
    "description",
    "notes",
    "figures",
    "llm.budget",
    "llm.timeout_s",
    "llm.max_retries",
    "llm.cache_dir",
)
_PROVIDER_MAY_CHANGE = (
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "timeout_s",
    "max_retries",
)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out or {prefix: {}}
    return {prefix: value}


def _may_change(key: str) -> bool:
    if any(key == k or key.startswith(f"{k}.") for k in RESUME_MAY_CHANGE):
        return True
    parts = key.split(".")
    return (
        len(parts) == 4 and parts[:2] == ["llm", "providers"] and parts[3] in _PROVIDER_MAY_CHANGE
    )


def config_differences(saved_path: Path, resolved: dict[str, Any]) -> list[str]:
    """The fields (dotted) where ``resolved`` differs from the saved ``config.toml``,
    leaving out those that cannot change results (:data:`RESUME_MAY_CHANGE`)."""
    try:
        saved = tomllib.loads(saved_path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return [f"config.toml (unreadable: {exc})"]
    new = tomllib.loads(config_text(resolved))  # the same round trip the saved file went through
    old_flat, new_flat = _flatten(saved), _flatten(new)
    keys = sorted(set(old_flat) | set(new_flat))
    return [k for k in keys if not _may_change(k) and old_flat.get(k) != new_flat.get(k)]


def summarise(results: Results) -> dict[str, Any]:
    """Mean, standard error and count of every metric, per group of grid values and overall."""
    runs = results.runs

    def block(frame: pd.DataFrame) -> dict[str, Any]:
        out = {}
        for metric in results.metrics:
            values = pd.to_numeric(frame[metric], errors="coerce").astype(float)
            mean, sem = mean_sem(values.to_numpy())
            out[metric] = {
                "mean": _jsonable(mean),
                "sem": _jsonable(sem),
                "n": int(values.notna().sum()),
            }
        return out

    groups = []
    if results.group_by:
        for key, frame in runs.groupby(results.group_by, sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            params = {k: _jsonable(v) for k, v in zip(results.group_by, key, strict=True)}
            groups.append({"params": params, "n_runs": len(frame), "metrics": block(frame)})
    return {"n_runs": len(runs), "overall": block(runs), "groups": groups, **results.summary}


def write_results(out_dir: Path, results: Results) -> dict[str, Any]:
    to_parquet_atomic(redact_frame(results.runs), out_dir / "runs.parquet")
    if "steps" not in results.streamed:  # a streamed table is in place already
        steps = results.steps
        if steps is None:
            steps = pd.DataFrame({"RunId": [], "Step": []})
        to_parquet_atomic(redact_frame(steps), out_dir / "steps.parquet")
    if results.agents is not None and "agents" not in results.streamed:
        to_parquet_atomic(redact_frame(results.agents), out_dir / "agents.parquet")
    summary = summarise(results)
    write_text_atomic(
        out_dir / "summary.json",
        json.dumps(redact_value(summary), indent=2, default=_jsonable) + "\n",
    )
    return summary


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in PACKAGES:
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    """``manifest.json``; an experiment's ``engine`` entry of ``summary.json`` (which engine ran
    the models, and why) is repeated in it."""
    summary_path = out_dir / "summary.json"
    if "engine" not in manifest and summary_path.is_file():
        with contextlib.suppress(ValueError, OSError):
            engine = json.loads(summary_path.read_text()).get("engine")
            if engine is not None:
                manifest = {**manifest, "engine": engine}
    write_text_atomic(
        out_dir / "manifest.json", json.dumps(manifest, indent=2, default=_jsonable) + "\n"
    )
