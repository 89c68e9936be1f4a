"""Issue 36, the time family: no strategy keeps a run waiting past its limits.

A sleeper that touches the progress page (so no call ever looks stuck) is stopped by its idle
budget over the run; a finaliser that stalls is stopped by the per-call wall limit and blamed
on its owner; a strategy no budget stops is stopped by the run's deadline -- as a batch, and
as a self-play that ends in one line, keeps its finished tasks and resumes.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.sandbox import (
    DeadlinePassed,
    SandboxLimits,
    get_limits,
    set_deadline,
    set_limits,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus"


@pytest.fixture
def limits():
    old = get_limits()
    set_limits(
        SandboxLimits(
            call_cpu=0.5, match_cpu=20.0, wall_factor=4.0, call_wall=1.0, strategy_idle=2.0
        )
    )
    yield
    set_limits(old)
    set_deadline(None)


def _load(tmp: Path, name: str, folder: str = "time"):
    path = tmp / f"{name}.py"
    shutil.copy(CORPUS / folder / f"{name}.py", path)
    return list(load_strategy_set(path))


def _lineups(hostile, innocent):
    a, b, c = innocent
    return [[a, b, c], [b, c, a], [hostile, a, b], [c, hostile, a]]


def _check(result, baseline, name: str, why: str) -> None:
    flagged = {f.strategy: f.reason for f in result.flags}
    assert set(flagged) == {name}, flagged
    assert why in flagged[name], flagged
    np.testing.assert_array_equal(result.totals[:2], baseline.totals)


@pytest.fixture
def innocent(tmp_path: Path, limits):
    strategies = _load(tmp_path, "innocent", "protocol")
    game = make_game("public_goods", 3, 5)
    baseline = play_batch(game, _lineups(None, strategies)[:2], np.arange(2))
    return strategies, game, baseline


def test_sleeper_touching_its_progress_is_stopped_by_its_budget(tmp_path, innocent) -> None:
    strategies, game, baseline = innocent
    (sleeper,) = _load(tmp_path, "sleeper")
    t0 = time.monotonic()
    result = play_batch(game, _lineups(sleeper, strategies), np.arange(4))
    # unbounded, its two matches would take 2 x 5 rounds x 0.5 s; the budget is 2 s idle
    assert time.monotonic() - t0 < 30
    _check(result, baseline, "Sleeper", "budget of 2 s of wall-clock time spent not computing")


def test_stalling_finaliser_is_bounded_and_blamed_on_its_owner(tmp_path, innocent) -> None:
    strategies, game, baseline = innocent
    (stalling,) = _load(tmp_path, "stalling_finaliser")
    result = play_batch(game, _lineups(stalling, strategies), np.arange(4))
    _check(result, baseline, "StallingFinaliser", "wall-clock time limit of 1 s for one call")


def test_the_runs_deadline_stops_what_no_budget_stops(tmp_path, innocent) -> None:
    strategies, game, _ = innocent
    set_limits(SandboxLimits(call_cpu=0.5, call_wall=1.0, strategy_idle=1e9))
    (patient,) = _load(tmp_path, "patient")
    set_deadline(time.time() + 2.0)
    t0 = time.monotonic()
    with pytest.raises(DeadlinePassed):
        play_batch(game, _lineups(patient, strategies), np.arange(4))
    assert time.monotonic() - t0 < 2.0 + 5.0  # the deadline, plus ending the workers


SCENARIO = """
description = "a self-play with a deadline"
experiment = "self_play:SelfPlayExperiment"
game = "public_goods"
seed = 3
processes = 1

[options]
exploitative_set = "{patient}"
collective_set = "{innocent}"
group_sizes = [3, 4]
samples = 2
rounds = 3
deadline = {deadline}
"""


def test_self_play_past_its_deadline_ends_in_one_line_and_resumes(tmp_path, limits) -> None:
    from mesa_dilemmas.cli import main

    set_limits(SandboxLimits(call_cpu=0.5, call_wall=1.0, strategy_idle=1e9))
    innocent = tmp_path / "innocent.py"
    shutil.copy(CORPUS / "protocol" / "innocent.py", innocent)
    patient = tmp_path / "patient.py"
    # answers at once in the (costlier, first) four-player tasks, sleeps for ever in threes
    shutil.copy(CORPUS / "time" / "patient_in_small_groups.py", patient)
    config = tmp_path / "deadline.toml"
    config.write_text(SCENARIO.format(patient=patient, innocent=innocent, deadline=8))
    out = tmp_path / "out"
    t0 = time.monotonic()
    code = main(["run", str(config), "--out", str(out), "--processes", "1", "--no-progress"])
    assert code == 2 and time.monotonic() - t0 < 8 + 20
    kept = sorted((out / "tasks").glob("*.json"))
    assert len(kept) == 5  # the five four-player splits finished before the deadline
    # with the strategy replaced by one that answers at once, --resume plays the rest only
    patient.write_text(
        "from mesa_dilemmas.dilemmas.binary.strategies import Strategy\n\n"
        "class PatientInSmallGroups(Strategy):\n    def act(self, history):\n        return 'D'\n"
    )
    from mesa_dilemmas.dilemmas.binary.strategies import loader

    loader._load_cached.cache_clear()
    stamps = {p.name: p.stat().st_mtime_ns for p in kept}
    assert (
        main(["run", str(config), "--resume", str(out), "--processes", "1", "--no-progress"]) == 0
    )
    assert {p.name: p.stat().st_mtime_ns for p in kept} == stamps  # not played again
    assert len(list((out / "tasks").glob("*.json"))) == 5 + 4
    assert (out / "summary.json").is_file()
