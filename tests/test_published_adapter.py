"""The published-format adapter's fast paths: the history objects a published strategy gets
(as the authors' engine builds them) and the per-instance global random state."""

from __future__ import annotations

import random
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import published as pub
from mesa_dilemmas.dilemmas.binary.strategies.loader import _import_path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

SEEN: list = []  # (round, history, copies of its arrays) of the recording strategies

RECORDERS = """
from emergent_llm.common import Action, C, D, GameState, PlayerHistory
from emergent_llm.players import BaseStrategy
import numpy as np
import {test} as T


class Strategy_COLLECTIVE_1(BaseStrategy):
    def __init__(self, game_description):
        self.game_description = game_description

    def __call__(self, {args}):
        T.record({record})
        return C if np.random.default_rng(len(T.SEEN)).random() < 0.6 else D
"""


def record(t: int, seat: object, history: object) -> None:
    arrays = (
        {k: np.array(v, copy=True) for k, v in vars(history).items() if isinstance(v, np.ndarray)}
        if history is not None
        else {}
    )
    SEEN.append((t, seat, history, arrays))


def _adapted(tmp_path: Path, fmt: str) -> type:
    args, rec = {
        "current": ("history", "history.round_number, id(self), history"),
        "paper": ("state, history", "state.round_number, id(self), history"),
    }[fmt]
    f = tmp_path / f"recorder_{fmt}.py"
    f.write_text(textwrap.dedent(RECORDERS.format(test=__name__, args=args, record=rec)))
    pub.install_shims()
    return pub.adapt(pub.published_classes(_import_path(f))[0])


@pytest.mark.parametrize("fmt", ["current", "paper"])
def test_each_round_a_new_history_with_the_authors_arrays(tmp_path: Path, fmt: str) -> None:
    from mesa_dilemmas.dilemmas.binary.engine import play_in_process
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

    cls = _adapted(tmp_path, fmt)
    n, rounds = 4, 6
    game = make_game("public_goods", n, rounds)
    SEEN.clear()
    lineups = [[StrategyEntry(name=cls.name, cls=cls)] * n] * 3
    r = play_in_process(game, lineups, np.arange(3), None, None, True)
    acts, pays = r.store.actions, r.store.payoffs  # (batch, n, rounds)
    assert len(SEEN) == 3 * n * rounds
    objects = [h for _, _, h, _ in SEEN if h is not None]
    assert len({id(h) for h in objects}) == len(objects)  # a new object every call
    k = 0
    for t in range(rounds):  # the batch plays round by round
        for b in range(3):
            for i in range(n):
                t_seen, _, h, arrays = SEEN[k]
                k += 1
                assert t_seen == t
                if fmt == "paper" and t == 0:
                    assert h is None
                    continue
                mine = acts[b, i, :t]
                others = [j for j in range(n) if j != i]
                assert h.my_actions.dtype == np.bool_ and h.my_payoffs.dtype == np.float64
                np.testing.assert_array_equal(h.my_actions, mine)
                np.testing.assert_array_equal(h.my_payoffs, pays[b, i, :t])
                if fmt == "current":
                    assert h.round_number == t
                    assert h.opponent_cooperators.dtype == np.int_
                    expected = acts[b, :, :t].sum(0) - mine
                    np.testing.assert_array_equal(h.opponent_cooperators, expected)
                else:
                    assert h.opponent_actions.shape == (t, n - 1)
                    np.testing.assert_array_equal(h.opponent_actions, acts[b, others, :t].T)
                    assert h.opponent_payoffs.dtype == np.float64
                    np.testing.assert_array_equal(h.opponent_payoffs, pays[b, others, :t].T)
                # the values it had when handed out, still (nothing later writes into them)
                for name, before in arrays.items():
                    np.testing.assert_array_equal(getattr(h, name), before)
                for name in vars(h):
                    v = getattr(h, name)
                    if isinstance(v, np.ndarray) and v.size:
                        assert not v.flags.writeable
                        with pytest.raises(ValueError):
                            v.flags.writeable = True  # nor can it be made writeable
                h.mark = True  # a plain mutable object, as the authors'


