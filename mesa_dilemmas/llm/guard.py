"""The one object a run asks about its language models: :class:`RunGuard`.

A run with LLM agents needs the same things whatever runs it: its ``[llm]`` settings validated
and every model checked before anything runs (keys, SDKs, model files), the run's session open
while its tasks run (recording, the budget, resume), the exceptions that stop a run told apart
from the others, with what to say about each, and at the end each model's fallback rate printed
and compared with the limit.  The scenario runner calls this guard for all of it instead of
reaching into the layer's parts one by one (the price of a run is the scenario layer's own
business: ``scenarios.size.confirm_llm_cost``).

With ``[llm] require_persona_check = true`` the preflight also stops a run whose models have no
passed persona manipulation check for the run's game (:attr:`RunGuard.game`): the check
(``mesa-dilemmas personas check``) stores its result per (model, game) beside the response cache
(:func:`persona_check_path`), and the guard reads it here.  With ``[llm] min_comprehension``
it stops (or, ``on_low_comprehension = "warn"``, warns about) a model whose stored comprehension
result on the game (``mesa-dilemmas comprehension``, :func:`comprehension_gate`) is missing or
below the minimum.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mesa_dilemmas.llm.errors import BudgetExceeded, LLMConfigError, ProviderRejected
from mesa_dilemmas.llm.settings import LLMSettings

#: a fallback rate above this is printed as a warning
WARN_FALLBACK_RATE = 0.10


@dataclass
class RunGuard:
    """The LLM side of one run: its models (``specs``) and settings."""

    specs: frozenset[str]
    settings: LLMSettings
    #: the run's game (or games): with ``require_persona_check`` each model needs a passed
    #: persona check for it; the scenario runner sets it
    game: str | Iterable[str] | None = None
    #: the run's accounting once its session has finished (``session``)
    summary: dict[str, Any] | None = field(default=None, init=False)

    @classmethod
    def configure(
        cls,
        specs: Iterable[str],
        table: dict[str, Any] | None,
        game: str | Iterable[str] | None = None,
    ) -> RunGuard:
        """The guard of a run with these models and ``[llm]`` table (validated; a problem is an
        :class:`LLMConfigError` of one line naming the key), playing ``game``."""
        return cls(frozenset(specs), LLMSettings.from_table(table), game=game)

    def preflight(self) -> None:
        """Check every model before anything runs: keys, SDKs, model files, prices a budget
        needs (:class:`LLMConfigError`, one line)."""
        from mesa_dilemmas.llm.checks import preflight

        preflight(self.specs, self.settings)
        if self.settings.require_persona_check:
            self.require_persona_checks()
        if self.settings.min_comprehension is not None:
            for game in self.games():
                comprehension_gate(self.specs, self.settings, game)

    def games(self) -> list[str]:
        if self.game is None:
            return []
        return [self.game] if isinstance(self.game, str) else sorted(set(self.game))

    def require_persona_checks(self) -> None:
        """Every model of the run has a passed persona check for every game of the run, else
        :class:`LLMConfigError` naming the model, the game and the command that checks it."""
        from mesa_dilemmas.llm.checks import resolve

        for game in self.games():
            for text in sorted(self.specs):
                spec = resolve(text, self.settings)
                label = spec.label
                record = stored_persona_check(self.settings, label, game)
                command = f"mesa-dilemmas personas check --llm {text} --game {game}"
                if record is None:
                    raise LLMConfigError(
                        f"llm.require_persona_check: {label} has no persona check for {game}; "
                        f"run: {command}"
                    )
                if not record.get("passed"):
                    raise LLMConfigError(
                        f"llm.require_persona_check: {label} did not pass its persona check for "
                        f"{game} ({record.get('why', 'failed')}); see "
                        f"{persona_check_path(self.settings, label, game)} or rerun: {command}"
                    )

    @contextmanager
    def session(self, out: Path, *, resume: bool) -> Iterator[None]:
        """The run's LLM session, active while the run's tasks run (they carry its path);
        :attr:`summary` holds its accounting afterwards, however the run ended."""
        from mesa_dilemmas.llm import session

        run = session.start_run(self.settings, out, resume=resume)
        try:
            yield
        finally:
            self.summary = session.finish_run(run)

    @staticmethod
    def stopped(exc: BaseException, out: Path) -> str | None:
        """What to tell the user when ``exc`` stopped the run (None: not an LLM stop)."""
        if isinstance(exc, ProviderRejected):  # a key, model or endpoint that cannot work
            if getattr(exc, "resumable", False):  # a call failed after its retries
                return (
                    f"{exc}; the calls made so far are saved in {out}: continue with --resume {out}"
                )
            return f"{exc}; the calls made so far are saved in {out}"
        if isinstance(exc, BudgetExceeded):
            return (
                f"{exc}; the calls made so far are saved in {out} (and in the cache): "
                f"continue with --resume {out} after raising the budget"
            )
        return None

    def over_fallback_limit(self) -> list[str]:
        """Print each model's fallback rate and kinds (stderr); the models above their limit."""
        from mesa_dilemmas.llm.checks import fallback_limits

        if self.summary is None:
            return []
        return report_fallbacks(self.summary, fallback_limits(self.specs, self.settings))


# -- the stored result of a persona check, per (model, game) -----------------------------------

#: the folder of stored persona-check results, inside the response cache directory
PERSONA_CHECKS_DIR = "persona_checks"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"


def persona_check_path(settings: LLMSettings, label: str, game: str) -> Path:
    """Where the persona check of model ``label`` (``provider:model``) for ``game`` is stored:
    ``<cache dir>/persona_checks/<model>/<game>.json``."""
    return settings.resolved_cache_dir() / PERSONA_CHECKS_DIR / _slug(label) / f"{_slug(game)}.json"


