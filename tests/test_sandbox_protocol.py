"""Issue 36, the protocol family: a worker's messages are checked before the run believes them.

Each attack in ``tests/strategy_corpus/protocol/`` is one file (one unit of trust) playing
against the innocent set in lockstep.  Whatever it sends -- a final answer of the wrong shape,
a header nested 20,000 deep, a 1 GiB message, an extra or out-of-turn answer, a forged
culprit, a progress page pointing nowhere -- the batch ends normally, only the attacking
file's strategies are flagged, every match without it is the same as when it is absent, and
the run's memory does not grow with what the worker claims.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.sandbox import SandboxLimits, get_limits, set_limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

CORPUS = Path(__file__).parent / "strategy_corpus" / "protocol"

#: attack file -> what its flag must say
ATTACKS = {  # forge_then_sleep: its own test below
    "out_of_range_seat": "outside any strategy call",
    "idle_phase_hang": "outside any strategy call",
    "wrong_shape": "ended its matches early",
    "deep_header": "nests 20000 deep",
    "huge_message": "exceeds the limit",
    "extra_answer": ("out of turn", "more than one answer"),
    "forged_culprit": ("patched numpy.mean", "culprit that no longer plays"),
    "wrong_seq": "wrong sequence number",
}


@pytest.fixture(scope="module")
def limits():
    old = get_limits()
    set_limits(SandboxLimits(call_cpu=0.5, match_cpu=20.0, wall_factor=4.0, call_wall=1.5))
    yield
    set_limits(old)


def _copy(tmp: Path, name: str) -> Path:
    path = tmp / f"{name}.py"
    text = (CORPUS / f"{name}.py").read_text()
    if name not in ("innocent", "surrogate_text"):
        text = (CORPUS / "_attack.py").read_text() + "\n\n" + text
    path.write_text(text)
    return path


def _lineups(hostile, innocent):
    """Matches 0-3 innocent only, 4-5 with the attacker."""
    a, b, c = innocent
    clean = [[a, b, c], [b, c, a], [c, a, b], [a, a, b]]
    return clean + [[hostile, a, b], [c, hostile, a]]


@pytest.fixture(scope="module")
def sets(tmp_path_factory, limits):
    tmp = tmp_path_factory.mktemp("protocol")
    innocent = list(load_strategy_set(_copy(tmp, "innocent")))
    game = make_game("public_goods", 3, 5)
    clean = _lineups(innocent[0], innocent)[:4]
    baseline = play_batch(game, clean, np.arange(4))
    assert not baseline.flags
    return tmp, innocent, game, baseline


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_is_contained_and_blamed_on_its_file(attack: str, sets) -> None:
    tmp, innocent, game, baseline = sets
    (hostile,) = load_strategy_set(_copy(tmp, attack))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = play_batch(game, _lineups(hostile, innocent), np.arange(6))
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
    flagged = {f.strategy: f.reason for f in result.flags}
    assert set(flagged) == {hostile.name}, flagged  # no innocent strategy flagged
    expected = ATTACKS[attack]
    expected = (expected,) if isinstance(expected, str) else expected
    assert any(why in flagged[hostile.name] for why in expected), flagged
    # the matches without the attacker are exactly those played without it
    np.testing.assert_array_equal(result.totals[:4], baseline.totals)
    np.testing.assert_array_equal(result.coop_by_round[:4], baseline.coop_by_round)
    assert grown_mib < 64, f"the run grew by {grown_mib:.0f} MiB"


def test_lone_surrogates_become_replacement_characters(sets) -> None:
    tmp, innocent, game, _ = sets
    hostile_set = load_strategy_set(_copy(tmp, "surrogate_text"))
    hostile = hostile_set.get("SurrogateText")
    result = play_batch(game, _lineups(hostile, innocent), np.arange(6))
    texts = [hostile_set.name, hostile.description, *(f.reason for f in result.flags)]
    for text in texts:
        text.encode("utf-8")  # no lone surrogate left: writable anywhere
    assert "\ufffd" in hostile_set.name and "\ufffd" in result.flags[0].reason


EVOLUTION = """
description = "evolution with a set whose texts hold lone surrogates"
experiment = "cultural_evolution:CulturalEvolutionExperiment"
game = "public_goods"
seed = 1
processes = 1

