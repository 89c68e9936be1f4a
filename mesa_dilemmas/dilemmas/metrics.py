"""Metrics shared by several games (inequality, summaries)."""

from __future__ import annotations

import numpy as np


def gini(values: np.ndarray | list[float]) -> float:
    """Gini coefficient of non-negative values (negatives are clipped to 0); 0 for empty/all-zero."""
    x = np.clip(np.asarray(values, dtype=float), 0.0, None)
    n = x.size
    if n == 0 or x.sum() == 0:
        return 0.0
    x = np.sort(x)
    index = np.arange(1, n + 1)
    return float((2.0 * np.sum(index * x) / (n * x.sum())) - (n + 1) / n)


def mean_sem(values: np.ndarray | list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (sem 0 for fewer than two values)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan")
    sem = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0
    return float(x.mean()), sem
