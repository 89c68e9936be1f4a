"""Runs with and without fallback decisions: what analyses of LLM runs filter on.

A language model's answer that is still unusable after its re-asks becomes the decision's
documented fallback; the decision is flagged in ``llm_decisions.parquet`` and each run counts
its fallback decisions in the column ``decision_fallbacks`` (games add it when a policy of the
run may fall back).  An analysis reports its results twice when any run has such decisions:
over every run, and over the runs none of whose decisions fell back, so that no rule answer
standing in for a model's passes unseen into a finding.
"""

from __future__ import annotations

import pandas as pd

#: the per-run count of decisions answered by their fallback
FALLBACK_COLUMN = "decision_fallbacks"


def fallback_runs(runs: pd.DataFrame) -> pd.Series:
    """Per run (row), whether any of its decisions fell back (False without the column)."""
    if FALLBACK_COLUMN not in runs.columns:
        return pd.Series(False, index=runs.index)
    return pd.to_numeric(runs[FALLBACK_COLUMN], errors="coerce").fillna(0) > 0


def without_fallbacks(runs: pd.DataFrame) -> pd.DataFrame | None:
    """The runs none of whose decisions fell back, or None when no run had a fallback (the
    analysis over every run is then the only one)."""
    flagged = fallback_runs(runs)
    if not flagged.any():
        return None
    return runs[~flagged]


def fallback_note(runs: pd.DataFrame) -> str:
    """One line: how many runs had fallback decisions, and how many decisions in all."""
    flagged = fallback_runs(runs)
    if not flagged.any():
        return "no decision fell back"
    total = int(pd.to_numeric(runs[FALLBACK_COLUMN], errors="coerce").fillna(0).sum())
    return (
        f"{int(flagged.sum())} of {len(runs)} runs had decisions answered by their fallback "
        f"({total} decisions in all); the results are given over every run and over the "
        f"{int((~flagged).sum())} runs without any"
    )
