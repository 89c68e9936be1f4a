"""Issue 36, the tampering family: one set's code cannot change another set's moves.

Each attack in ``tests/strategy_corpus/tampering/`` is its own file (its own unit of trust,
so its own worker).  It plays in lockstep against ``innocent.py``, whose strategies use
exactly what the attacks patch.  Checked for every attack: the innocent strategies are never
flagged; the matches without the attacker are the same as when it is absent; and in the
matches with it, every innocent seat played what an honest copy of its strategy plays, in
this process, against the moves the attacker actually made.  (Before issue 36 the sets
shared a worker: these attacks changed the innocent set's moves and got it flagged.)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import StrategyEntry, load_strategy_set
from mesa_dilemmas.sandbox import SandboxLimits, get_limits, set_limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus" / "tampering"
ATTACKS = sorted(p.stem for p in CORPUS.glob("*.py") if p.stem not in ("innocent", "_frames"))
ROUNDS = 5


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    old = get_limits()
    set_limits(SandboxLimits(call_cpu=0.5, wall_factor=4.0, call_wall=1.5))
    tmp = tmp_path_factory.mktemp("tampering")
    path = tmp / "innocent.py"
    path.write_text((CORPUS / "innocent.py").read_text())
    innocent = list(load_strategy_set(path))
    # an honest copy in this process (our own file): what the innocent seats must play
    spec = importlib.util.spec_from_file_location("innocent_honest", CORPUS / "innocent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    honest = {e.name: StrategyEntry(name=e.name, cls=getattr(module, e.name)) for e in innocent}
    game = make_game("public_goods", 3, ROUNDS)
    baseline = play_batch(game, _lineups(None, innocent), np.arange(3, 6))
    assert not baseline.flags
    yield tmp, innocent, honest, game, baseline
    set_limits(old)


def _lineups(hostile, innocent):
    """Matches 0-2 with the attacker (in the last seat of match 2), 3-5 innocent only (so the
    batch's last seat is an innocent one)."""
    a, b, c = innocent
    clean = [[a, b, c], [c, a, b], [b, b, a]]
    if hostile is None:
        return clean
    return [[hostile, a, b], [c, hostile, a], [a, c, hostile], *clean]


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_changes_no_other_sets_moves(attack: str, setup) -> None:
    tmp, innocent, honest, game, baseline = setup
    text = (CORPUS / f"{attack}.py").read_text()
    if "worker_locals" in text:
        text = (CORPUS / "_frames.py").read_text() + "\n\n" + text
    path = tmp / f"{attack}.py"
    path.write_text(text)
    (hostile,) = load_strategy_set(path)
    lineups = _lineups(hostile, innocent)
    result = play_batch(game, lineups, np.arange(6), keep_history=True)

    flagged = {f.strategy for f in result.flags}
    assert flagged <= {hostile.name}, f"innocent strategies flagged: {result.flags}"
    np.testing.assert_array_equal(result.totals[3:], baseline.totals)
    # the attacker's seats scripted with the moves it made; the innocent ones honest copies
    actions = np.asarray(result.store.actions[:, :, :ROUNDS]).astype(np.int8)
    replay_lineups = [[None if e is hostile else honest[e.name] for e in row] for row in lineups]
    replay = play_batch(game, replay_lineups, np.arange(6), scripted=actions, keep_history=True)
    np.testing.assert_array_equal(np.asarray(replay.store.actions)[:, :, :ROUNDS], actions)
