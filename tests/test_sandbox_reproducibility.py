"""Issue 36, reproducibility: unseeded generators give the same table under the same seed.

The strategies in ``tests/strategy_corpus/reproducibility/unseeded.py`` draw from every
unseeded source (numpy's default_rng(), random.Random(), random.seed(), os.urandom, secrets,
SystemRandom).  Played twice in fresh workers with the same entropies the batch is the same;
with other entropies it is not (the draws are real); every seat that drew is reported as
having used random numbers, an innocent one is not.  (Before issue 36 the tables differed.)
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.sandbox import close_all

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus"


def test_unseeded_generators_are_reproducible_and_reported(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "reproducibility" / "unseeded.py", tmp_path / "unseeded.py")
    shutil.copy(CORPUS / "protocol" / "innocent.py", tmp_path / "innocent.py")
    unseeded = list(load_strategy_set(tmp_path / "unseeded.py"))
    innocent = list(load_strategy_set(tmp_path / "innocent.py"))
    game = make_game("public_goods", 4, 12)
    lineups = [[*unseeded[j:], *unseeded[:j]] for j in range(4)]
    lineups += [[u, innocent[0], u, innocent[1]] for u in unseeded]

    def play(entropies):
        close_all()  # fresh workers: nothing carried over from an earlier batch
        return play_batch(game, lineups, entropies, keep_history=True)

    first, second = play(np.arange(8)), play(np.arange(8))
    other = play(np.arange(8) + 100)
    acts = [np.asarray(r.store.actions) for r in (first, second, other)]
    np.testing.assert_array_equal(acts[0], acts[1])
    assert not np.array_equal(acts[0], acts[2])
    for b, row in enumerate(lineups):
        for i, entry in enumerate(row):
            assert first.used_rng[b, i] == (entry in unseeded), (b, i, entry.name)
    assert not first.flags
