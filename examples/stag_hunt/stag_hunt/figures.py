"""The Stag Hunt's figure, registered by entry point (``mesa_dilemmas.figures``) and named by its
scenario as ``stag_hunt.catch_rate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from mesa_dilemmas.viz.saving import save


def catch_rate(run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Any) -> list[Path]:
    """Share of rounds in which the stag was caught, by the number of hunters it needs."""
    rounds = runs["caught"] / runs["steps_run"].clip(lower=1)
    by_k = rounds.groupby(runs["threshold"]).agg(["mean", "sem"]).fillna(0.0)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.5, 2.8))
    ax.errorbar(
        by_k.index, by_k["mean"], yerr=by_k["sem"], marker="o", capsize=3, label="mean ± s.e."
    )
    ax.set_xlabel("hunters a stag needs (threshold)")
    ax.set_ylabel("share of rounds with a catch")
    ax.set_ylim(0, 1)
    ax.set_title("Stag Hunt: catches by threshold")
    ax.legend()
    return [save(fig, run_dir / "catch_rate")]
