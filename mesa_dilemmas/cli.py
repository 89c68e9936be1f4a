"""The ``mesa-dilemmas`` command line: list and run scenarios, draw figures."""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from mesa_dilemmas.scenarios.config import ConfigError, bundled_scenarios, load_raw
from mesa_dilemmas.scenarios.runner import RunStopped

#: modules that add command groups (each exposes ``register(subparsers)``)
ANALYSE_MODULES: tuple[str, ...] = (
    "mesa_dilemmas.analysis.strategies_cli",
    "mesa_dilemmas.analysis.norms_cli",
    "mesa_dilemmas.analysis.port_of_mars_cli",
)
COMMAND_MODULES: tuple[str, ...] = (
    "mesa_dilemmas.llm.cli",
    "mesa_dilemmas.viz.dashboard_cli",
    "mesa_dilemmas.analysis.reproduction",
    "mesa_dilemmas.scenarios.strategy_writing",  # `strategies generate`
)


def cmd_scenarios(args: argparse.Namespace) -> int:
    names = bundled_scenarios()
    width = max((len(n) for n in names), default=0)
    for name in names:
        description = load_raw(name).get("description", "").strip().splitlines()
        print(f"{name:<{width}}  {description[0] if description else ''}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from mesa_dilemmas.scenarios.runner import run_scenario

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
    overall = outcome.summary.get("overall", {})
    shown = ", ".join(
        f"{k}={v['mean']:.3g}±{v['sem']:.2g}"
        for k, v in list(overall.items())[:4]
        if isinstance(v.get("mean"), float | int) and isinstance(v.get("sem"), float | int)
    )
    print(
        f"{outcome.summary.get('n_runs', 0)} runs in {outcome.wall_time:.1f}s -> {outcome.out_dir}"
    )
    if shown:
        print(f"overall: {shown}")
    if args.figures:
        return cmd_figures(argparse.Namespace(run_dir=str(outcome.out_dir)))
    return 0


def cmd_figures(args: argparse.Namespace) -> int:
    from mesa_dilemmas.viz.figures import render_figures

    for path in render_figures(Path(args.run_dir)):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    parser = argparse.ArgumentParser(
        prog="mesa-dilemmas",
        description="Social dilemmas on Mesa with rule-based and LLM-backed agents.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("scenarios", help="list the bundled scenarios")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("run", help="run a bundled scenario or a TOML file")
    p.add_argument(
        "scenario", help="bundled name (e.g. fishery/punishment_shock) or path to a .toml"
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
    p.add_argument("--backend", choices=("local", "ray"),
                   help="where tasks run: a local process pool (default) or Ray")  # fmt: skip
    p.add_argument("--address", metavar="ADDR",
                   help="a Ray cluster to join ('auto', 'ray://head:10001'); default: a local instance")  # fmt: skip
    p.add_argument(
        "--figures", action="store_true", help="render the scenario's figures afterwards"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("figures", help="render a finished run's figures (PNG)")
    p.add_argument("run_dir")
    p.set_defaults(func=cmd_figures)

    if ANALYSE_MODULES:
        analyse = sub.add_parser("analyse", help="analyses of strategies and results")
        analyse_sub = analyse.add_subparsers(dest="analysis", required=True)
        for module in ANALYSE_MODULES:
            import_module(module).register(analyse_sub)
    for module in COMMAND_MODULES:
        import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RunStopped as exc:
        print(f"stopped: {exc}", file=sys.stderr)
        return 3
    except LookupError as exc:  # a replay run asked for a call that was never recorded
        if type(exc).__name__ != "ReplayMiss":
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except tomllib.TOMLDecodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