def stored_persona_check(settings: LLMSettings, label: str, game: str) -> dict[str, Any] | None:
    """The stored persona-check result of ``label`` for ``game`` (None: never checked; an
    unreadable file counts as never checked)."""
    path = persona_check_path(settings, label, game)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def store_persona_check(
    settings: LLMSettings, label: str, game: str, record: dict[str, Any]
) -> Path:
    """Write a persona-check result (atomically) where :func:`stored_persona_check` finds it."""
    from mesa_dilemmas.files import write_text_atomic

    path = persona_check_path(settings, label, game)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    return path


# -- the stored result of a comprehension check, per (model, game, prompt variant) -------------
# (``mesa-dilemmas comprehension``, mesa_dilemmas/instruments/comprehension.py, writes it)


def results_dir(settings: LLMSettings) -> Path:
    """Where the latest result of each model, game and variant is kept (beside the cache)."""
    return settings.resolved_cache_dir() / "comprehension"


def _file_safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def model_label(spec: str) -> str:
    """The label results are kept under: ``provider:model`` (no path, no URL)."""
    from mesa_dilemmas.llm import parse_spec

    return parse_spec(spec).label


def result_path(settings: LLMSettings, label: str, game: str, variant: int) -> Path:
    return results_dir(settings) / f"{_file_safe(label)}--{_file_safe(game)}--v{variant}.json"


def store_result(settings: LLMSettings, row: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Keep a game's ``all`` row as the latest result of its model, game and variant."""
    path = result_path(settings, row["model"], row["game"], int(row["variant"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**meta, **row}, indent=1, default=str))
    return path


def load_result(settings: LLMSettings, spec: str, game: str, variant: int) -> dict[str, Any] | None:
    """The latest stored result of model ``spec`` on ``game`` in ``variant`` (None: none)."""
    path = result_path(settings, model_label(spec), game, variant)
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def check_command(spec: str, game: str, variant: int) -> str:
    """The command that measures ``spec`` on ``game`` in ``variant``."""
    tail = f" --variant {variant}" if variant else ""
    return f"mesa-dilemmas comprehension --llm {spec} --game {game}{tail}"


def comprehension_gate(specs: Iterable[str], settings: LLMSettings, game: str) -> None:
    """Hold a run's models to ``[llm] min_comprehension`` on ``game`` (nothing when unset).

    Reads each model's stored result for the game in the run's ``prompt_variant`` (it never
    runs the check: a missing result says which command measures it).  A model without a
    result or below the minimum stops the run (an :class:`LLMConfigError` of one line, every
    such model named) with ``on_low_comprehension = "stop"``, or is printed as a warning on
    stderr with ``"warn"``."""
    from importlib.metadata import entry_points  # the instrument's group, spelled out here

    minimum = settings.min_comprehension
    if minimum is None:
        return
    variant = settings.prompt_variant
    problems = []
    if game not in {ep.name for ep in entry_points(group="mesa_dilemmas.comprehension")}:
        problems.append(f"{game} has no comprehension battery, so no model can be held to it")
        specs = ()
    for spec in sorted(set(specs)):
        label = model_label(spec)
        result = load_result(settings, spec, game, variant)
        if result is None:
            problems.append(
                f"{label} has no comprehension result on {game} (prompt variant {variant}): "
                f"run `{check_command(spec, game, variant)}`"
            )
        elif not float(result["accuracy"]) >= minimum:
            problems.append(
                f"{label} answered {int(result['correct'])} of {int(result['items'])} "
                f"comprehension items on {game} correctly ({float(result['accuracy']):.0%}, "
                f"95% CI [{float(result['ci_low']):.0%}, {float(result['ci_high']):.0%}]), "
                f"below min_comprehension = {minimum:g}"
            )
    if not problems:
        return
    if settings.on_low_comprehension == "stop":
        raise LLMConfigError(
            "llm.min_comprehension: " + "; ".join(problems) + " (on_low_comprehension = 'stop')"
        )
    for problem in problems:
        print(f"warning: llm.min_comprehension: {problem}", file=sys.stderr)


def report_fallbacks(llm_summary: dict[str, Any], max_rate: float | dict[str, float]) -> list[str]:
    """Print each model's fallback rate and kinds (stderr); return the models above their
    ``max_rate`` (one for all, or per ``provider:model``)."""
    from mesa_dilemmas.llm.accounting import fallback_rates

    over = []
    for label, (fallbacks, decisions) in fallback_rates(llm_summary).items():
        rate = fallbacks / decisions
        if isinstance(max_rate, dict):
            limit = max_rate.get(label, max(max_rate.values(), default=0.05))
        else:
            limit = max_rate
        kinds = llm_summary.get("by_model", {}).get(label, {}).get("fallbacks_by_kind") or {}
        why = "; " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) if kinds else ""
        flag = (
            "  WARNING: above 10%, these answers are largely the rule's"
            if rate > WARN_FALLBACK_RATE
            else ""
        )
        print(
            f"llm {label}: {fallbacks}/{decisions} decisions fell back ({rate:.1%}){flag}{why}",
            file=sys.stderr,
        )
        if rate > limit:
            over.append(label)
    return over


__all__ = [
    "PERSONA_CHECKS_DIR",
    "WARN_FALLBACK_RATE",
    "LLMConfigError",
    "RunGuard",
    "persona_check_path",
    "report_fallbacks",
    "store_persona_check",
    "stored_persona_check",
]
