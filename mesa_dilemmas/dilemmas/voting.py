"""Collective choice: the median-voter rule for numbers and plurality voting for proposals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np


def median_vote(proposals: Sequence[float]) -> float:
    """Median-voter rule for numeric caps (the Condorcet winner under single-peaked preferences)."""
    if not proposals:
        raise ValueError("median_vote needs at least one proposal")
    return float(np.median(np.asarray(proposals, dtype=float)))


def plurality_vote(votes: Sequence[str], rng: np.random.Generator) -> str:
    """The proposal with most votes; a tie is broken uniformly at random among the leaders."""
    if not votes:
        raise ValueError("plurality_vote needs at least one vote")
    counts = Counter(votes)
    top = max(counts.values())
    leaders = sorted(p for p, c in counts.items() if c == top)
    return leaders[int(rng.integers(len(leaders)))] if len(leaders) > 1 else leaders[0]
