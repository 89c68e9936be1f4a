"""Paper 002's claims about the Collective Risk game (``mesa-dilemmas reproduce``)."""

from __future__ import annotations

from pathlib import Path

from mesa_dilemmas.analysis.verdicts import Claim, Verdict
from mesa_dilemmas.dilemmas.binary.judges import PAPERS as PAPERS  # the paper's title
from mesa_dilemmas.dilemmas.binary.judges import (
    judge_interior_peak,
    judge_worse_in_larger_groups,
    self_play_experiment,
)
from mesa_dilemmas.dilemmas.binary.paper002 import (
    TABLE1,
    TABLE2,
    EvolutionResult,
    ModelClaim,
    PublishedSelfPlay,
)

EXPERIMENTS = [self_play_experiment("cr_self_play", "collective_risk")]


CR_PEAK_NOTE = (
    "over-cooperation appears from n = 16 on and grows with the group (full run: the best "
    "share below 100% beats 100% collective by 0.12 at n = 16, 0.24 at n = 64, 0.34 at "
    "n = 256, each p < 1e-4), but in groups of four a fully collective group does best (2.00 "
    "against 1.92 at 75%, p = 0.045), so the claim fails at one of the paper's group sizes.  "
    "The reference collective set mixes unconditional and conditional cooperators (why that "
    "favours full cooperation in groups of four is not measured separately).  The paper's "
    "clearest peaks (at about half collective) come "
    "from LLM-written collective strategies that cooperate regardless.  Point "
    "options.collective_set at LLM-written sets to test the claim as the paper makes it."
)


def judge_cr_peak(run_dir: Path) -> Verdict:
    return judge_interior_peak(run_dir)


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
_PEAK = "welfare peaks below a fully collective group (over-cooperation)"
_WORSE = ModelClaim("worse as the group grows", judge_worse_in_larger_groups)
PUBLISHED = PublishedSelfPlay(
    "Sec. 5.2, Fig. 3",
    "Collective Risk self-play",
    "what the paper says of each model (Sec. 5.2)",
    {
        "claude-haiku-4-5": [
            ModelClaim("best near half collective: " + _PEAK, judge_interior_peak),
            _WORSE,
        ],
        "gemini-2.5-flash": [
            ModelClaim("best near half collective: " + _PEAK, judge_interior_peak),
            _WORSE,
        ],
        "deepseek-r1-distill-llama-70b": [
            ModelClaim(
                "over-cooperation in groups with a collective majority: " + _PEAK,
                judge_interior_peak,
            )
        ],
        "gpt-5-mini": [
            ModelClaim(
                "very poor welfare at n = 16, 64 and 256 (rota-based strategies): worse in "
                "larger groups",
                judge_worse_in_larger_groups,
            )
        ],
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
