"""The one object a run asks about its language models: :class:`RunGuard`.

A run with LLM agents needs the same things whatever runs it: its ``[llm]`` settings validated
and every model checked before anything runs (keys, SDKs, model files), the run's session open
while its tasks run (recording, the budget, resume), the exceptions that stop a run told apart
from the others, with what to say about each, and at the end each model's fallback rate printed
and compared with the limit.  The scenario runner calls this guard for all of it instead of
reaching into the layer's parts one by one (the price of a run is the scenario layer's own
business: ``scenarios.size.confirm_llm_cost``).
"""

from __future__ import annotations

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
    #: the run's accounting once its session has finished (``session``)
    summary: dict[str, Any] | None = field(default=None, init=False)

    @classmethod
    def configure(cls, specs: Iterable[str], table: dict[str, Any] | None) -> RunGuard:
        """The guard of a run with these models and ``[llm]`` table (validated; a problem is an
        :class:`LLMConfigError` of one line naming the key)."""
        return cls(frozenset(specs), LLMSettings.from_table(table))

    def preflight(self) -> None:
        """Check every model before anything runs: keys, SDKs, model files, prices a budget
        needs (:class:`LLMConfigError`, one line)."""
        from mesa_dilemmas.llm.checks import preflight

        preflight(self.specs, self.settings)

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


__all__ = ["WARN_FALLBACK_RATE", "LLMConfigError", "RunGuard", "report_fallbacks"]
