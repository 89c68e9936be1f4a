"""``mesa-dilemmas analyse norms RUN_DIR``: the statistics of an LLM-societies or ablation run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "norms",
        help="ANOVA / Tukey HSD (letters) / Welch ablation tests and the group-norm table of a fishery run",
    )
    p.add_argument("run_dir", help="a finished run directory of a fishery scenario")
    p.add_argument("--out", help="where to write the tables (default RUN_DIR/analysis)")
    p.add_argument(
        "--every", type=int, default=10, help="steps between rows of the group-norm table"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mesa_dilemmas.dilemmas.fishery.llm_societies import analyse, write
    from mesa_dilemmas.viz.figures import load_run

    run_dir = Path(args.run_dir)
    scenario, runs, steps = load_run(run_dir)
    analysis = analyse(runs, steps, scenario.params, every=args.every)
    paths = write(analysis, Path(args.out) if args.out else run_dir / "analysis")
    print((paths[0]).read_text())
    for path in paths:
        print(path)
    return 0
