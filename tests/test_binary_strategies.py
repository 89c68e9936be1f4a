"""Reference strategies, strategy-set files and the strategy policy."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import (
    C,
    D,
    Strategy,
    StrategyEntry,
    available_sets,
    load_strategy_set,
    parse_spec,
    resolve_strategy,
)
from mesa_dilemmas.dilemmas.binary.strategies.loader import ENV_PATH, _load_cached


def respond(spec: str, opponents: list[str], game: str = "public_goods", n_rounds: int = 6) -> str:
    """The subject's actions when its three opponents play the given per-round patterns."""
    n = len(opponents) + 1
    rounds = len(opponents[0])
    scripted = np.zeros((1, n, n_rounds), dtype=np.int8)
    for j, pattern in enumerate(opponents, start=1):
        scripted[0, j, :rounds] = [c == "C" for c in pattern]
    result = play_batch(
        make_game(game, n, n_rounds),
        [[StrategyEntry.reference(spec)] + [None] * (n - 1)],
        [0],
        scripted=scripted,
        rounds=rounds,
        keep_history=True,
    )
    return "".join("C" if a else "D" for a in result.store.actions[0, 0, :rounds])


def test_unconditional_and_conditional_references() -> None:
    opp = ["CCDDC", "CDDDC", "DDDCC"]  # cooperating opponents per round: 2, 1, 0, 1, 3
    assert respond("all_c", opp) == "CCCCC"
    assert respond("all_d", opp) == "DDDDD"
    assert respond("cc(1)", opp) == "CCCDC"  # C first, then C iff >= 1 cooperated last round
    assert respond("cc(2)", opp) == "CCDDD"
    assert respond("cd(2)", opp) == "DDCCC"  # D first, then D iff >= 2 cooperated last round
    assert respond("tft(0.5)", opp) == respond("cc(2)", opp)  # half of 3 rounds up to 2
    assert respond("cc(0.5)", opp) == respond("cc(2)", opp)


def test_grim_endgame_threshold() -> None:
    assert respond("grim", ["CCCCC", "CCDCC", "CCCCC"]) == "CCCDD"
    assert respond("grim(0.34)", ["CCCCC", "CCDCC", "CCCCC"]) == "CCCCC"  # one of three tolerated
    assert respond("tft_endgame(0.5, 2)", ["CCCCCC"] * 3, n_rounds=6) == "CCCCDD"
    # threshold: m = 2 at n = 4, so it needs m - 1 = 1 cooperating opponent
    assert respond("threshold", ["CDDCD", "DDDDD", "DDDDD"], game="collective_risk") == "CCDDC"
    assert respond("threshold(2)", ["CCDDD", "CDDDD", "DDDDD"], game="collective_risk") == "CCDDD"


def test_random_strategy_rate_and_validation() -> None:
    result = play_batch(
        make_game("public_goods", 4, 50),
        [[StrategyEntry.reference("rnd(0.3)")] * 4] * 20,
        range(20),
    )
    rate = result.coop_by_round.sum() / (20 * 4 * 50)
    assert 0.26 < rate < 0.34
    with pytest.raises(ValueError, match="p must be"):
        StrategyEntry.reference("rnd(1.5)").create(make_game("public_goods", 4).description())


def test_spec_parsing() -> None:
    assert parse_spec("gtft(0.5, 0.2)") == ("gtft", [0.5, 0.2])
    assert parse_spec(" all_c ") == ("all_c", [])
    with pytest.raises(ValueError, match="unknown reference strategy"):
        parse_spec("nope(1)")
    with pytest.raises(ValueError, match="literals"):
        parse_spec("cc(x)")
    with pytest.raises(ValueError, match="at most"):
        StrategyEntry.reference("cc(1, 2)")
    assert StrategyEntry.reference("cd(2)").label == "CD(2)"
    assert StrategyEntry.reference("all_d").label == "A-D"


def test_bundled_reference_sets() -> None:
    sets = available_sets()
    assert {"reference_collective", "reference_exploitative"} <= set(sets)
    coll = load_strategy_set("reference_collective")
    expl = load_strategy_set("reference_exploitative")
    assert coll.attitude == "collective" and expl.attitude == "exploitative"
    assert all(e.description for e in coll) and all(e.source == "reference" for e in expl)
    # the collective set really is more cooperative in a mixed group
    game = make_game("public_goods", 16, 20)
    rng = np.random.default_rng(0)
    lineup = lambda s: [s[j] for j in rng.integers(0, len(s), 16)]  # noqa: E731
    c = play_batch(game, [lineup(coll) for _ in range(20)], range(20)).coop_by_round.mean()
    e = play_batch(game, [lineup(expl) for _ in range(20)], range(20)).coop_by_round.mean()
    assert c > 2 * e