def test_a_class_that_took_the_global_functions_gets_the_full_swap(tmp_path: Path) -> None:
    f = tmp_path / "captured.py"
    f.write_text(
        textwrap.dedent(
            """
            import random
            from random import random as draw
            from emergent_llm.common import C, D
            from emergent_llm.players import BaseStrategy

            class Strategy_COLLECTIVE_1(BaseStrategy):
                def __call__(self, history):
                    return C if draw() < 0.5 else D

            class Strategy_COLLECTIVE_2(BaseStrategy):
                def __call__(self, history):
                    return C if random.random() < 0.5 else D

            class Strategy_COLLECTIVE_3(BaseStrategy):
                def __call__(self, history):
                    return C
            """
        )
    )
    pub.install_shims()
    captured, plain, none = pub.published_classes(_import_path(f))
    assert pub.random_plan(captured)[0] == "strict"
    assert pub.random_plan(plain) == ("fast", ("random",), ("random",))
    assert pub.random_plan(none)[0] == ""
    game = make_game("public_goods", 4, 10).description()
    strict, fast = pub.adapt(captured), pub.adapt(plain)
    hist = _empty_history()
    draws = []
    for cls in (strict, fast):
        before_py, before_np = random.getstate(), np.random.get_state()[1].copy()
        module_fns = dict(vars(random)), dict(vars(np.random))
        a = cls.create(game, (7, (1,)), {})
        got = [a.act(hist) for _ in range(30)]
        draws.append(got)
        # the global generators and the module functions are as they were
        assert random.getstate() == before_py
        np.testing.assert_array_equal(np.random.get_state()[1], before_np)
        assert dict(vars(random)) == module_fns[0] and dict(vars(np.random)) == module_fns[1]
        assert a.used_rng
    assert draws[0] == draws[1]  # both swaps give the instance the same stream
    assert set(draws[0]) == {"C", "D"}


def test_the_module_functions_come_back_when_a_strategy_raises(tmp_path: Path) -> None:
    f = tmp_path / "raiser.py"
    f.write_text(
        textwrap.dedent(
            """
            import random
            import numpy as np
            from emergent_llm.common import C
            from emergent_llm.players import BaseStrategy

            class Strategy_EXPLOITATIVE_1(BaseStrategy):
                def __call__(self, history):
                    random.seed(3)
                    np.random.seed(3)
                    random.random = None  # patching is undone too
                    raise RuntimeError(np.random.random())
            """
        )
    )
    pub.install_shims()
    cls = pub.adapt(pub.published_classes(_import_path(f))[0])
    module_fns = dict(vars(random)), dict(vars(np.random))
    before = random.getstate()
    a = cls.create(make_game("public_goods", 4, 10).description(), (1, (0,)), {})
    assert a.act(_empty_history()) == "D"  # the fallback of an exploitative attitude
    assert dict(vars(random)) == module_fns[0] and dict(vars(np.random)) == module_fns[1]
    assert random.getstate() == before
    assert a.errors == 1 and a.used_rng


def _empty_history():
    from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore

    return HistoryStore(1, 4, 10).player(0, 1)


def test_a_round_is_built_once_per_store_and_never_serves_a_rewritten_one() -> None:
    from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore

    rng = np.random.default_rng(0)
    a, b = HistoryStore(2, 3, 5), HistoryStore(2, 3, 5)
    for s in (a, b):
        for _ in range(3):
            s.record(rng.random((2, 3)) < 0.5, rng.random((2, 3)), None)
    ra, rb = pub._round_of(a), pub._round_of(b)
    assert pub._round_of(a) is ra and pub._round_of(b) is rb  # interleaved: still one each
    own = HistoryStore(1, 3, 5)  # a private copy of a match, rewritten for another (a replay)
    own.copy_match(a, 1, 3)
    own.seek(2)
    first = pub._round_of(own)
    np.testing.assert_array_equal(first.build_current(own)[0], a.actions[1, :, :2])
    own.copy_match(b, 0, 3)
    own.seek(2)
    second = pub._round_of(own)
    assert second is not first
    np.testing.assert_array_equal(second.build_current(own)[0], b.actions[0, :, :2])
    np.testing.assert_array_equal(second.build_current(own)[1], b.payoffs[0, :, :2])
