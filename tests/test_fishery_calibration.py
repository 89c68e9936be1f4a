"""scripts/calibrate_fishery.py stays runnable: its objective and one tiny evaluation."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "scripts" / "calibrate_fishery.py"


def load():
    spec = importlib.util.spec_from_file_location("calibrate_fishery", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_objective_clips_each_finding_to_plus_minus_three():
    cal = load()
    assert cal.objective({"shock": 10.0, "beta": -10.0, "harsh": 1.0, "rich": 0.5}) == 1.5
    assert set(cal.OPEN) >= {"catchability", "consumption", "initial_wealth", "collapse_threshold"}


def test_a_tiny_evaluation_gives_one_finite_effect_per_finding():
    cal = load()
    z = cal.effects(3, {})
    assert set(z) == set(cal.FINDINGS) and all(math.isfinite(v) for v in z.values())
