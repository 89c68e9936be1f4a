"""``mesa-dilemmas dashboard``: start the live Solara dashboard and print its address.

The server is ``solara run mesa_dilemmas.viz.dashboard.app`` in a child process
(production mode, no browser opened, no version check, no telemetry), so the
command behaves exactly like ``solara run`` on the app module; options reach the
app through environment variables.  Before starting, Solara's front-end files
are fetched from the npm registry when they are missing (see
:mod:`mesa_dilemmas.viz.dashboard.assets`): without them a machine with no
internet access would show blank pages.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from mesa_dilemmas.scenarios.config import ConfigError

APP_MODULE = "mesa_dilemmas.viz.dashboard.app"


#: addresses only this machine reaches (Solara's cookie warning is noise there)
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
SAMESITE_WARNING = "Cookies with samesite=none require https"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (checked before the address is
    printed, so a port in use is an error, not a "serving at" followed by a failure)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def port_number(text: str) -> int:
    """A TCP port for ``--port``: 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def add_server_arguments(
    parser: argparse.ArgumentParser, port: int, *, host_help: str = ""
) -> None:
    """``--port``, ``--host`` and ``--no-assets``: what every command that serves pages takes."""
    parser.add_argument(
        "--port", type=port_number, default=port, help=f"port (default {port}; 0: any free port)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"address to listen on (default 127.0.0.1{host_help})",
    )
    parser.add_argument(
        "--no-assets",
        action="store_true",
        help="do not fetch Solara's front-end files from the npm registry when missing",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_server_arguments(parser, 8765)
    parser.add_argument(
        "--llm-config",
        metavar="TOML",
        help="base LLM settings for LLM agents: a file with an [llm] table "
        "(as in a scenario); the page's answer mode and max tokens apply on top",
    )
    parser.add_argument(
        "--record-dir",
        metavar="DIR",
        help="where the LLM calls of each run are recorded (default: a temporary directory)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``dashboard`` to the ``mesa-dilemmas`` command line."""
    p = subparsers.add_parser("dashboard", help="start the live dashboard (one page per game)")
    add_arguments(p)
    p.set_defaults(func=cmd_dashboard)


def server_env(args: argparse.Namespace) -> dict[str, str]:
    """The child's environment: the app's options, telemetry off unless the user set it."""
    from mesa_dilemmas.viz.dashboard.llm_run import CONFIG_ENV, RECORD_DIR_ENV, base_settings_table

    env = dict(os.environ)
    env.setdefault("SOLARA_TELEMETRY_MIXPANEL_ENABLE", "False")
    if getattr(args, "host", "127.0.0.1") in LOOPBACK:
        # Solara warns, once per browser session, that a session cookie served over plain http
        # cannot be SameSite=None (which only matters when the page is embedded in an iframe
        # on another site); on a loopback address that is noise
        quiet = f"ignore:{SAMESITE_WARNING}"
        env["PYTHONWARNINGS"] = ",".join(filter(None, [env.get("PYTHONWARNINGS"), quiet]))
    if args.llm_config:
        path = Path(args.llm_config).expanduser().resolve()
        env[CONFIG_ENV] = str(path)
        try:
            from mesa_dilemmas.llm import LLMSettings

            LLMSettings.from_table(base_settings_table(str(path)))  # fail here, not in the browser
        except Exception as exc:
            raise ConfigError(f"--llm-config {args.llm_config}: {exc}") from None
    if args.record_dir is not None:
        from mesa_dilemmas.files import out_dir_problem

        record = Path(args.record_dir).expanduser()
        problem = out_dir_problem(args.record_dir)
        if problem is None:
            try:
                record.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                problem = f"cannot create it: {exc.strerror or exc}"
        if problem:
            raise ConfigError(f"--record-dir {args.record_dir!r}: {problem}")
        env[RECORD_DIR_ENV] = str(record.resolve())
    return env


def ensure_assets() -> None:
    """Fetch missing front-end files; on failure say what it means and carry on."""
    from mesa_dilemmas.viz.dashboard import assets

    try:
        assets.install()
    except Exception as exc:
        print(f"warning: {exc}; pages load only if Solara's CDN can be reached", file=sys.stderr)


def cmd_dashboard(args: argparse.Namespace) -> int:
    """Start the server, print the address, run until the server stops or Ctrl-C."""
    env = server_env(args)
    if not args.no_assets:
        ensure_assets()
    port = args.port or free_port(args.host)
    if args.port and not port_free(args.host, port):
        raise ConfigError(
            f"port {port} on {args.host} is in use (another dashboard?): "
            "pick another with --port, or --port 0 for any free one"
        )
    cmd = [
        sys.executable,
        "-m",
        "solara",
        "run",
        APP_MODULE,
        "--host",
        args.host,
        "--port",
        str(port),
        "--production",
        "--no-open",
        "--no-check-version",
    ]
    print(f"mesa-dilemmas dashboard: http://{args.host}:{port}/  (Ctrl-C stops it)", flush=True)
    proc = subprocess.Popen(cmd, env=env)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # stopped by a supervisor: same as Ctrl-C
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly on SIGINT
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mesa_dilemmas.viz.dashboard_cli [--port P]`` (the same as the subcommand)."""
    parser = argparse.ArgumentParser(
        prog="mesa-dilemmas dashboard", description=__doc__.splitlines()[0]
    )
    add_arguments(parser)
    try:
        return cmd_dashboard(parser.parse_args(argv))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())


def start_in_background(
    extra_args: Sequence[str] = (),
    cwd: str | None = None,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """Serve the dashboard in a child process on a free loopback port; return it and its URL
    once the home page answers (for scripts and benchmarks that drive a browser).  ``env``
    adds variables to the child's environment."""
    env = {
        **os.environ,
        "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    cmd = [
        sys.executable,
        "-m",
        "mesa_dilemmas.viz.dashboard_cli",
        "--port",
        str(free_port()),
        *extra_args,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd
    )
    assert proc.stdout is not None
    match = re.search(r"http://127\.0\.0\.1:\d+/", proc.stdout.readline())
    if not match:
        proc.terminate()
        raise SystemExit("the dashboard did not print its address")
    url = match.group(0)
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return proc, url
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.terminate()
                raise SystemExit(f"the dashboard at {url} did not answer") from None
            time.sleep(0.5)
