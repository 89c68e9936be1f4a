"""Verdicts that mean one thing: reproduced only when significant in the paper's direction; a
null is "not reproduced" only when the test had the power to see the paper's effect, else
inconclusive (with the replications it would need); a claim the players encode is "by
construction", never reproduced; a claim that cannot fail (a tie at the cap) is not testable;
each judge of papers 002 and 003 tests what the paper says (constructed run data)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mesa_dilemmas.analysis.verdicts import (
    POWER,
    Claim,
    Verdict,
    combine_statuses,
    decide,
    power_binomial,
    power_paired,
    power_two_sample,
)
from mesa_dilemmas.dilemmas.binary.judges import (
    judge_full_collective_at_max,
    judge_interior_peak,
    judge_welfare_flat,
    judge_worse_in_larger_groups,
)
from mesa_dilemmas.dilemmas.fishery.claims import (
    CLAIMS as FISHERY_CLAIMS,
)
from mesa_dilemmas.dilemmas.fishery.claims import (
    judge_altruism_rich,
    judge_altruism_rich_selfish,
    judge_beta_survival,
    judge_shock_compliance,
)
from mesa_dilemmas.reproduction import Outcome, Report, judge, write_report


def _rng() -> np.random.Generator:
    return np.random.default_rng(35)  # each helper its own seeded stream: order-independent


def test_decide_reads_significance_direction_and_power() -> None:
    strong, weak = power_paired(100), power_paired(6)
    assert strong.power > POWER > weak.power
    assert decide(+0.3, 0.01) == "reproduced"
    assert decide(-0.3, 0.01) == "not reproduced"  # significant the other way
    assert decide(+0.01, 0.6, strong) == "not reproduced"  # a null the test could have seen
    assert decide(+0.01, 0.6, weak) == "inconclusive"  # a null it could not
    assert decide(+0.01, 0.6) == "inconclusive"  # no power known: no verdict against


def test_power_is_statsmodels_at_the_stated_effect() -> None:
    # a paired t-test needs 34 pairs for 80% power at d = 0.5 (Cohen's tables)
    p = power_paired(34)
    assert p.power == pytest.approx(0.81, abs=0.01) and math.ceil(p.needed) == 34
    assert "34 pairs" in p.text() and "d = 0.5" in p.text()
    # two samples of 64 per arm: 80% at d = 0.5
    assert power_two_sample(64, 64).power == pytest.approx(0.80, abs=0.01)
    # a binomial test of 10 runs sees a 99% winner almost surely; of 2 runs, never
    assert power_binomial(10, 0.99).power > 0.99 and power_binomial(2, 0.99).power < POWER


def test_parts_over_the_papers_range_combine() -> None:
    assert combine_statuses(["reproduced", "reproduced"]) == "reproduced"
    assert combine_statuses(["reproduced", "inconclusive"]) == "inconclusive"
    assert combine_statuses(["reproduced", "not reproduced"]) == "not reproduced"
    assert combine_statuses(["not testable", "reproduced"]) == "reproduced"
    assert combine_statuses(["not testable"]) == "not testable"


def _reproduced(run_dir: Path) -> Verdict:
    return Verdict("x", "a test", "reproduced", z=3.0)


def test_a_claim_the_players_encode_is_by_construction_never_reproduced(tmp_path) -> None:
    claim = Claim(
        "003",
        "Fig. 0",
        "A finding the rule players were tuned to show",
        "exp",
        _reproduced,
        by_construction=("the preset's dirty_bias 1.4",),
    )
    verdict = judge(claim, tmp_path)
    assert (verdict.status, verdict.judged) == ("by construction", "reproduced")
    report = Report("tiny", streams=1)
    report.outcomes.append(Outcome(claim, verdict, tmp_path, streams=[verdict]))
    path = write_report(report, tmp_path, {})
    text = path.read_text()
    counts = next(line for line in text.splitlines() if line.startswith("Verdicts: "))
    assert counts == "Verdicts: **by construction** 1."  # not counted as reproduced
    assert "dirty_bias 1.4" in text  # the report names what encodes it
    plain = Claim("003", "Fig. 0", "The same, emergent", "exp", _reproduced)
    assert judge(plain, tmp_path).status == "reproduced"


def _altruism_runs(tmp_path: Path, rich: dict[float, list[float]]) -> Path:
    rows = []
    for ratio, values in rich.items():
        rows += [{"altruism_ratio": ratio, "growth_rate": 0.6, "survival_time": v} for v in values]
        rows += [{"altruism_ratio": ratio, "growth_rate": 0.2, "survival_time": 10.0 + ratio}]
    tmp_path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(tmp_path / "runs.parquet")
    (tmp_path / "config.toml").write_text("max_steps = 100\n")
    return tmp_path


def test_a_tie_at_the_round_cap_is_not_testable_not_a_zero(tmp_path) -> None:
    tied = _altruism_runs(tmp_path / "tied", {a: [100.0] * 30 for a in (0.0, 0.5, 1.0)})
    for judge_fn in (judge_altruism_rich, judge_altruism_rich_selfish):
        v = judge_fn(tied)
        assert v.status == "not testable" and v.z is None and "100-round cap" in v.test
    # below the cap the same tie is a null the test can judge (here: powered, so against)
    low = _altruism_runs(tmp_path / "low", {a: [60.0] * 30 for a in (0.0, 0.5, 1.0)})
    assert judge_altruism_rich_selfish(low).status in ("not reproduced", "inconclusive")
    # and a real ordering is reproduced
    spread = list(_rng().normal(0, 3, 30))
    ordered = _altruism_runs(
        tmp_path / "ordered",
        {
            0.0: [70 + x for x in spread],
            0.5: [90 + x for x in spread],
            1.0: [50 + x for x in spread],
        },
    )
    assert judge_altruism_rich(ordered).status == "reproduced"
    assert judge_altruism_rich_selfish(ordered).status == "reproduced"


def _shock_steps(tmp_path: Path, drop: dict[float, float], n: int = 40) -> Path:
    rng, rows = _rng(), []
    for beta, d in drop.items():
        for i in range(n):
            base = 0.6 + 0.1 * rng.standard_normal()
            for off_at, level in ((0, base), (15, base - d + 0.02 * rng.standard_normal())):
                for step in range(16, 26):
                    rows.append(
                        {
                            "penalty": beta,
                            "Step": step,
                            "iteration": i,
                            "punishment_off_at": off_at,
                            "compliance": level,
                        }
                    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(tmp_path / "steps.parquet")
    return tmp_path


def test_fig2_is_judged_at_both_penalties_the_paper_shows(tmp_path) -> None:
    both = judge_shock_compliance(_shock_steps(tmp_path / "both", {10.0: 0.1, 14.0: 0.1}))
    assert both.status == "reproduced" and "beta=10" in both.ours and "beta=14" in both.ours
    # the fall at beta = 10 only: at beta = 14 a powered null, so the claim is not reproduced
    one = judge_shock_compliance(_shock_steps(tmp_path / "one", {10.0: 0.1, 14.0: 0.0}))
    assert one.status == "not reproduced" and "power" in one.test


def test_fig3_leaves_out_a_growth_rate_where_every_run_ties(tmp_path) -> None:
    rng, rows = _rng(), []
    for beta in (2.0, 10.0, 18.0):
        for _ in range(20):
            rows.append({"growth_rate": 0.3, "penalty": beta, "survival_time": beta + rng.normal()})
            rows.append({"growth_rate": 0.6, "penalty": beta, "survival_time": 100.0})
    tmp_path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(tmp_path / "runs.parquet")
    v = judge_beta_survival(tmp_path)
    assert v.status == "reproduced" and "left out, tied: r=0.6" in v.test and "1 rates" in v.test


def _self_play(tmp_path: Path, welfare, sizes=(4, 16, 64), shares=(0.0, 0.5, 1.0), n=40) -> Path:
    rng, rows = _rng(), []
    for size in sizes:
        for share in shares:
            for _ in range(n):
                rows.append(
                    {
                        "group_size": size,
                        "frac_collective": share,
                        "normalised_payoff": welfare(size, share) + 0.02 * rng.standard_normal(),
                        "min_possible": 0.0,
                        "max_possible": 1.0,
                    }
                )
    tmp_path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(tmp_path / "runs.parquet")
    return tmp_path


def test_a_model_the_paper_calls_flat_is_judged_by_flatness(tmp_path) -> None:
    flat = judge_welfare_flat(_self_play(tmp_path / "flat", lambda n, s: 0.5))
    assert flat.status == "reproduced" and "equivalence" in flat.test
    rising = judge_welfare_flat(_self_play(tmp_path / "rising", lambda n, s: 0.3 + 0.5 * s))
    assert rising.status == "not reproduced"


def test_worse_in_larger_groups_follows_the_sign(tmp_path) -> None:
    worse = judge_worse_in_larger_groups(
        _self_play(tmp_path / "w", lambda n, s: 0.9 - 0.1 * np.log2(n))
    )
    better = judge_worse_in_larger_groups(
        _self_play(tmp_path / "b", lambda n, s: 0.2 + 0.05 * np.log2(n))
    )
    assert (worse.status, better.status) == ("reproduced", "not reproduced")


def test_over_cooperation_needs_a_peak_below_full_at_every_size(tmp_path) -> None:
    peak = judge_interior_peak(_self_play(tmp_path / "p", lambda n, s: 0.8 - (s - 0.5) ** 2))
    assert peak.status == "reproduced"
    # best when all cooperate at n = 4: significantly the other way there
    mixed = judge_interior_peak(
        _self_play(tmp_path / "m", lambda n, s: s if n == 4 else 0.8 - (s - 0.5) ** 2)
    )
    assert mixed.status == "not reproduced" and "n=4" in mixed.ours


def test_the_papers_named_exception_is_judged_as_the_exception(tmp_path) -> None:
    at_max = judge_full_collective_at_max(_self_play(tmp_path / "a", lambda n, s: 0.99 * s))
    assert at_max.status == "reproduced"
    falls = judge_full_collective_at_max(
        _self_play(tmp_path / "f", lambda n, s: s * (1.0 - 0.1 * np.log2(n)))
    )
    assert falls.status == "not reproduced"


def test_every_fishery_claim_that_can_fail_says_why_it_may_not_reproduce() -> None:
    missing = [c.key for c in FISHERY_CLAIMS if not c.note and c.key != "altruism_harsh"]
    assert missing == ["shock_stock"]  # reproduced on every stream of the full run


def test_a_verdict_that_holds_on_some_streams_only_says_so_and_why(tmp_path) -> None:
    claim = Claim("003", "Fig. 0", "A fragile finding", "exp", _reproduced, note="it is small.")
    held = Verdict("x", "a test", "reproduced")
    report = Report("quick", streams=2)
    report.outcomes.append(
        Outcome(claim, held, tmp_path, streams=[held, Verdict("y", "a test", "not reproduced")])
    )
    text = write_report(report, tmp_path, {}).read_text()
    assert "| a test | 1/2 | **reproduced** |" in text
    assert "(reproduced): reproduced on 1/2 seed streams only: it is small." in text
    steady = Report("quick", streams=2)
    steady.outcomes.append(Outcome(claim, held, tmp_path, streams=[held, held]))
    assert "and why" not in write_report(steady, tmp_path, {}).read_text()
