"""Issue 28's command-line fixes: `analyse norms` refuses a rule-based run, a dashboard port in
use is an error before any address is printed, `figures` explains its argument, the dashboard's
Play has no pause by default."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "mesa_dilemmas.cli"]


@pytest.fixture(scope="module")
def rule_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("norms") / "run"
    args = [
        "run",
        "fishery/punishment_shock",
        "--set",
        "replications=1",
        "--set",
        "max_steps=3",
        "--out",
        str(out),
        "--no-progress",
        "--processes",
        "1",
    ]
    subprocess.run([*CLI, *args], check=True, capture_output=True, timeout=300)
    return out


def test_analyse_norms_refuses_a_run_without_llm_villagers(rule_run: Path) -> None:
    r = subprocess.run(
        [*CLI, "analyse", "norms", str(rule_run)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 2, r.stderr
    assert "no LLM villagers" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "LLM societies" not in r.stdout and not (rule_run / "analysis").exists()


def test_has_llm_villagers_reads_the_shorthand_and_the_population() -> None:
    import pandas as pd

    from mesa_dilemmas.dilemmas.fishery.cli import has_llm_villagers

    assert not has_llm_villagers({}, pd.DataFrame([{"penalty": 10.0}]))
    assert has_llm_villagers({"llm_agents": 10, "llm": "local"}, pd.DataFrame())
    assert has_llm_villagers({}, pd.DataFrame([{"llm_agents": 0}, {"llm_agents": 2}]))
    players = {"groups": [{"rule": "default", "count": 3}, {"llm": "local", "count": 1}]}
    assert has_llm_villagers({"players": players}, pd.DataFrame())


def test_a_dashboard_port_in_use_is_refused_before_an_address_is_printed() -> None:
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run(
            [*CLI, "dashboard", "--port", str(port), "--no-assets"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert r.returncode == 2
    assert "http://" not in r.stdout and f"port {port}" in r.stderr and "in use" in r.stderr


def test_figures_says_what_its_run_dir_is() -> None:
    r = subprocess.run([*CLI, "figures", "--help"], capture_output=True, text=True, timeout=120)
    assert "finished run directory" in r.stdout


def test_play_has_no_pause_by_default() -> None:
    from mesa_dilemmas.viz.dashboard.components import play_interval_spec

    assert play_interval_spec()["value"] == 0 and play_interval_spec()["max"] == 1000
