"""The run directory: config.toml, runs.parquet, steps.parquet, summary.json, manifest.json."""

from __future__ import annotations

import contextlib
import json
import math
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import tomli_w

from mesa_dilemmas.dilemmas.metrics import mean_sem
from mesa_dilemmas.scenarios.experiment import Results

PACKAGES = ("mesa-dilemmas", "mesa", "numpy", "pandas", "pyarrow", "pydantic", "scipy", "matplotlib")


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


def write_config(out_dir: Path, resolved: dict[str, Any]) -> None:
    (out_dir / "config.toml").write_text(tomli_w.dumps(_drop_none(resolved)))


def summarise(results: Results) -> dict[str, Any]:
    """Mean, standard error and count of every metric, per group of grid values and overall."""
    runs = results.runs

    def block(frame: pd.DataFrame) -> dict[str, Any]:
        out = {}
        for metric in results.metrics:
            values = pd.to_numeric(frame[metric], errors="coerce").astype(float)
            mean, sem = mean_sem(values.to_numpy())
            out[metric] = {"mean": _jsonable(mean), "sem": _jsonable(sem), "n": int(values.notna().sum())}
        return out

    groups = []
    if results.group_by:
        for key, frame in runs.groupby(results.group_by, sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            params = {k: _jsonable(v) for k, v in zip(results.group_by, key, strict=True)}
            groups.append({"params": params, "n_runs": len(frame), "metrics": block(frame)})
    return {"n_runs": len(runs), "overall": block(runs), "groups": groups, **results.summary}


def write_results(out_dir: Path, results: Results) -> dict[str, Any]:
    results.runs.to_parquet(out_dir / "runs.parquet", index=False)
    steps = results.steps if results.steps is not None else pd.DataFrame({"RunId": [], "Step": []})
    steps.to_parquet(out_dir / "steps.parquet", index=False)
    if results.agents is not None:
        results.agents.to_parquet(out_dir / "agents.parquet", index=False)
    summary = summarise(results)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=_jsonable) + "\n")
    return summary


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in PACKAGES:
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, default=_jsonable) + "\n")
