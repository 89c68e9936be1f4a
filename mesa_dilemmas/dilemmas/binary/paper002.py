"""Paper 002's published numbers, and the judges that put ours beside them when its claims run on
the authors' own strategy files (``mesa-dilemmas reproduce --strategies PATH``).

The numbers are the paper's (Table 1: Cohen's d and MPD per model, attitude and game; Table 2:
winning genes, welfare efficiency; Figure 1: the PCA's explained variance); model names are the
authors' file stems (``strategies/<game>/<model>.py``).  What each game claims about its
self-play, and how it is judged, is in the game's ``claims.py`` (``PUBLISHED``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scipy import stats

from mesa_dilemmas.analysis.verdicts import (
    Status,
    Verdict,
    combine_statuses,
    decide,
    p_text,
    power_binomial,
    read_runs,
)

#: the authors' file stems -> the paper's model names
MODEL_NAMES = {
    "claude-haiku-4-5": "Claude Haiku 4.5",
    "deepseek-r1-distill-llama-70b": "DeepSeek R1",
    "gemini-2.5-flash": "Gemini 2.5 Flash",
    "gpt-5-mini": "GPT 5 Mini",
    "llama3.1-70b": "Llama 3.1 70b",
    "mistral-7b": "Mistral 7b",
}

#: Table 1: (MPD collective, MPD exploitative, Cohen's d) per model, for each game; each game's
#: ``claims.py`` adds its own rows (this family library names no game)
TABLE1: dict[str, dict[str, tuple[float, float, float]]] = {}

#: Figure 1: variance explained by the first two principal components (all six models)
PCA_EXPLAINED = (0.655, 0.090)


@dataclass(frozen=True)
class EvolutionResult:
    """Table 2 for one game and group size: winning genes (model/attitude -> runs of 100) and
    the welfare efficiency of the final generation."""

    winners: Mapping[str, int]
    efficiency: float

    @property
    def attitude(self) -> str:
        """The attitude that won most runs."""
        by: dict[str, int] = {}
        for gene, count in self.winners.items():
            attitude = gene.rpartition("/")[2]
            by[attitude] = by.get(attitude, 0) + count
        return max(by, key=lambda a: by[a])

    def text(self) -> str:
        top = sorted(self.winners.items(), key=lambda kv: -kv[1])
        return ", ".join(f"{g} {c}/100" for g, c in top) + f"; efficiency {self.efficiency:.0%}"


#: Table 2 per game and group size (each game's ``claims.py`` adds its own)
TABLE2: dict[str, dict[int, EvolutionResult]] = {}


@dataclass(frozen=True)
class ModelClaim:
    """What the paper says about one model's self-play in one game, and the judge of exactly
    that (a flat model by flatness, the paper's named exception as the exception)."""

    said: str
    judge: Callable[[Path], Verdict]


@dataclass(frozen=True)
class PublishedSelfPlay:
    """A game's self-play claims (Figs. 2-4) as run on the published sets: per model, what the
    paper says of it and the judge of that; a model the paper says nothing specific about is
    listed and not judged."""

    where: str
    statement: str
    paper: str
    per_model: Mapping[str, Sequence[ModelClaim]] = field(default_factory=dict)

    def claims_for(self, model: str) -> list[ModelClaim]:
        return list(self.per_model.get(model, ()))

    def unstated(self, model: str) -> str:
        if model not in MODEL_NAMES:
            return "this model is not in the paper: not judged"
        return "the paper states nothing specific about this model in this game: not judged"


def _share(result: EvolutionResult) -> float:
    """The share of the paper's runs its winning attitude won, as a rate (Laplace's rule, so
    100 of 100 is a rate below 1 and its test's power is finite)."""
    attitude = result.attitude
    won = sum(c for g, c in result.winners.items() if g.rpartition("/")[2] == attitude)
    total = sum(result.winners.values())
    return (won + 1) / (total + 2)


def judge_evolution(run_dir: Path, game: str) -> Verdict:
    """Table 2: the attitude that wins most runs, per group size, against the paper's: a
    binomial test against 1/2 (reproduced: significantly more wins for the paper's attitude;
    not reproduced: significantly fewer, or a null the test had the power to see at the
    paper's share of wins); our winning genes and final welfare efficiency beside the paper's."""
    runs = read_runs(run_dir)
    paper = TABLE2.get(game, {})
    parts: list[str] = []
    statuses: list[Status] = []
    for n, cell in runs.groupby("group_size"):
        counts = cell["winner"].value_counts()
        top = ", ".join(f"{g} {c}/{len(cell)}" for g, c in counts.items())
        eff = float(cell["welfare_efficiency"].mean())
        parts.append(f"n={n}: {top}; efficiency {eff:.0%}")
        expected = paper.get(int(n))
        if expected is None:
            continue
        hits = int((cell["winner_attitude"] == expected.attitude).sum())
        p = float(stats.binomtest(hits, len(cell), 0.5).pvalue)
        share = _share(expected)
        power = power_binomial(len(cell), share, at=f"the paper's share of wins ({share:.0%})")
        status = decide(hits / len(cell) - 0.5, p, power)
        statuses.append(status)
        parts[-1] += f" ({expected.attitude} wins {hits}/{len(cell)}, {p_text(p)}, {power.text()})"
    return Verdict(
        "; ".join(parts),
        "per group size: runs won by the paper's winning attitude, two-sided binomial test "
        "against 1/2",
        combine_statuses(statuses) if statuses else "not run",
    )


def paper_evolution_text(game: str) -> str:
    return "; ".join(f"n={n}: {r.text()}" for n, r in TABLE2.get(game, {}).items())


def table1_row(game: str, model: str) -> tuple[float, float, float] | None:
    return TABLE1.get(game, {}).get(model)


def d_text(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.1f}"
