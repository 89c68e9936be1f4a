"""The vectorised forms of the reference strategies against their per-call ``act``: identical
totals, cooperation, stocks, histories and ``used_rng`` (issue 23)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary import engine
from mesa_dilemmas.dilemmas.binary.engine import Lineups
from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import C, D, StrategyEntry
from mesa_dilemmas.dilemmas.binary.strategies.base import (
    SeatStreams,
    mt_uniforms,
    seat_seed_int,
    vector_form_of,
)
from mesa_dilemmas.dilemmas.binary.strategies.reference import (
    REFERENCE,
    GenerousTitForTat,
    TitForTat,
)

GAMES = ("public_goods", "collective_risk", "common_pool")

#: every reference class, with edge parameters (never / always satisfied, endgame longer than
#: the game, forgiveness 0 and 1, probabilities 0 and 1)
SPECS = (
    "all_c",
    "all_d",
    "rnd(0.0)",
    "rnd(0.3)",
    "rnd(1.0)",
    "cc(0)",
    "cc(2)",
    "cc(0.5)",
    "cd(1)",
    "cd(0.5)",
    "tft(0.0)",
    "tft(0.5)",
    "tft(1.0)",
    "ptft",
    "gtft(0.5, 0.1)",
    "gtft(1.0, 0.0)",
    "gtft(0.75, 1.0)",
    "tft_endgame(0.5, 3)",
    "tft_endgame(0.25, 0)",
    "tft_endgame(0.5, 40)",
    "grim",
    "grim(0.25)",
    "grim(1.0)",
    "threshold",
    "threshold(2)",
    "threshold(0.5)",
    "cc(100000000000000000000)",
    "cd(-3)",
    "grim(1e30)",
    "tft_endgame(0.5, 100000000000000000000)",
)


def pool() -> list[StrategyEntry]:
    return [StrategyEntry.reference(s) for s in SPECS]


def both(game, lineups, entropies, **kw):
    vec = play_batch(game, lineups, entropies, vectorised=True, **kw)
    per_call = play_batch(game, lineups, entropies, vectorised=False, **kw)
    return vec, per_call


def assert_same(a, b) -> None:
    np.testing.assert_array_equal(a.totals, b.totals)
    np.testing.assert_array_equal(a.coop_by_round, b.coop_by_round)
    np.testing.assert_array_equal(a.used_rng, b.used_rng)
    assert (a.stock is None) == (b.stock is None)
    if a.stock is not None:
        np.testing.assert_array_equal(a.stock, b.stock)
    assert a.rounds == b.rounds
    if a.store is not None or b.store is not None:
        np.testing.assert_array_equal(a.store.actions, b.store.actions)
        np.testing.assert_array_equal(a.store.payoffs, b.store.payoffs)


def test_every_reference_class_has_a_vector_form() -> None:
    for name, cls in REFERENCE.items():
        assert vector_form_of(cls) is not None, name


@pytest.mark.parametrize("game_name", GAMES)
@pytest.mark.parametrize("n", [3, 4, 9, 32, 100])
def test_random_lineups_identical(game_name: str, n: int) -> None:
    game = make_game(game_name, n, 20)
    rng = np.random.default_rng(n)
    entries = pool()
    batch = max(4, 1200 // n)
    lineups = [[entries[j] for j in rng.integers(0, len(entries), n)] for _ in range(batch)]
    entropies = rng.integers(0, 2**63, size=batch)
    vec, per_call = both(game, lineups, entropies)
    assert_same(vec, per_call)
    assert vec.used_rng.any() and not vec.used_rng.all()


@pytest.mark.parametrize("game_name", GAMES)
def test_uniform_groups_and_histories_identical(game_name: str) -> None:
    """One strategy per match (cooperative groups: gtft never draws), full history kept."""
    n = 6
    game = make_game(game_name, n, 12)
    lineups = [[e] * n for e in pool()]
    vec, per_call = both(game, lineups, list(range(len(lineups))), keep_history=True)
    assert_same(vec, per_call)
    gtft = SPECS.index("gtft(0.5, 0.1)")
    assert not vec.used_rng[gtft].any()  # never unhappy: never drew, as per call


class Coin(TitForTat):
    """A trusted strategy without a vector form (it changes ``act``): played per call."""

    name = "coin"

    def act(self, history):
        return C if self.rng.random() < 0.5 else D


class Impatient(GenerousTitForTat):
    """Inherits gtft's parameters but not its form (its ``act`` differs)."""

    def act(self, history):
        return D if history.rounds_left <= 2 else super().act(history)


def test_subclasses_do_not_inherit_a_form() -> None:
    assert vector_form_of(Coin) is None and vector_form_of(Impatient) is None
    assert vector_form_of(TitForTat) is not None


