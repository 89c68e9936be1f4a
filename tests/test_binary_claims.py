"""Paper 002's judges say what their own numbers show (constructed run data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mesa_dilemmas.dilemmas.common_pool.claims import judge_cp_group_size


def _runs(tmp_path: Path, efficiency: dict[int, float], noise: float = 0.05) -> Path:
    """A self-play's runs.parquet whose all-collective groups reach ``efficiency[n]`` on average
    (plus rows at other splits, which the judge must ignore)."""
    spread = noise * np.linspace(-1, 1, 40)  # symmetric: the means are exact
    rows = []
    for n, eff in efficiency.items():
        lo, hi = 0.2, 2.1
        for frac, level in ((1.0, eff), (0.5, 1 - eff), (0.0, 0.0)):
            for x in level + spread:
                rows.append(
                    {
                        "group_size": n,
                        "frac_collective": frac,
                        "normalised_payoff": lo + x * (hi - lo),
                        "min_possible": lo,
                        "max_possible": hi,
                    }
                )
    tmp_path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(tmp_path / "runs.parquet")
    return tmp_path


@pytest.mark.parametrize(
    ("efficiency", "status", "trend"),
    [
        ({4: 0.95, 16: 0.6, 64: 0.23}, "reproduced", "falls by 72%"),  # the paper: worse as n grows
        ({4: 0.90, 16: 0.92, 64: 0.94}, "not reproduced", "rises by 4%"),
        ({4: 0.5, 16: 0.8, 64: 0.95}, "not reproduced", "rises by 45%"),
    ],
)
def test_the_cpr_group_size_judge_follows_its_numbers(
    tmp_path: Path, efficiency: dict[int, float], status: str, trend: str
) -> None:
    v = judge_cp_group_size(_runs(tmp_path, efficiency))
    assert v.status == status
    assert trend in v.ours
    for n, eff in efficiency.items():  # the numbers shown are the means per group size
        assert f"n={n}: {eff:.0%}" in v.ours


def test_a_fall_within_the_noise_is_a_null_judged_by_its_power(tmp_path: Path) -> None:
    # 120 all-collective groups: a test that would see a medium correlation 92% of the time
    # found none, so the paper's fall is not reproduced (with the power stated)
    v = judge_cp_group_size(_runs(tmp_path / "many", {4: 0.80, 16: 0.795, 64: 0.79}, noise=0.2))
    assert v.status == "not reproduced" and "power 0.92" in v.test
    # 8 groups: too few to see it, so the null says nothing: inconclusive, with what it needs
    runs = pd.read_parquet(tmp_path / "many" / "runs.parquet")
    few = runs[runs["frac_collective"] == 1.0].groupby("group_size").head(4)
    (tmp_path / "few").mkdir()
    few.to_parquet(tmp_path / "few" / "runs.parquet")
    v = judge_cp_group_size(tmp_path / "few")
    assert v.status == "inconclusive" and "80% power needs about" in v.test
