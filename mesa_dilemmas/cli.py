"""The ``mesa-dilemmas`` command line: list and run scenarios, draw figures.

It answers at once: ``--help``, ``scenarios`` and argument errors import neither Mesa nor a
game. The chosen command's module is imported when it runs; the others appear in ``--help``
from their one-line help (:data:`SHARED_COMMANDS`), and a plug-in command's module (an entry
point of ``mesa_dilemmas.commands``) is imported to list it, so it keeps its imports inside its
handlers."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import textwrap
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from mesa_dilemmas.dilemmas.registry import ANALYSES, COMMANDS, extensions

#: the shared commands defined in other modules: name -> (the module whose
#: ``register(subparsers)`` adds it, its one-line help for ``--help``); games and other
#: packages add theirs (and their analyses) by entry point
SHARED_COMMANDS: dict[str, tuple[str, str]] = {
    "llm": ("mesa_dilemmas.llm.cli", "LLM providers and the response cache"),
    "dashboard": (
        "mesa_dilemmas.viz.dashboard_cli",
        "start the live dashboard (one page per game)",
    ),
    "reproduce": (
        "mesa_dilemmas.reproduction",
        "run every bundled paper experiment that needs no paid provider; write reproduction.md",
    ),
    "estimate": (
        "mesa_dilemmas.scenarios.size",
        "what an LLM scenario will cost: calls, tokens, dollars and time (no calls made)",
    ),
    "sensitivity": (
        "mesa_dilemmas.scenarios.sensitivity",
        "global sensitivity (Sobol or Morris) of a run metric to open parameters",
    ),
    "calibrate": (
        "mesa_dilemmas.scenarios.calibrate",
        "search open parameters against target statistics (optuna)",
    ),
    "personas": (
        "mesa_dilemmas.instruments.persona_check",
        "persona manipulation checks: standard instruments put to a model in each persona's words",
    ),
    "comprehension": (
        "mesa_dilemmas.instruments.comprehension",
        "does a model understand a game: questions with answers computed from its rules",
    ),
    "branch": (
        "mesa_dilemmas.scenarios.branch",
        "fork a recorded run at a round with an intervention; the prefix replays at no cost",
    ),
    "host": (
        "mesa_dilemmas.viz.host.cli",
        "host a session with human participants beside LLM and rule seats (browser)",
    ),
}
ANALYSE_HELP = "analyses of strategies and results"


def cmd_scenarios(args: argparse.Namespace) -> int:
    from mesa_dilemmas.scenarios.config import bundled_scenarios, load_raw

    names = bundled_scenarios()
    descriptions = {n: " ".join(load_raw(n).get("description", "").split()) for n in names}
    print(scenario_listing(descriptions, shutil.get_terminal_size((100, 24)).columns))
    return 0


def scenario_listing(descriptions: dict[str, str], columns: int) -> str:
    """Names and descriptions wrapped to ``columns``: the description hangs beside the name,
    or (in a narrow terminal) goes below it, indented."""
    columns = max(columns, 40)
    width = max((len(n) for n in descriptions), default=0)
    beside = width + 2 + 30 <= columns
    lines = []
    for name, text in descriptions.items():
        if beside:
            indent = " " * (width + 2)
            lines.append(
                textwrap.fill(
                    text or "-",
                    columns,
                    initial_indent=f"{name:<{width}}  ",
                    subsequent_indent=indent,
                    break_on_hyphens=False,
                )
            )
        else:
            lines.append(name)
            if text:
                lines.append(
                    textwrap.fill(
                        text,
                        columns,
                        initial_indent="    ",
                        subsequent_indent="    ",
                        break_on_hyphens=False,
                    )
                )
    return "\n".join(lines)


def cmd_params(args: argparse.Namespace) -> int:
    """Every parameter of a game: name, type, default, allowed range or values, description."""
    from mesa_dilemmas.dilemmas.base import describe_params
    from mesa_dilemmas.dilemmas.registry import UnknownGame, game_model, games
    from mesa_dilemmas.scenarios.config import ConfigError, did_you_mean

    try:
        model_cls = game_model(args.game)
    except UnknownGame as exc:
        raise ConfigError(f"game: {exc}{did_you_mean(args.game, list(games()))}") from None
    rows = describe_params(model_cls)
    width = shutil.get_terminal_size((100, 24)).columns
    name_w = max(len(r["name"]) for r in rows)
    for r in rows:
        head = f"{r['name']:<{name_w}}  {r['type']} = {r['default']}"
        if r["allowed"]:
            head += f"  ({r['allowed']})"
        print(head)
        if r["description"]:
            print(
                textwrap.fill(
                    r["description"], width, initial_indent="    ", subsequent_indent="    "
                )
            )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from mesa_dilemmas.files import out_dir_problem
    from mesa_dilemmas.scenarios.config import ConfigError
    from mesa_dilemmas.scenarios.runner import run_scenario

    if args.out is not None and (problem := out_dir_problem(args.out)):
        raise ConfigError(f"--out {args.out!r}: {problem}")
    sequential_dir = args.resume and (Path(args.resume) / "sequential.json").is_file()
    if args.until or sequential_dir:
        return _run_until(args)

    outcome = run_scenario(
        args.scenario,
        out_dir=Path(args.out) if args.out else None,
        processes=args.processes,
        overrides=args.set or [],
        resume=Path(args.resume) if args.resume else None,
        execution={k: v for k, v in (("backend", args.backend), ("address", args.address)) if v},
        progress=not args.no_progress,
        force_processes=args.force_processes,
        yes=args.yes,
    )
    summary_file = outcome.out_dir / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else outcome.summary
    print(f"{summary.get('n_runs', 0)} runs in {outcome.wall_time:.1f}s -> {outcome.out_dir}")
    table = summary_table(summary)
    if table:
        print(table)
    if args.figures:
        return cmd_figures(argparse.Namespace(run_dir=str(outcome.out_dir), format=args.format))
    return 0


def _run_until(args: argparse.Namespace) -> int:
    """``run --until decided[,...]``: batches of replications until every contrast is decided
    (:mod:`mesa_dilemmas.scenarios.sequential`); ``--resume DIR`` continues the same design."""
    from mesa_dilemmas.scenarios.runner import default_out_dir, run_scenario
    from mesa_dilemmas.scenarios.sequential import run_until

    outcome = run_until(
        args.scenario,
        args.until,
        out_dir=Path(args.out) if args.out else None,
        resume=Path(args.resume) if args.resume else None,
        overrides=args.set or [],
        run=run_scenario,
        default_out=default_out_dir,
        processes=args.processes,
        execution={k: v for k, v in (("backend", args.backend), ("address", args.address)) if v},
        progress=not args.no_progress,
        force_processes=args.force_processes,
        yes=args.yes,
    )
    print(outcome.report)
    print(f"{outcome.runs} runs in {outcome.wall_time:.1f}s -> {outcome.out_dir}")
    return 0


#: the metrics shown per grid cell after a run (the first ones of summary.json's ``overall``)
SUMMARY_METRICS = 4
#: at most this many cells are printed; the rest are in summary.json
SUMMARY_CELLS = 24


def _mean_sem(block: dict[str, Any] | None) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("mean"), float | int):
        return "-"
    sem = block.get("sem")
    sem_txt = f"±{sem:.2g}" if isinstance(sem, float | int) and math.isfinite(sem) else ""
    return f"{block['mean']:.3g}{sem_txt}"


def summary_table(summary: dict[str, Any]) -> str:
    """One row per grid cell (mean ± s.e.m. of the first metrics), from ``summary.json``;
    one ``overall`` row when the run has no grid."""
    overall = summary.get("overall") or {}
    metrics = [k for k, v in overall.items() if isinstance(v, dict) and "mean" in v]
    metrics = metrics[:SUMMARY_METRICS]
    if not metrics:
        return ""
    groups = summary.get("groups") or []
    keys = list(dict.fromkeys(k for g in groups for k in g.get("params", {})))

    def value(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v)

    def row(cell: list[str], n_runs: Any, block: dict[str, Any]) -> list[str]:
        return [*cell, str(n_runs), *(_mean_sem(block.get(m)) for m in metrics)]

    if groups:
        header = [*keys, "runs", *metrics]
        rows = [
            row([value(g["params"].get(k)) for k in keys], g.get("n_runs", ""), g["metrics"])
            for g in groups[:SUMMARY_CELLS]
        ]
    else:
        header = ["", "runs", *metrics]
        rows = [row(["overall"], summary.get("n_runs", ""), overall)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    if len(groups) > SUMMARY_CELLS:
        lines.append(f"... {len(groups) - SUMMARY_CELLS} more cells in summary.json")
    if groups:
        lines.append("(mean±s.e.m. over the runs of each cell)")
    return "\n".join(lines)


def cmd_figures(args: argparse.Namespace) -> int:
    from mesa_dilemmas.viz.figures import render_figures

    for path in render_figures(Path(args.run_dir), fmt=args.format):
        print(path)
    return 0


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    """``--format png|svg|pdf`` for commands that draw figures."""
    from mesa_dilemmas.viz.saving import DPI, FORMATS

    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="png",
        help=f"figure file format (default png at {DPI} dpi; svg and pdf are vector)",
    )


class OneLineParser(argparse.ArgumentParser):
    """Command-line mistakes get one line naming the argument and what is allowed, exit 2 (the
    usage stays in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``command`` (the one the arguments name) is built in full, the other shared
    commands and ``analyse`` only by name and help (``None``: every command in full)."""
    from importlib import import_module

    parser = OneLineParser(
        prog="mesa-dilemmas",
        description="Social dilemmas on Mesa with rule-based and LLM-backed agents.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("scenarios", help="list the bundled scenarios")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("params", help="a game's parameters: type, default, range, description")
    p.add_argument("game", help="a registered game or 'package.module:ModelClass'")
    p.set_defaults(func=cmd_params)

    p = sub.add_parser("run", help="run a bundled scenario or a TOML file")
    p.add_argument(
        "scenario",
        help="bundled name (GAME/SCENARIO: see `mesa-dilemmas scenarios`) or path to a .toml",
    )
    p.add_argument("--out", help="run directory (default runs/<scenario>-<timestamp>)")
    p.add_argument(
        "--processes", type=int, help="worker processes for the sweep (at most the CPU cores)"
    )
    p.add_argument(
        "--force-processes",
        action="store_true",
        help="start --processes workers even when that is more than the CPU cores",
    )
    p.add_argument("--yes", action="store_true", help="start a very large run without asking")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a field: beta=12, replications=10, grid.growth_rate=[0.2,0.6]",
    )
    p.add_argument("--resume", metavar="DIR", help="continue a killed run in DIR")
    p.add_argument(
        "--until",
        metavar="SPEC",
        help="add replications in batches until every contrast is decided: "
        "'decided[,max=N,batch=B,alpha=0.05,spending=obf|pocock,metric=NAME,outcome=KIND]' "
        "(group-sequential, alpha spending; docs/power.md)",
    )
    p.add_argument(
        "--backend",
        choices=("local", "ray"),
        help="where tasks run: a local process pool (default) or Ray",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="a Ray cluster to join ('auto', 'ray://head:10001'); default: a local instance",
    )
    p.add_argument(
        "--figures", action="store_true", help="render the scenario's figures afterwards"
    )
    add_format_argument(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("figures", help="render a finished run's figures (PNG, SVG or PDF)")
    p.add_argument(
        "run_dir",
        help="a finished run directory (what `mesa-dilemmas run` wrote, e.g. runs/<scenario>-<time>);"
        " its figures are written into it",
    )
    add_format_argument(p)
    p.set_defaults(func=cmd_figures)

    analyses = extensions(ANALYSES)
    if analyses:
        analyse = sub.add_parser("analyse", help=ANALYSE_HELP)
        if command in (None, "analyse"):
            analyse_sub = analyse.add_subparsers(dest="analysis", required=True)
            for entry in analyses.values():
                entry.load()(analyse_sub)
    for name, (module, help_text) in SHARED_COMMANDS.items():
        if command in (None, name):
            import_module(module).register(sub)
        else:  # by name only: its module is imported when it is the command
            sub.add_parser(name, help=help_text)
    for entry in extensions(COMMANDS).values():  # a game's own commands (light modules)
        entry.load()(sub)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command the arguments name (their first word that is no option), if any."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
        if arg in ("-h", "--help"):
            return None
    return None


def failure_code(exc: BaseException) -> int | None:
    """Say a failure the user can act on in one line and give its exit code: a bad scenario or
    setting, a TOML error, the LLM layer's configuration errors (a crashing native build), a
    replayed call that was never recorded (2); a run stopped on purpose, by a budget (3).
    ``None``: anything else, a bug, which keeps its traceback."""
    from mesa_dilemmas.scenarios.config import ConfigError  # imported once a command has run
    from mesa_dilemmas.scenarios.runner import RunStopped

    if isinstance(exc, RunStopped):
        print(f"stopped: {exc}", file=sys.stderr)
        return 3
    if isinstance(exc, ConfigError | tomllib.TOMLDecodeError) or type(exc).__name__ in (
        "LLMConfigError",
        "ReplayMiss",
    ):
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = chosen_command(argv)
    parser = build_parser(command if command is not None else "")
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, RuntimeError, LookupError) as exc:
        code = failure_code(exc)
        if code is None:
            raise
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
