"""``mesa-dilemmas host SCENARIO``: serve a session with people beside rule and LLM seats.

One Solara server (``solara run mesa_dilemmas.viz.host.app`` in a child process, on 127.0.0.1
unless ``--host`` says otherwise) serves the experimenter's console
(``/console?key=...``, the key printed here) and one page per person (``/play?code=...``).
The scenario is checked completely before the server starts (its ``[host]`` table, its
population, one model built per group); the records go to ``--out`` (default
``runs/<name>-host-<time>/``), where ``seats.json`` lists every join link once the server has
started.  Light at import: nothing of the game, Mesa or Solara is imported until it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

APP_MODULE = "mesa_dilemmas.viz.host.app"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from mesa_dilemmas.viz.dashboard_cli import add_server_arguments

    parser.add_argument(
        "scenario",
        nargs="?",
        help="a hosted scenario: a bundled name (<game>/<name>) or a TOML file",
    )
    parser.add_argument(
        "--report",
        metavar="RUN_DIR",
        help="print how people, language models and rules decided in a session's run "
        "directory (per decision kind and seat kind), and serve nothing",
    )
    add_server_arguments(
        parser, 8766, host_help="; people on other machines need an address they can reach"
    )
    parser.add_argument("--groups", type=int, help="groups played side by side (default: [host])")
    parser.add_argument("--out", metavar="DIR", help="the run directory for the records")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field (params.rounds=5, host.time_limit_s=30)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``host`` to the ``mesa-dilemmas`` command line."""
    p = subparsers.add_parser(
        "host",
        help="host a session with human participants beside LLM and rule seats (browser)",
        description="Serve a session with people beside rule and LLM seats, in the browser.",
    )
    add_arguments(p)
    p.set_defaults(func=cmd_host)


def check(args: argparse.Namespace) -> tuple[object, Path]:
    """The scenario, checked by building every group's model once (nothing is served yet)."""
    from mesa_dilemmas.scenarios.config import ConfigError
    from mesa_dilemmas.viz.host.config import load_hosted
    from mesa_dilemmas.viz.host.session import default_out_dir

    hosted = load_hosted(args.scenario, args.overrides)
    if args.groups is not None and not 1 <= args.groups <= 50:
        raise ConfigError(f"--groups {args.groups}: give 1 to 50")
    from mesa_dilemmas.agents.human import Hub, use_hub
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.dilemmas.base import build_model

    try:
        with use_hub(Hub(time_limit_s=hosted.host.time_limit_s, on_timeout=hosted.host.on_timeout)):
            build_model(game_model(hosted.scenario.game), hosted.params, rng=0)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"params: {exc}") from None
    from mesa_dilemmas.viz.host.session import llm_specs

    specs = llm_specs(hosted)
    if specs or hosted.scenario.llm:
        from mesa_dilemmas.llm.guard import LLMConfigError, RunGuard

        try:
            RunGuard.configure(specs, hosted.scenario.llm).preflight()
        except LLMConfigError as exc:
            raise ConfigError(str(exc)) from None
    out = Path(args.out) if args.out else default_out_dir(hosted.scenario.name)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"--out {out}: directory exists and is not empty")
    return hosted, out


def cmd_host(args: argparse.Namespace) -> int:
    from mesa_dilemmas.viz.dashboard_cli import (
        ensure_assets,
        free_port,
        port_free,
        server_env,
    )

    if args.report:
        return report(Path(args.report))
    if not args.scenario:
        from mesa_dilemmas.scenarios.config import ConfigError

        raise ConfigError("scenario: name a hosted scenario (or --report RUN_DIR)")
    hosted, out = check(args)
    key = secrets.token_urlsafe(12)
    out.mkdir(parents=True, exist_ok=True)
    settings = {
        "scenario": args.scenario
        if not Path(args.scenario).is_file()
        else str(Path(args.scenario).resolve()),
        "overrides": args.overrides,
        "out_dir": str(out.resolve()),
        "key": key,
        "groups": args.groups,
    }
    handle, config_path = tempfile.mkstemp(prefix="mesa-dilemmas-host-", suffix=".json")
    with os.fdopen(handle, "w") as f:
        json.dump(settings, f)
    env_args = argparse.Namespace(host=args.host, llm_config=None, record_dir=None)
    env = server_env(env_args)
    env["MESA_DILEMMAS_HOST_CONFIG"] = config_path
    if not args.no_assets:
        ensure_assets()
    port = args.port or free_port(args.host)
    if args.port and not port_free(args.host, port):
        from mesa_dilemmas.scenarios.config import ConfigError

        raise ConfigError(f"port {port} on {args.host} is in use: pick another with --port")
    cmd = [
        sys.executable, "-m", "solara", "run", APP_MODULE, "--host", args.host,
        "--port", str(port), "--production", "--no-open", "--no-check-version",
    ]  # fmt: skip
    base = f"http://{args.host}:{port}"
    print(f"mesa-dilemmas host: console {base}/console?key={key}  (Ctrl-C stops it)", flush=True)
    print(f"people join at {base}/ with their code; links in {out / 'seats.json'}", flush=True)
    print(f"records: {out}", flush=True)
    proc = subprocess.Popen(cmd, env=env)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        Path(config_path).unlink(missing_ok=True)


def report(run_dir: Path, option: str = "--report") -> int:
    """``--report RUN_DIR`` (``analyse seats RUN_DIR``): the seat kinds compared, one row per
    decision kind and seat kind, printed and written to ``RUN_DIR/analysis/seats.csv``."""
    from mesa_dilemmas.scenarios.config import ConfigError
    from mesa_dilemmas.viz.host.session import seat_comparison

    if not (run_dir / "decisions.parquet").is_file():
        raise ConfigError(f"{option} {run_dir}: no decisions.parquet (not a hosted session's run)")
    table = seat_comparison(run_dir)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    (run_dir / "analysis").mkdir(exist_ok=True)
    table.to_csv(run_dir / "analysis" / "seats.csv", index=False)
    return 0


def register_analysis(subparsers: argparse._SubParsersAction) -> None:
    """``mesa-dilemmas analyse seats RUN_DIR``: people, language models and rule seats of a
    hosted session compared (the same table as ``host --report``)."""
    p = subparsers.add_parser(
        "seats",
        help="a hosted session: people, LLM and rule seats compared per decision kind "
        "(response times, time-outs, refused answers, most frequent answer)",
    )
    p.add_argument("run_dir", help="the run directory a hosted session wrote")
    p.set_defaults(func=lambda args: report(Path(args.run_dir), "analyse seats"))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """``python -m mesa_dilemmas.viz.host.cli SCENARIO`` (the same as the subcommand)."""
    from mesa_dilemmas.scenarios.config import ConfigError

    parser = argparse.ArgumentParser(
        prog="mesa-dilemmas host",
        description="Serve a session with people beside rule and LLM seats, in the browser.",
    )
    add_arguments(parser)
    try:
        return cmd_host(parser.parse_args(argv))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
