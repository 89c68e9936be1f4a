"""Paper 002's claims about the Public Goods game (``mesa-dilemmas reproduce``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from scipy import stats

from mesa_dilemmas.analysis.verdicts import (
    Claim,
    Verdict,
    combine_statuses,
    decide,
    p_text,
    power_binomial,
)
from mesa_dilemmas.dilemmas.binary.judges import PAPERS as PAPERS  # the paper's title
from mesa_dilemmas.dilemmas.binary.judges import (
    evolution_experiment,
    judge_welfare_flat,
    judge_welfare_rises,
    judge_worse_in_larger_groups,
    self_play_experiment,
    wins_by_attitude,
)
from mesa_dilemmas.dilemmas.binary.paper002 import (
    TABLE1,
    TABLE2,
    EvolutionResult,
    ModelClaim,
    PublishedSelfPlay,
)

EXPERIMENTS = [
    self_play_experiment("pg_self_play", "public_goods"),
    evolution_experiment("pg_evolution", "public_goods"),
]


def judge_pg_rises(run_dir: Path) -> Verdict:
    return judge_welfare_rises(run_dir)


def judge_pg_exploitative_wins(run_dir: Path) -> Verdict:
    """Table 2 (Public Goods): the exploitative attitude wins at every group size (the paper:
    100 of 100 runs at n = 4 and at n = 64); a two-sided binomial test against 1/2 per size,
    with its power at the paper's share of wins."""
    wins = wins_by_attitude(run_dir)
    exp = wins.get("exploitative", pd.Series(0, index=wins.index))
    total = wins.sum(axis=1)
    parts, statuses = [], []
    for n in wins.index:
        k, m = int(exp[n]), int(total[n])
        p = float(stats.binomtest(k, m, 0.5).pvalue)
        paper = TABLE2["public_goods"].get(int(n))
        share = 0.99 if paper is None else (sum(paper.winners.values()) + 1) / 102
        power = power_binomial(m, share, at=f"the paper's share of wins ({share:.0%})")
        statuses.append(decide(k / m - 0.5, p, power))
        parts.append(f"n={n}: exploitative wins {k}/{m} ({p_text(p)}, {power.text()})")
    return Verdict(
        "; ".join(parts),
        "two-sided binomial test of exploitative wins against 1/2 per group size",
        combine_statuses(statuses),
    )


PG_EVOLUTION_NOTE = (
    "the reference sets' exploitative attitude wins, but not as completely as the paper's "
    "Claude strategies: the full run (100 runs per group size) finds 69 of 100 at n = 4 and 100 "
    "of 100 at n = 64, both significantly more than half, where the paper has 100 of 100 at "
    "both.  The verdict is against the paper's share only when a run is too small to tell "
    "69% from 100%: at quick size (8 runs) 7 of 8 at n = 4 is not significant, and the "
    "paper's 100 of 100 would have given 8 of 8 with probability 0.92 (exact binomial), so "
    "the shortfall counts as a powered null there."
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
        note=PG_EVOLUTION_NOTE,
    ),
]

#: the self-play claim on the authors' published sets, per model (``reproduce --strategies``)
_RISES = "welfare rises with the collective share of the group"
PUBLISHED = PublishedSelfPlay(
    "Sec. 5.2, Fig. 2",
    "Public Goods self-play",
    "what the paper says of each model (Sec. 5.2)",
    {
        "claude-haiku-4-5": [
            ModelClaim(
                "all-exploitative groups at the minimum (everyone defects), so welfare rises "
                "with the collective share",
                judge_welfare_rises,
            )
        ],
        "deepseek-r1-distill-llama-70b": [
            ModelClaim(
                "good welfare even all-exploitative, the maximum when all are collective: "
                + _RISES,
                judge_welfare_rises,
            )
        ],
        "gemini-2.5-flash": [
            ModelClaim(
                "above the all-exploitative level only with a collective majority: " + _RISES,
                judge_welfare_rises,
            ),
            ModelClaim("slightly worse as the group grows", judge_worse_in_larger_groups),
        ],
        "gpt-5-mini": [
            ModelClaim(
                "above the all-exploitative level only with a collective majority: " + _RISES,
                judge_welfare_rises,
            ),
            ModelClaim("slightly worse as the group grows", judge_worse_in_larger_groups),
        ],
        "mistral-7b": [
            ModelClaim(
                "flat: the prompt's attitude makes no difference to welfare", judge_welfare_flat
            )
        ],
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
