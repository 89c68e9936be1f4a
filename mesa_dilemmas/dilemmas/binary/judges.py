"""What the claims about the C/D games share: reading a self-play or cultural-evolution run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mesa_dilemmas.analysis.verdicts import read_runs

#: the paper the C/D games' claims come from, titled for the reproduction report
PAPERS = {"002": "Willis et al. — collective behaviour of hundreds of LLM agents"}


def wins_by_attitude(run_dir: Path) -> pd.DataFrame:
    """Cultural evolution: how many runs each attitude won, per group size."""
    runs = read_runs(run_dir)
    return runs.groupby(["group_size", "winner_attitude"]).size().unstack(fill_value=0)
