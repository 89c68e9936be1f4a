"""The fishery calibration stays runnable: its objective, one tiny evaluation, the neighbourhood
of the robustness check, and the script's command line."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from mesa_dilemmas.dilemmas.fishery import calibration as cal

SCRIPT = Path(__file__).parent.parent / "scripts" / "calibrate_fishery.py"


def test_objective_clips_each_finding_to_plus_minus_three():
    assert cal.objective({"shock": 10.0, "beta": -10.0, "harsh": 1.0, "rich": 0.5}) == 1.5
    assert set(cal.OPEN) >= {"catchability", "consumption", "initial_wealth", "collapse_threshold"}


def test_a_tiny_evaluation_gives_one_finite_effect_per_finding():
    z = cal.effects(3, {})
    assert set(z) == set(cal.FINDINGS) and all(math.isfinite(v) for v in z.values())


def test_the_neighbourhood_moves_one_open_parameter_by_a_quarter_each_time():
    centre = {k: v[0] for k, v in cal.OPEN.items()}
    around = cal.neighbourhood(centre)
    assert len(around) == 2 * len(cal.OPEN)
    for label, point in around:
        moved = [k for k in point if point[k] != centre[k]]
        assert len(moved) == 1 and label.startswith(moved[0])
        assert point[moved[0]] / centre[moved[0]] in (0.75, 1.25)


def test_robustness_counts_agree_with_the_effects_it_reports():
    r = cal.Robustness(
        1,
        {},
        {"shock": 1.0},
        [("a x0.75", {}, {"shock": 2.0}), ("a x1.25", {}, {"shock": -0.5})],
    )
    assert (r.held("shock"), r.significant("shock")) == (1, 1)
    assert r.failures("shock") == ["a x1.25 (z = -0.5)"]


def test_the_script_prints_one_point(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "check", "--reps", "2"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    assert "objective=" in out and all(f"{f}=" in out for f in cal.FINDINGS)
