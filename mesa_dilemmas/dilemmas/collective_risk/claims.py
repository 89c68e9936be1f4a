"""Paper 002's claims about the Collective Risk game (``mesa-dilemmas reproduce``)."""

from __future__ import annotations

import math
from pathlib import Path

from mesa_dilemmas.analysis.verdicts import (
    Claim,
    Verdict,
    fmt,
    read_runs,
)
from mesa_dilemmas.dilemmas.binary.judges import PAPERS as PAPERS  # the paper's title
from mesa_dilemmas.dilemmas.binary.judges import self_play_experiment
from mesa_dilemmas.dilemmas.binary.paper002 import (
    TABLE1,
    TABLE2,
    EvolutionResult,
    PublishedSelfPlay,
)

EXPERIMENTS = [self_play_experiment("cr_self_play", "collective_risk")]


CR_PEAK_NOTE = (
    "over-cooperation appears from n = 16 on and grows with the group (the peak moves from 88% "
    "towards two-thirds collective); in groups of four the welfare at 100% collective equals the "
    "peak within its standard error.  The reference collective set mixes unconditional and "
    "conditional cooperators; the paper's clearest peaks (at about half collective) come from "
    "LLM-written collective strategies that cooperate regardless.  Point options.collective_set "
    "at LLM-written sets to test the claim as the paper makes it."
)


def judge_cr_peak(run_dir: Path) -> Verdict:
    runs = read_runs(run_dir)
    parts, interior = [], []
    for n, cell in runs.groupby("group_size"):
        means = cell.groupby("frac_collective")["normalised_payoff"].agg(["mean", "sem"])
        peak = float(means["mean"].idxmax())
        full = means.loc[means.index.max()]
        top = means.loc[peak]
        below = top["mean"] - full["mean"] > 2 * math.hypot(top["sem"], full["sem"])
        interior.append(peak < 1.0 and below)
        parts.append(
            f"n={n}: peak at {peak:.0%} collective ({fmt(top['mean'])} vs {fmt(full['mean'])} at 100%)"
        )
    status = "reproduced" if all(interior) else "partly" if any(interior) else "not reproduced"
    return Verdict(
        "; ".join(parts),
        "welfare by collective share: peak below 100% and above it by > 2 s.e.",
        status,
    )


CLAIMS = [
    Claim(
        "002",
        "Sec. 5.2, Fig. 3",
        "Collective Risk: welfare peaks before the group is fully collective (over-cooperation)",
        "cr_self_play",
        judge_cr_peak,
        note=CR_PEAK_NOTE,
    ),
]

#: the self-play claim on the authors' published sets, per model (``reproduce --strategies``)
PUBLISHED = PublishedSelfPlay(
    "Sec. 5.2, Fig. 3",
    "Collective Risk: welfare peaks before the group is fully collective",
    judge_cr_peak,
    "best at about half collective; over-cooperation above",
    {
        "claude-haiku-4-5": "peak near half collective; worse in larger groups",
        "gemini-2.5-flash": "peak near half collective; worse in larger groups",
        "deepseek-r1-distill-llama-70b": "good with mostly exploitative groups (its exploitative "
        "strategies cooperate); over-cooperation with a collective majority",
        "gpt-5-mini": "very poor welfare at n = 16, 64, 256 (rota-based strategies)",
    },
)


#: paper 002's Table 1 for this game: (MPD collective, MPD exploitative, Cohen's d) per model
TABLE1["collective_risk"] = {
    "claude-haiku-4-5": (1.5, 0.5, 1.6),
    "deepseek-r1-distill-llama-70b": (0.9, 1.5, 0.8),
    "gemini-2.5-flash": (0.9, 0.5, 1.0),
    "gpt-5-mini": (1.1, 0.7, 0.4),
    "llama3.1-70b": (1.3, 1.4, 0.7),
    "mistral-7b": (1.4, 1.5, 0.1),
}
#: paper 002's Table 2 for this game: winning genes and efficiency per group size
TABLE2["collective_risk"] = {
    4: EvolutionResult({"claude-haiku-4-5/exploitative": 50, "gpt-5-mini/exploitative": 50}, 0.52),
    64: EvolutionResult({"claude-haiku-4-5/exploitative": 100}, 0.20),
}