MODULE = '''
from mesa_dilemmas.dilemmas.binary.strategies import C, D, Strategy


class Sucker(Strategy):
    """Cooperates until it has been exploited twice."""

    def __init__(self, game, patience=2):
        super().__init__(game)
        self.patience = patience

    def act(self, history):
        exploited = (history.my_actions & (history.opponent_cooperators < history.n_players - 1)).sum()
        return C if exploited < self.patience else D


class Coin(Strategy):
    name = "coin"
    description = "Flips its own coin."
    attitude = "exploitative"

    def act(self, history):
        return C if self.rng.random() < 0.5 else D


class _Helper:
    pass
'''


def write_set(root: Path, manifest: str) -> Path:
    root.mkdir(parents=True)
    (root / "strategies.py").write_text(MODULE)
    (root / "strategy_set.toml").write_text(textwrap.dedent(manifest))
    return root


def test_directory_set_with_classes_refs_and_overrides(tmp_path: Path) -> None:
    path = write_set(
        tmp_path / "llm_set",
        """
        name = "test-llm/collective"
        source = "test-llm"
        attitude = "collective"
        games = ["public_goods"]

        [[strategies]]
        ref = "tft(0.75)"
        name = "strict_tft"
        """,
    )
    s = load_strategy_set(path)
    assert s.name == "test-llm/collective" and len(s) == 3
    sucker, coin, strict = s.get("Sucker"), s.get("coin"), s.get("strict_tft")
    assert sucker.description == "Cooperates until it has been exploited twice."
    assert (
        sucker.attitude == "collective"
        and sucker.source == "test-llm"
        and sucker.games == ("public_goods",)
    )
    assert coin.attitude == "exploitative" and coin.description == "Flips its own coin."
    assert strict.params == {"q": 0.75}
    s.check_game("public_goods")
    with pytest.raises(ValueError, match="written for public_goods"):
        s.check_game("common_pool")
    # set strategies play through the Mesa model by "path:name"
    model = game_model("public_goods")(
        n_players=4, rounds=5, strategies=(f"{path}:Sucker", "all_d"), rng=0
    )
    while model.running:
        model.step()
    # seats alternate Sucker, all_d: exploited in rounds 1 and 2, it defects from round 3
    assert model.actions[:2, 0].all() and not model.actions[2:, 0].any()


def test_listed_classes_params_and_errors(tmp_path: Path) -> None:
    path = write_set(
        tmp_path / "listed",
        """
        [[strategies]]
        class = "Sucker"
        name = "patient"
        params = { patience = 5 }
        """,
    )
    s = load_strategy_set(path)
    assert [e.name for e in s] == ["patient"] and s[0].params == {"patience": 5}
    assert s.name == "listed"
    bad = write_set(tmp_path / "bad", '[[strategies]]\nclass = "Missing"\n')
    with pytest.raises(ValueError, match="no class 'Missing'"):
        load_strategy_set(bad)
    dup = write_set(tmp_path / "dup", '[[strategies]]\nref = "all_c"\nname = "coin"\n')
    with pytest.raises(ValueError, match="duplicate strategy name 'coin'"):
        load_strategy_set(dup)
    typo = write_set(tmp_path / "typo", 'atitude = "collective"\n')
    with pytest.raises(ValueError, match="unknown key 'atitude'"):
        load_strategy_set(typo)


def test_module_set_and_search_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.py").write_text(MODULE + '\nSOURCE = "me"\nATTITUDE = "collective"\n')
    monkeypatch.setenv(ENV_PATH, str(tmp_path))
    _load_cached.cache_clear()
    assert "mine" in available_sets()
    s = load_strategy_set("mine")
    assert [e.name for e in s] == ["Sucker", "coin"] and s.source == "me"
    coin = resolve_strategy("mine:coin")  # code from a file: untrusted, described by the sandbox
    assert coin.class_name == "Coin" and coin.cls is None and not coin.trusted
    with pytest.raises(ValueError, match="no such set"):
        load_strategy_set("does-not-exist")


class Grabby(Strategy):
    def act(self, history):
        import random as global_random

        return C if global_random.random() < 0.5 else D


class Wrong(Strategy):
    def act(self, history):
        return None if history.round_number == 3 else C


def test_operational_checks_flag_bad_strategies() -> None:
    from mesa_dilemmas.dilemmas.binary.checks import check_strategy, check_strategy_set

    assert check_strategy(StrategyEntry.reference("gtft(0.5, 0.2)")) == []
    grabby = check_strategy(StrategyEntry(name="g", cls=Grabby), games=["public_goods"], sizes=[4])
    assert grabby and "global random state" in grabby[0]
    wrong = check_strategy(StrategyEntry(name="w", cls=Wrong), games=["common_pool"], sizes=[4])
    assert wrong and "InvalidAnswer" in wrong[0] and "round 4" in wrong[0]
    assert check_strategy_set(load_strategy_set("reference_exploitative"), sizes=[5]) == {}
