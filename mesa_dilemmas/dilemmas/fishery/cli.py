"""``mesa-dilemmas analyse norms RUN_DIR``: the statistics of an LLM-societies or ablation run
(over every run, and, when any decision fell back, again over the runs without fallbacks in
``analysis/without_fallbacks``).  ``mesa-dilemmas analyse stated RUN_DIR``: say vs do, each
villager's proposed cap against its own effort in the next round
(:mod:`mesa_dilemmas.dilemmas.fishery.stated`)."""

from __future__ import annotations

import argparse
import sys
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
    s = subparsers.add_parser(
        "stated",
        help="say vs do in a fishery run: proposed harvest caps against the proposer's own "
        "effort next round (kept / broken / unparsed, keep rate with Wilson CI by seat kind)",
    )
    s.add_argument("run_dir", help="a finished run directory of a fishery scenario")
    s.add_argument("--out", help="where to write the tables (default RUN_DIR/analysis)")
    s.set_defaults(func=run_stated)


def run_stated(args: argparse.Namespace) -> int:
    from mesa_dilemmas.dilemmas import say_do
    from mesa_dilemmas.dilemmas.fishery import stated

    return say_do.command(args, stated)


def run(args: argparse.Namespace) -> int:
    from mesa_dilemmas.analysis.fallbacks import fallback_note, without_fallbacks
    from mesa_dilemmas.dilemmas.fishery.llm_societies import analyse, write
    from mesa_dilemmas.viz.figures import load_run

    run_dir = Path(args.run_dir)
    scenario, runs, steps = load_run(run_dir)
    if not has_llm_villagers(scenario.params, runs):
        print(
            f"error: {run_dir} has no LLM villagers (llm_agents = 0 and no llm group in "
            "players): `analyse norms` compares LLM societies; run a scenario with LLM "
            "villagers, e.g. fishery/llm_societies",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out) if args.out else run_dir / "analysis"
    analysis = analyse(runs, steps, scenario.params, every=args.every)
    paths = write(analysis, out)
    print((paths[0]).read_text())
    for path in paths:
        print(path)
    kept = without_fallbacks(runs)
    print(f"fallbacks: {fallback_note(runs)}")
    if kept is not None:  # the same statistics over the runs no fallback decision touched
        print("\n== over the runs without fallback decisions")
        kept_steps = steps[steps["RunId"].isin(kept["RunId"])] if steps is not None else None
        again = analyse(kept, kept_steps, scenario.params, every=args.every)
        paths = write(again, out / "without_fallbacks")
        print((paths[0]).read_text())
        for path in paths:
            print(path)
    return 0


def has_llm_villagers(params: dict[str, Any], runs: Any) -> bool:
    """Whether any run of the scenario seats an LLM villager (``llm_agents`` > 0, or an
    ``llm`` group in ``players``), from the scenario's parameters and each run's own."""
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

    keys = ("llm_agents", "players", "llm")
    rows = runs.to_dict("records") if runs is not None and len(runs) else [{}]
    for row in rows:
        merged = {**params, **{k: row[k] for k in keys if k in row and _given(row[k])}}
        try:
            population = FisheryModel.population_from_params(merged)
        except (ValueError, TypeError):
            return True  # not ours to judge: let the analysis say what it finds
        if any(group.llm for group in population.groups):
            return True
    return False


def _given(value: Any) -> bool:
    try:
        import pandas as pd

        return not bool(pd.isna(value))
    except (TypeError, ValueError):
        return True
