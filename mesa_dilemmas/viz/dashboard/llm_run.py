"""The dashboard's side of the LLM layer: which model to call, and reading back what was called.

Everything the dashboard needs from :mod:`mesa_dilemmas.llm` goes through this
module, so a change there touches one file here.  It uses the layer's public
pieces only: ``LLMSettings``, ``preflight``, the run ``session`` (which makes
every call of the process land in a run record), ``accounting.summarize`` and
the record's ``calls`` / ``decisions`` tables (latest prompt and answer per agent).

One dashboard model with LLM agents = one run record in its own directory
(``MESA_DILEMMAS_DASHBOARD_RECORD_DIR``, default a temporary directory).  The
layer finds the active run through a context variable, i.e. per thread: the
model activates its own run in the thread that plays a round, so several
browser tabs each keep their own record, even when they play rounds at once.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

#: a TOML file with the base LLM settings (an ``[llm]`` table, or its keys at top level)
CONFIG_ENV = "MESA_DILEMMAS_DASHBOARD_LLM_CONFIG"
#: where the dashboard keeps one run record per model with LLM agents
RECORD_DIR_ENV = "MESA_DILEMMAS_DASHBOARD_RECORD_DIR"

ANSWER_MODES = ("native", "tags")


def provider_names() -> list[str]:
    """The providers a page offers: the embedded model first, then every other registered
    provider (built-in or added by an installed package; :mod:`mesa_dilemmas.llm.providers`)."""
    from mesa_dilemmas.llm.providers import names

    return ["local", *(n for n in names() if n != "local")]


def base_settings_table(path: str | None = None) -> dict[str, Any]:
    """The ``[llm]`` table of ``path`` or of the file named by ``MESA_DILEMMAS_DASHBOARD_LLM_CONFIG``
    ({} when neither is given)."""
    path = path or os.environ.get(CONFIG_ENV)
    if not path:
        return {}
    raw = tomllib.loads(Path(path).expanduser().read_text())
    table = raw.get("llm", raw)
    if not isinstance(table, dict):
        raise ValueError(f"{path}: the [llm] table must be a table")
    return table


@dataclass(frozen=True)
class LLMChoice:
    """The LLM controls of a page: provider, model, answer mode, reply length."""

    KEYS: ClassVar[tuple[str, ...]] = (
        "llm_provider",
        "llm_model",
        "llm_answer_mode",
        "llm_max_tokens",
    )

    provider: str = "local"
    model: str = ""
    answer_mode: str = "native"
    max_tokens: int = 256

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> LLMChoice:
        return cls(
            provider=str(params.get("llm_provider") or "local"),
            model=str(params.get("llm_model") or "").strip(),
            answer_mode=str(params.get("llm_answer_mode") or "native"),
            max_tokens=int(params.get("llm_max_tokens") or 256),
        )

    @property
    def spec(self) -> str:
        """The model spec the games pass to ``make_policy`` (``local``, ``openai:gpt-4o``...)."""
        return self.provider if not self.model else f"{self.provider}:{self.model}"

    def settings(self) -> Any:
        """The base settings file, with this page's answer mode and reply length on top."""
        from mesa_dilemmas.llm import LLMSettings

        table = {
            **base_settings_table(),
            "answer_mode": self.answer_mode,
            "max_tokens": self.max_tokens,
        }
        return LLMSettings.from_table(table)


@dataclass(frozen=True)
class Transcript:
    """The latest call of one agent (``agent`` None: the narrator of a model-level decision)."""

    agent: int | None
    kind: str
    round: int
    attempt: int
    source: str
    model: str
    prompt: list[tuple[str, str]]
    answer: str
    error: str | None
    tokens_in: int
    tokens_out: int


def _answer_text(response: str | None) -> str:
    if not response:
        return ""
    data = json.loads(response)
    if data.get("refusal"):
        return f"(refused) {data['refusal']}"
    if data.get("text"):
        return str(data["text"])
    return json.dumps(data.get("data")) if data.get("data") is not None else ""


