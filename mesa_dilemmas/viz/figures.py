"""Render a finished run's figures: the scenario names them, ``mesa-dilemmas figures DIR`` draws them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from mesa_dilemmas.scenarios.config import ConfigError, Scenario, resolve_figure  # noqa: E402
from mesa_dilemmas.viz.saving import figure_format  # noqa: E402


def load_run(run_dir: Path) -> tuple[Scenario, pd.DataFrame, pd.DataFrame]:
    config = run_dir / "config.toml"
    if not config.exists():
        raise ConfigError(f"{run_dir}: not a run directory (no config.toml)")
    scenario = Scenario.model_validate(tomllib.loads(config.read_text()))
    runs = pd.read_parquet(run_dir / "runs.parquet")
    steps_file = run_dir / "steps.parquet"
    steps = pd.read_parquet(steps_file) if steps_file.exists() else pd.DataFrame()
    return scenario, runs, steps


def render_figures(run_dir: Path, fmt: str = "png") -> list[Path]:
    """Every figure the run's scenario names, written as ``fmt`` (png, svg or pdf)."""
    scenario, runs, steps = load_run(run_dir)
    if not scenario.figures:
        raise ConfigError(f"{scenario.name}: the scenario names no figures")
    paths: list[Path] = []
    with figure_format(fmt):
        for name in scenario.figures:
            paths.extend(resolve_figure(name)(run_dir, runs, steps, scenario))
    return paths
