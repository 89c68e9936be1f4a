"""Paper 002's claims about the Public Goods game (``mesa-dilemmas reproduce``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from scipy import stats

from mesa_dilemmas.analysis.verdicts import (
    Claim,
    Verdict,
    direction,
    fmt,
    read_runs,
)
from mesa_dilemmas.dilemmas.binary.judges import PAPERS as PAPERS  # the paper's title
from mesa_dilemmas.dilemmas.binary.judges import (
    evolution_experiment,
    self_play_experiment,
    wins_by_attitude,
)
from mesa_dilemmas.dilemmas.binary.paper002 import (
    TABLE1,
    TABLE2,
    EvolutionResult,
    PublishedSelfPlay,
)

EXPERIMENTS = [
    self_play_experiment("pg_self_play", "public_goods"),
    evolution_experiment("pg_evolution", "public_goods"),
]


def judge_pg_rises(run_dir: Path) -> Verdict:
    runs = read_runs(run_dir)
    parts, statuses = [], []
    for n, cell in runs.groupby("group_size"):
        rho, p = stats.spearmanr(cell["frac_collective"], cell["normalised_payoff"])
        parts.append(f"n={n}: rho={fmt(rho)}")
        statuses.append(direction(float(rho), float(p)))
    status = (
        "reproduced"
        if all(s == "reproduced" for s in statuses)
        else "partly"
        if any(s != "not reproduced" for s in statuses)
        else "not reproduced"
    )
    return Verdict(
        ", ".join(parts),
        "Spearman correlation of the collective share and the normalised payoff, per group size",
        status,
    )


def judge_pg_exploitative_wins(run_dir: Path) -> Verdict:
    wins = wins_by_attitude(run_dir)
    exp = wins.get("exploitative", pd.Series(0, index=wins.index))
    total = wins.sum(axis=1)
    parts = [f"n={n}: exploitative wins {int(exp[n])}/{int(total[n])}" for n in wins.index]
    tests = [
        stats.binomtest(int(exp[n]), int(total[n]), 0.5, alternative="greater").pvalue
        for n in wins.index
    ]
    status = (
        "reproduced"
        if all(p < 0.05 for p in tests)
        else "partly"
        if all(exp > total / 2)
        else "not reproduced"
    )
    return Verdict(
        "; ".join(parts),
        "one-sided binomial test of exploitative wins against 1/2 per group size",
        status,
    )


CLAIMS = [
    Claim(
        "002",
        "Sec. 5.2, Fig. 2",
        "Public Goods: social welfare rises as more of the group follows collective strategies (reference sets stand in for LLM-written ones)",
        "pg_self_play",
        judge_pg_rises,
    ),
    Claim(
        "002",
        "Sec. 6.2, Table 2",
        "Public Goods cultural evolution: the exploitative attitude takes over at both group sizes",
        "pg_evolution",
        judge_pg_exploitative_wins,
    ),
]

#: the self-play claim on the authors' published sets, per model (``reproduce --strategies``)
PUBLISHED = PublishedSelfPlay(
    "Sec. 5.2, Fig. 2",
    "Public Goods: welfare rises with the collective share of the group",
    judge_pg_rises,
    "welfare rises with the collective share",
    {
        "claude-haiku-4-5": "all-exploitative groups at the minimum (everyone defects)",
        "deepseek-r1-distill-llama-70b": "good welfare even all-exploitative; the maximum when "
        "all are collective",
        "gemini-2.5-flash": "above the all-exploitative level only with a collective majority; "
        "slightly lower in larger groups",
        "gpt-5-mini": "above the all-exploitative level only with a collective majority; "
        "slightly lower in larger groups",
        "mistral-7b": "flat: the attitude makes no difference",
    },
)


#: paper 002's Table 1 for this game: (MPD collective, MPD exploitative, Cohen's d) per model
TABLE1["public_goods"] = {
    "claude-haiku-4-5": (1.5, 0.2, 1.4),
    "deepseek-r1-distill-llama-70b": (1.1, 1.6, 0.6),
    "gemini-2.5-flash": (0.4, 0.5, 1.6),
    "gpt-5-mini": (0.7, 0.5, 0.6),
    "llama3.1-70b": (1.5, 1.3, 0.6),
    "mistral-7b": (1.5, 1.5, 0.1),
}
#: paper 002's Table 2 for this game: winning genes and efficiency per group size
TABLE2["public_goods"] = {
    4: EvolutionResult({"claude-haiku-4-5/exploitative": 100}, 0.20),
    64: EvolutionResult({"claude-haiku-4-5/exploitative": 100}, 0.12),
}