class LLMRun:
    """One dashboard model's LLM run: its settings, its record and what the panel reads from it."""

    def __init__(self, choice: LLMChoice, settings: Any, run_dir: Path) -> None:
        from mesa_dilemmas.llm import session

        self.choice = choice
        self.settings = settings
        self.run_dir = run_dir
        # active in the caller's context too, so the game built next takes its settings;
        # each round's thread activates it again (a new thread starts without it)
        self.session_file = session.start_run(settings, run_dir)
        state = session.current()
        assert state is not None
        self.recorder = state.recorder

    @classmethod
    def start(cls, choice: LLMChoice) -> LLMRun:
        """Check the spec (key, package, model file) and open a fresh record; errors say the fix."""
        from mesa_dilemmas.llm import preflight

        settings = choice.settings()
        preflight({choice.spec}, settings)
        root = Path(
            os.environ.get(RECORD_DIR_ENV)
            or Path(tempfile.gettempdir()) / "mesa-dilemmas-dashboard"
        )
        run_dir = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        return cls(choice, settings, run_dir)

    def activate(self) -> None:
        """Make this run the active one in the calling thread's context (the layer records
        the calls made there): called first thing in the thread that plays a round."""
        from mesa_dilemmas.llm import session

        session.activate(self.session_file)

    def summary(self) -> dict[str, Any]:
        """Calls, tokens, cost, parse failures, fallbacks, call errors: in total and per agent."""
        from mesa_dilemmas.llm.accounting import summarize

        return summarize(self.recorder)

    def transcripts(self) -> list[Transcript]:
        """The latest call of every agent that has called, narrator last."""
        rows = self.recorder.db.execute(
            "SELECT c.agent_id, c.kind, c.round, c.attempt, c.source, c.label, c.request,"
            " c.response, c.error, c.tokens_in, c.tokens_out FROM calls c"
            " JOIN (SELECT MAX(id) AS id FROM calls GROUP BY agent_id) last ON c.id = last.id"
        )
        out = []
        for (
            agent,
            kind,
            round_,
            attempt,
            source,
            label,
            request,
            response,
            error,
            tin,
            tout,
        ) in rows:
            messages = json.loads(request).get("messages", []) if request else []
            out.append(
                Transcript(
                    agent=agent,
                    kind=kind,
                    round=int(round_ or 0),
                    attempt=int(attempt or 0),
                    source=source,
                    model=label,
                    prompt=[(m.get("role", ""), m.get("content", "")) for m in messages],
                    answer=_answer_text(response),
                    error=error,
                    tokens_in=int(tin or 0),
                    tokens_out=int(tout or 0),
                )
            )
        return sorted(out, key=lambda t: (t.agent is None, t.agent or 0))

    def errors(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest decisions whose call failed or whose answer could not be used."""
        rows = self.recorder.db.execute(
            "SELECT agent_id, kind, round, error, fell_back FROM decisions WHERE error IS NOT NULL"
            " ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        return [
            {"agent": a, "kind": k, "round": r, "error": e, "fell_back": bool(f)}
            for a, k, r, e, f in rows
        ]

    def round_progress(self, round_: int) -> dict[str, Any]:
        """Calls of round ``round_`` so far: answered (ok / failed), the agents that have
        answered, the wall-clock seconds from the first call's start to the last answer
        (calls run side by side); and the calls in flight right now (reserved from the
        run's budget, not yet answered)."""
        ok, failed, first, last = self.recorder.db.execute(
            "SELECT COALESCE(SUM(error IS NULL), 0), COALESCE(SUM(error IS NOT NULL), 0),"
            " MIN(ts - COALESCE(latency_s, 0)), MAX(ts) FROM calls WHERE round = ?",
            (round_,),
        )[0]
        agents = {
            a
            for (a,) in self.recorder.db.execute(
                "SELECT DISTINCT agent_id FROM calls WHERE round = ?", (round_,)
            )
        }
        try:
            in_flight = int(self.recorder.db.execute("SELECT in_flight FROM budget")[0][0])
        except Exception:  # an older record without the budget table
            in_flight = 0
        return {
            "answered": int(ok),
            "failed": int(failed),
            "agents": agents,
            "span_s": float(last - first) if first is not None and last is not None else 0.0,
            "in_flight": max(0, in_flight),
        }

    def close(self) -> None:
        self.recorder.close()
