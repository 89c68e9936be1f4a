"""``mesa-dilemmas analyse port_of_mars RUN_DIR``: paper 001's tables and figures from a run.

Writes to ``RUN_DIR/analysis`` (or ``--out``) the tables of
:mod:`mesa_dilemmas.dilemmas.port_of_mars.tables` as CSV and the figures of
:mod:`mesa_dilemmas.dilemmas.port_of_mars.paper_figures` (``--format png|svg|pdf``):

``by_label.csv``, ``fig2_by_label``
    Table 1 / Fig. 2 panels per grid cell and persona label: points in surviving games, % dirty
    (pooled: purchase phases with a harmful accomplishment taken / with one in hand), coins to
    port health (game, per round), win rate, offers by kind (fair / generous / selfish) and the
    rejection rate of offers received; each with its standard error (``*_sem``).
``groups.csv``, ``fig6_groups``
    Fig. 6 per grid cell: survival, mean points, mean Gini of points, coins to port health.
    With ``--with OTHER_RUN_DIR`` (e.g. the -30..60 SVO set beside the -15..60 one) Fig. 6
    shows the cells of every run, and ``groups_compared.csv`` holds them.
``meeting_tests.csv``, ``fig3_meeting`` (a grid over ``meeting``)
    Fig. 3: per label, the two-sided Mann-Whitney U test (scipy) of per-player coins to port
    health and per-player % dirty with the meeting against without it.
``leadership.csv``, ``fig4_survival_by_leader``, ``fig5_winners_by_leader`` (a grid over ``leadership``)
    Figs. 4-5: per variant and leader label, survival and the share of runs each label won.

``mesa-dilemmas analyse pledges RUN_DIR``: say vs do, each meeting pledge of coins to port
health against what the player then put in (:mod:`mesa_dilemmas.dilemmas.port_of_mars.pledges`).

Only the figures the run's grid supports are drawn; one line says which were skipped and why.
When any decision of the run fell back (a language model's answer still unusable after its
re-asks), every table is written again over the runs without fallbacks
(``<table>_without_fallbacks.csv``) and one line says how many runs had them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_dilemmas.analysis.fallbacks import fallback_note, without_fallbacks
from mesa_dilemmas.dilemmas.port_of_mars.tables import (  # noqa: F401  (the public names)
    analyse,
    groups_across,
    leadership_table,
    meeting_tests,
)


def register(subparsers: Any) -> None:
    from mesa_dilemmas.viz.saving import DPI, FORMATS

    p = subparsers.add_parser(
        "port_of_mars",
        help="Table 1 / Figs. 2-6 of a Port of Mars run: tables (CSV) and figures "
        "(Mann-Whitney U for the meeting)",
    )
    p.add_argument("run_dir", help="a finished run directory of a Port of Mars scenario")
    p.add_argument("--out", help="where to write tables and figures (default RUN_DIR/analysis)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="png",
        help=f"figure file format (default png at {DPI} dpi)",
    )
    p.add_argument("--no-figures", action="store_true", help="write the tables only")
    p.add_argument(
        "--with",
        dest="compare",
        action="append",
        default=[],
        metavar="RUN_DIR",
        help="another Port of Mars run whose cells Fig. 6 shows beside this run's "
        "(e.g. the -30..60 SVO set); repeatable",
    )
    p.set_defaults(func=run)
    s = subparsers.add_parser(
        "pledges",
        help="say vs do in a Port of Mars run: meeting pledges of coins to port health against "
        "what the player then put in (kept / broken / unparsed, keep rate with Wilson CI by "
        "seat kind)",
    )
    s.add_argument("run_dir", help="a finished run directory of a Port of Mars scenario")
    s.add_argument("--out", help="where to write the tables (default RUN_DIR/analysis)")
    s.set_defaults(func=run_pledges)


def run_pledges(args: argparse.Namespace) -> int:
    from mesa_dilemmas.dilemmas import say_do
    from mesa_dilemmas.dilemmas.port_of_mars import pledges

    return say_do.command(args, pledges)


def run(args: argparse.Namespace) -> int:
    from mesa_dilemmas.scenarios.config import ConfigError
    from mesa_dilemmas.viz.figures import load_run

    def load(run_dir: Path, field: str) -> tuple[pd.DataFrame, list[str]]:
        scenario, runs, _ = load_run(run_dir)
        if scenario.game != "port_of_mars":
            raise ConfigError(f"{field}: {run_dir} is a {scenario.game} run, not port_of_mars")
        return runs, list(scenario.grid)

    run_dir = Path(args.run_dir)
    runs, grid = load(run_dir, "run_dir")
    others = [(Path(d).name, *load(Path(d), "--with")) for d in getattr(args, "compare", [])]
    tables = analyse(runs, grid)
    kept = without_fallbacks(runs)
    if kept is not None:  # the same tables over the runs no fallback decision touched
        tables.update(
            {f"{name}_without_fallbacks": table for name, table in analyse(kept, grid).items()}
        )
    compared = None
    if others:
        compared = groups_across([(run_dir.name, runs, grid), *others])
        tables["groups_compared"] = compared[0]
    out = Path(args.out) if args.out else run_dir / "analysis"
    out.mkdir(parents=True, exist_ok=True)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        for name, table in tables.items():
            path = out / f"{name}.csv"
            table.to_csv(path, index=False)
            print(f"== {name}\n{table.round(3).to_string(index=False)}\n")
            print(path)
    print(f"fallbacks: {fallback_note(runs)}")
    if getattr(args, "no_figures", False):
        return 0
    from mesa_dilemmas.dilemmas.port_of_mars.paper_figures import paper_figures
    from mesa_dilemmas.viz.saving import figure_format, save

    every = {k: v for k, v in tables.items() if not k.endswith("_without_fallbacks")}
    figures, skipped = paper_figures(every, runs, grid, compared)
    with figure_format(getattr(args, "format", "png")):
        for stem, fig in figures.items():
            print(save(fig, out / stem))
    if skipped:
        print(f"figures skipped: {'; '.join(skipped)}")
    return 0