@pytest.mark.parametrize("game_name", GAMES)
def test_mixed_batches_with_per_call_and_scripted_seats(game_name: str) -> None:
    """Vector seats beside per-call strategies and scripted seats, stopped before the horizon
    (what the behavioural analysis does)."""
    n, horizon = 5, 8
    game = make_game(game_name, n, horizon)
    rng = np.random.default_rng(1)
    entries = [
        *pool(),
        StrategyEntry(name="coin", cls=Coin),
        StrategyEntry(name="imp", cls=Impatient),
    ]
    lineups = []
    for _ in range(60):
        lineup = [entries[j] for j in rng.integers(0, len(entries), n)]
        lineup[int(rng.integers(n))] = None
        lineups.append(lineup)
    scripted = rng.integers(0, 2, size=(60, n, horizon)).astype(np.int8)
    entropies = rng.integers(0, 2**63, size=60)
    for rounds in (1, 5, None):
        vec, per_call = both(
            game, lineups, entropies, scripted=scripted, rounds=rounds, keep_history=True
        )
        assert_same(vec, per_call)


def test_index_lineups_equal_lists() -> None:
    game = make_game("public_goods", 8, 20)
    entries = pool()
    rng = np.random.default_rng(5)
    index = rng.integers(0, len(entries), size=(40, 8))
    lists = [[entries[k] for k in row] for row in index.tolist()]
    as_index = play_batch(game, Lineups(entries, index), range(40))
    assert_same(as_index, play_batch(game, lists, range(40)))
    assert list(Lineups(entries, index))[3] == lists[3]
    with pytest.raises(ValueError, match="match 0 has 7 players"):
        play_batch(game, Lineups(entries, index[:, :7]), range(40))


def test_vector_forms_switch(monkeypatch) -> None:
    """``engine.VECTOR_FORMS = False`` plays everything per call, with the same results."""
    game = make_game("collective_risk", 16, 20)
    rng = np.random.default_rng(2)
    entries = pool()
    lineups = Lineups(entries, rng.integers(0, len(entries), size=(30, 16)))
    fast = play_batch(game, lineups, range(30))
    monkeypatch.setattr(engine, "VECTOR_FORMS", False)
    assert_same(fast, play_batch(game, lineups, range(30)))


def test_streams_are_the_strategies_own_generators() -> None:
    seeds = [seat_seed_int(e, i) for e, i in [(0, 0), (5, 3), (2**63 - 1, 255), (123, 4095)]]
    seeds += [0, 1, 2**200 + 7]
    got = mt_uniforms(seeds, 41)
    for row, seed in zip(got, seeds, strict=True):
        r = random.Random(seed)
        assert row.tolist() == [r.random() for _ in range(41)]
    # seat i of a match with entropy e: the seed Strategy.rng uses
    entry = StrategyEntry.reference("rnd(0.5)")
    desc = make_game("public_goods", 4, 20).description()
    strategy = entry.create(desc, (99, (2,)))
    streams = SeatStreams([99], np.array([0]), np.array([2]), 3)
    drawn = [float(streams.next(np.array([0]))[0]) for _ in range(3)]
    assert drawn == [strategy.rng.random() for _ in range(3)]
    with pytest.raises(RuntimeError):
        streams.next(np.array([0]))


def test_self_play_and_evolution_tasks_unchanged_by_the_forms(monkeypatch) -> None:
    from mesa_dilemmas.dilemmas.binary.experiments.cultural_evolution import (
        CulturalEvolutionOptions,
        Evolution,
    )
    from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayTask, run_self_play_task
    from mesa_dilemmas.dilemmas.binary.strategies.loader import load_strategy_set, resolve_set_ref

    task = SelfPlayTask(
        "public_goods",
        {},
        20,
        16,
        6,
        12,
        resolve_set_ref("reference_exploitative"),
        resolve_set_ref("reference_collective"),
        64,
        np.random.SeedSequence(4),
    )
    opts = CulturalEvolutionOptions(
        group_sizes=[4], population=64, survivors=8, max_generations=4, runs=1
    )
    sets = [load_strategy_set(s) for s in opts.sets]

    def run() -> tuple:
        sp = run_self_play_task(task)
        evo = Evolution(make_game("common_pool", 4, 20), sets, opts, np.random.SeedSequence(9))
        gens = [(g.frequencies.tolist(), g.mean_payoff) for g in evo.generations()]
        return sp, gens

    fast_sp, fast_evo = run()
    monkeypatch.setattr(engine, "VECTOR_FORMS", False)
    slow_sp, slow_evo = run()
    assert fast_evo == slow_evo
    for key in ("normalised_payoff", "cooperation_rate", "coop_by_round"):
        np.testing.assert_array_equal(fast_sp[key], slow_sp[key])