[options]
sets = ["{odd}", "{innocent}"]
group_sizes = [4]
population = 8
games_per_agent = 1
survivors = 2
max_generations = 2
runs = 2
rounds = 4
"""


def test_evolution_with_lone_surrogates_writes_its_results(sets) -> None:
    """Before issue 36 this run ended with UnicodeEncodeError after every task had finished."""
    from mesa_dilemmas.cli import main

    tmp = sets[0]
    config = tmp / "evolution.toml"
    odd = _copy(tmp, "surrogate_text")
    config.write_text(EVOLUTION.format(odd=odd, innocent=_copy(tmp, "innocent")))
    out = tmp / "evolution"
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0
    summary = (out / "summary.json").read_text(encoding="utf-8")
    assert "\\ufffd" in summary or "\ufffd" in summary


def test_a_worker_that_stops_reading_cannot_hang_the_run(sets) -> None:
    """The attacker answers its first batch at once (forged, well formed) and never reads
    again; the next request is over 64 KiB (scripted seats, 400 rounds).  Before issue 36
    the run wrote it with a blocking write and hung for ever."""
    import threading

    tmp, innocent, _, _ = sets
    (hostile,) = load_strategy_set(_copy(tmp, "forge_then_sleep"))
    game = make_game("public_goods", 3, 400)
    lineups = [[hostile, None, None]] * 64
    scripted = np.ones((64, 3, 400), dtype=np.int8)
    done: list[object] = []

    def run() -> None:
        for _ in range(2):
            done.append(play_batch(game, lineups, np.arange(64), scripted=scripted))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=120)  # the condition: both batches end (a hang never does)
    assert not worker.is_alive(), "the run hung on a worker that stopped reading"
    assert len(done) == 2
    assert scripted[:, :, :].nbytes > 1 << 16


def test_a_header_past_the_default_bound_is_refused_unless_the_call_allows_it() -> None:
    """A published folder of five models' strategy files describes itself in ~10.5 MB, past
    the default header bound (8 MB): the load call allows a bound that grows with the code read
    (three times its size plus 1 MB), and only that call."""
    from mesa_dilemmas.dilemmas.binary.strategies.loader import description_limit
    from mesa_dilemmas.sandbox import protocol

    big = {"set": "x" * (protocol.MAX_HEADER + 1000)}
    data = protocol.encode(big)
    r, w = os.pipe()
    try:  # the default bound: refused from the lengths alone, before the header is read
        os.write(w, data[:16])  # the array count and the header's length
        with pytest.raises(protocol.ProtocolError, match="header of .* exceeds"):
            protocol.recv(r, max_bytes=1 << 30)
    finally:
        os.close(w)
        os.close(r)
    r, w = os.pipe()
    writer = threading.Thread(target=protocol._write_all, args=(w, data))
    writer.start()
    try:  # a bound the call allows: read whole
        header, _ = protocol.recv(r, max_bytes=1 << 30, max_header=3 * protocol.MAX_HEADER)
        assert header == big
    finally:
        writer.join(timeout=60)
        os.close(w)
        os.close(r)
    assert description_limit(Path(__file__)) == protocol.MAX_HEADER  # a small file: the default
    assert description_limit(Path(__file__).parent / "strategy_corpus") >= protocol.MAX_HEADER


def test_the_load_call_sizes_its_bound_from_the_code(tmp_path) -> None:
    from mesa_dilemmas.dilemmas.binary.strategies.loader import description_limit
    from mesa_dilemmas.sandbox import protocol

    (tmp_path / "a.py").write_bytes(b"#" * (4 << 20))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_bytes(b"#" * (1 << 20))
    (tmp_path / "notes.txt").write_bytes(b"#" * (9 << 20))  # not code: not counted
    assert description_limit(tmp_path) == 3 * (5 << 20) + (1 << 20) > protocol.MAX_HEADER
