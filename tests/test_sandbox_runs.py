"""Sandbox flags at run level: excluding offenders, evolution's summary, the analysis, the Mesa model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.binary.checks import screen_entries
from mesa_dilemmas.dilemmas.binary.cli import analyse
from mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution import CulturalEvolutionExperiment
from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.dilemmas.public_goods.model import PublicGoodsModel
from mesa_dilemmas.scenarios.config import load_scenario
from mesa_dilemmas.scenarios.experiment import RunContext

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

MIXED = '''
from mesa_dilemmas.dilemmas.binary.strategies import Strategy

NAME = "mixed"
ATTITUDE = "collective"


class Nice(Strategy):
    def act(self, history):
        return "C"


class Mirror(Strategy):
    def act(self, history):
        if history.is_first_round:
            return "C"
        return "C" if history.last_opponent_cooperators >= 1 else "D"


class LateCrash(Strategy):
    """Fine for three rounds, then raises."""

    def act(self, history):
        if history.round_number >= 3:
            raise RuntimeError("boom")
        return "C"


class Talker(Strategy):
    def act(self, history):
        return "yes"
'''


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    path = tmp_path / "mixed.py"
    path.write_text(MIXED)
    return path


def ctx(tmp_path: Path) -> RunContext:
    return RunContext(out_dir=tmp_path, processes=1, progress=False)


def test_screen_finds_exactly_the_offenders(mixed: Path) -> None:
    s = load_strategy_set(mixed)
    found = screen_entries(list(s), "public_goods")
    assert sorted(s[i].name for i in found) == ["LateCrash", "Talker"]
    assert "RuntimeError: boom" in found[2] and "'yes'" in found[3]
    assert screen_entries(list(s), "public_goods") == found  # no timing: the same every time


def test_self_play_flags_by_default_and_excludes_on_request(mixed: Path, tmp_path: Path) -> None:
    base = [
        "options.group_sizes=[4]",
        "options.samples=30",
        "options.splits=3",
        f"options.collective_set={json.dumps(str(mixed))}",
    ]
    sc, opts = load_scenario("public_goods/self_play", base)
    flagged = SelfPlayExperiment().run(sc, opts, ctx(tmp_path / "a")).summary
    assert set(flagged["flagged_strategies"]) == {"LateCrash", "Talker"}
    assert flagged["excluded_strategies"] == {"exploitative": {}, "collective": {}}
    sc, opts = load_scenario("public_goods/self_play", [*base, "options.exclude_flagged=true"])
    excluded = SelfPlayExperiment().run(sc, opts, ctx(tmp_path / "b")).summary
    assert excluded["flagged_strategies"] == {}
    assert set(excluded["excluded_strategies"]["collective"]) == {"LateCrash", "Talker"}


def test_cultural_evolution_summary_collects_flags(mixed: Path, tmp_path: Path) -> None:
    overrides = [
        "options.population=16",
        "options.survivors=4",
        "options.group_sizes=[4]",
        "options.runs=1",
        "options.max_generations=3",
        f"options.sets={json.dumps(['reference_exploitative', str(mixed)])}",
    ]
    sc, opts = load_scenario("public_goods/cultural_evolution", overrides)
    summary = CulturalEvolutionExperiment().run(sc, opts, ctx(tmp_path / "a")).summary
    assert set(summary["flagged_strategies"]) <= {"LateCrash", "Talker"}
    assert summary["flagged_strategies"], "the offenders played and were flagged"
    sc, opts = load_scenario(
        "public_goods/cultural_evolution", [*overrides, "options.exclude_flagged=true"]
    )
    summary = CulturalEvolutionExperiment().run(sc, opts, ctx(tmp_path / "b")).summary
    assert summary["flagged_strategies"] == {}
    assert set(summary["excluded_strategies"]["mixed"]) == {"LateCrash", "Talker"}


def test_analysis_lists_offenders_instead_of_aborting(mixed: Path, tmp_path: Path) -> None:
    result = analyse([str(mixed)], rollouts=2, references=False)
    assert set(result.offenders["mixed"]) == {"LateCrash", "Talker"}
    assert result.features["mixed"].shape[0] == 2
    out = tmp_path / "an"
    assert (
        main(
            [
                "analyse",
                "strategies",
                str(mixed),
                "--rollouts",
                "2",
                "--no-references",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["offenders"]["mixed"]) == {"LateCrash", "Talker"}


def test_mesa_model_reports_sandbox_flags(mixed: Path) -> None:
    model = PublicGoodsModel(
        n_players=4, rounds=5, strategies=(f"{mixed}:LateCrash", f"{mixed}:Nice"), rng=1
    )
    while model.running:
        model.step()
    metrics = model.final_metrics()
    assert metrics["flagged_strategies"] == 1 and "boom" in metrics["flag_reasons"]
    assert {f.strategy for f in model.sandbox_flags} == {"LateCrash"}


def test_check_api_contains_the_escape_corpus(tmp_path: Path, monkeypatch) -> None:
    """Issue 26's escape corpus through the check API (the screen behind exclude_flagged),
    aimed at this process: every escaper is found, nothing is written, nothing leaks."""
    import os

    key = "sk-test-Zq7Lw2Nx9Vb4Kd6Hs1Jt8Pm3Rc5Yf0GaUe"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    markers = tmp_path / "markers"
    markers.mkdir()
    (markers / "victim.txt").write_text("original")
    (markers / "run_pid").write_text(str(os.getpid()))
    code = (Path(__file__).parent / "strategy_corpus" / "escape.py").read_text()
    (tmp_path / "escape.py").write_text(
        code.replace("@MARKER_DIR@", str(markers)).replace("@KEY@", key)
    )
    s = load_strategy_set(tmp_path / "escape.py")
    found = screen_entries(list(s), "public_goods", sizes=(4,), rounds=3, matches=1)
    assert sorted(s[i].name for i in found) == sorted(e.name for e in s if e.name != "Control")
    text = " ".join(found.values())
    assert "LEAK" not in text and key[:10] not in text and key.encode().hex()[:16] not in text
    assert sorted(p.name for p in markers.iterdir()) == ["run_pid", "victim.txt"]
    assert (markers / "victim.txt").read_text() == "original"
