"""The Stag Hunt's own command, registered by entry point (``mesa_dilemmas.commands``):
``mesa-dilemmas stag-hunt RUN_DIR`` prints the catch rate by threshold of a finished run.

This module is imported to list ``mesa-dilemmas --help``: what the command needs is imported
when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_stag_hunt(args: argparse.Namespace) -> int:
    import pandas as pd

    from mesa_dilemmas.scenarios.config import ConfigError

    runs_file = Path(args.run_dir) / "runs.parquet"
    if not runs_file.is_file():
        raise ConfigError(f"{args.run_dir}: not a finished run directory (no runs.parquet)")
    runs = pd.read_parquet(runs_file)
    if not {"threshold", "caught", "steps_run"} <= set(runs.columns):
        raise ConfigError(f"{args.run_dir}: not a Stag Hunt run")
    rate = (runs["caught"] / runs["steps_run"].clip(lower=1)).groupby(runs["threshold"]).mean()
    print("threshold  catch rate")
    for k, v in rate.items():
        print(f"{k:>9}  {v:.2f}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stag-hunt", help="the Stag Hunt example: catch rate by threshold of a run")
    p.add_argument("run_dir", help="a finished run of a stag_hunt scenario")
    p.set_defaults(func=cmd_stag_hunt)
