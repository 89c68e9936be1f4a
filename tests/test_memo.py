"""Memoising deterministic strategies by history: found by the checks, identical results, hits."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from mesa_dilemmas.dilemmas.binary import sandboxed as sb
from mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution import CulturalEvolutionExperiment
from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment
from mesa_dilemmas.dilemmas.binary.experiments.strategy_writing import mark_determinism
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.sandbox import close_all
from mesa_dilemmas.scenarios.config import load_scenario
from mesa_dilemmas.scenarios.experiment import RunContext

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

GENERATED = Path(__file__).parent / "strategy_corpus" / "generated"


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("generated")
    shutil.copytree(GENERATED, root, dirs_exist_ok=True)
    out = {}
    for attitude in ("collective", "exploitative"):
        mark_determinism(root / attitude, "public_goods")
        out[attitude] = root / attitude
    return out


@pytest.fixture
def memo_switch():
    yield sb.set_memoise
    sb.set_memoise(True)


def test_checks_find_the_deterministic_and_the_anonymous(marked: dict[str, Path]) -> None:
    entries = {e.name: e for a in marked.values() for e in load_strategy_set(a)}
    assert {n for n, e in entries.items() if not e.deterministic} == {"CautiousStarter", "Gambler"}
    # Opportunist compares its total with the best single player's: not blind to seats
    assert {n for n, e in entries.items() if e.deterministic and not e.anonymous} == {"Opportunist"}


def _self_play(marked: dict[str, Path], tmp_path: Path) -> tuple[pd.DataFrame, dict]:
    sc, opts = load_scenario(
        "public_goods/self_play",
        [
            "options.group_sizes=[4, 8]",
            "options.samples=40",
            "options.splits=3",
            f"options.collective_set={json.dumps(str(marked['collective']))}",
            f"options.exploitative_set={json.dumps(str(marked['exploitative']))}",
        ],
    )
    res = SelfPlayExperiment().run(sc, opts, RunContext(tmp_path, 1, False))
    return res.runs, res.summary


def test_memoised_self_play_is_identical(
    marked: dict[str, Path], tmp_path: Path, memo_switch
) -> None:
    memo_switch(False)
    plain, s_plain = _self_play(marked, tmp_path / "a")
    memo_switch(True)
    close_all()  # fresh workers (one per strategy file): their memos start empty
    memo, s_memo = _self_play(marked, tmp_path / "b")
    pd.testing.assert_frame_equal(plain, memo)
    assert s_plain["memo"]["hits"] == 0
    assert s_memo["memo"]["hit_rate"] > 0.3, s_memo["memo"]


def test_memoised_evolution_is_identical(
    marked: dict[str, Path], tmp_path: Path, memo_switch
) -> None:
    sc, opts = load_scenario(
        "public_goods/cultural_evolution",
        [
            "options.population=32",
            "options.survivors=4",
            "options.group_sizes=[4]",
            "options.runs=1",
            "options.max_generations=4",
            f"options.sets={json.dumps([str(p) for p in marked.values()])}",
        ],
    )
    out = []
    for on in (False, True):
        memo_switch(on)
        out.append(CulturalEvolutionExperiment().run(sc, opts, RunContext(tmp_path, 1, False)))
    pd.testing.assert_frame_equal(out[0].runs, out[1].runs)
    pd.testing.assert_frame_equal(out[0].steps, out[1].steps)
    assert out[1].summary["memo"]["hits"] > 0
