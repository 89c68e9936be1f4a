"""The comprehension battery of the C/D family: one module for every C/D game, keyed by its name.

Every answer comes from the game's own Mesa model played for one round: the model of the named
game (found through the registry, so this family's folder names none of its games) is built
with the drawn parameters and group size, every seat plays a fixed action (the reference
strategies ``all_c`` and ``all_d``), the stock is put in place for a game that has one, and the
payoffs and the next stock are read off the model after its own ``step()``.  A question that
compares actions plays the model twice (once each way).

What a game asks depends only on what its rules class says of itself: every game gets the
payoff of each action, the better action, the group's total, what one's switch does to another
player and the best number of cooperators for the group; a game whose parameters include a
threshold ``m`` gets the threshold question, a game with a stock (``HAS_STOCK``) the next-stock
question, and a game with a multiplication factor ``k`` and neither the shared-fund question.
The framing is the game's own rules text (``binary.prompts.game_rules``, the words models that
write strategies read) with this match's numbers.

Entry point: ``mesa_dilemmas.comprehension`` -> each C/D game (see
:mod:`mesa_dilemmas.dilemmas.comprehension`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.comprehension import (
    Item,
    Maker,
    Skill,
    choice_item,
    collect,
    number_item,
    yes_no,
)

COMMON_SKILLS: tuple[Skill, ...] = (
    Skill("payoff_cooperate", "one's payoff for C given how many others choose C"),
    Skill("payoff_defect", "one's payoff for D given how many others choose C"),
    Skill("better_action", "which of C and D pays one more this round"),
    Skill("group_payoff", "the group's total payoff for a number of cooperators"),
    Skill("others_gain", "how one's switch from D to C changes another player's payoff"),
    Skill("best_for_group", "the number of cooperators that maximises the group's total"),
)
THRESHOLD = Skill("threshold", "whether the threshold is reached with this many cooperators")
NEXT_STOCK = Skill("next_stock", "the stock at the next round after the round's harvests")
POOL_SHARE = Skill("pool_share", "what each player receives from the shared fund")

#: values drawn for a game parameter of this name (any other parameter keeps its default); a
#: draw the game's rules refuse at the group size is drawn again
PARAM_DRAWS: dict[str, Callable[[np.random.Generator, int], Any]] = {
    "k": lambda rng, n: float(rng.choice([1.2, 1.5, 1.6, 2.0, 2.5, 3.0, 4.0])),
    "m": lambda rng, n: int(rng.integers(2, n + 1)),
    "capacity": lambda rng, n: float(rng.choice([8, 10, 12, 16, 20, 24, 30, 40])),
    "growth": lambda rng, n: float(rng.choice([1.0, 1.5, 2.0, 2.5])),
}


def _rules_cls(game: str) -> Any:
    from mesa_dilemmas.dilemmas.binary.rules import rules_of

    return rules_of(game)


def _param_names(game: str) -> tuple[str, ...]:
    init = inspect.signature(_rules_cls(game).__init__).parameters
    return tuple(p for p in init if p not in ("self", "n_players", "n_rounds"))


def skills(game: str) -> tuple[Skill, ...]:
    """The skills of ``game``'s items (what its rules class says of itself decides the rest)."""
    names = _param_names(game)
    extra: list[Skill] = []
    if "m" in names:
        extra.append(THRESHOLD)
    if _rules_cls(game).HAS_STOCK:
        extra.append(NEXT_STOCK)
    if "k" in names and not extra:
        extra.append(POOL_SHARE)
    return (*COMMON_SKILLS, *extra)


@dataclass
class Match:
    """One drawn match: the game, its size and parameters, the stock at the start of the
    round (a game with a stock) and the rules text a question needs (the C/D games' templates
    carry none in their system text)."""

    game: str
    n: int
    params: dict[str, Any]
    stock: float | None
    context: str

    def play(self, cooperate: Sequence[bool]) -> tuple[np.ndarray, float | None]:
        """Every seat's payoff and the next stock after one round of the game's own model, seat
        i playing C when ``cooperate[i]``."""
        from mesa_dilemmas.dilemmas.registry import game_model

        strategies = tuple("all_c" if c else "all_d" for c in cooperate)
        model = game_model(self.game)(
            rng=0, n_players=self.n, rounds=2, strategies=strategies, **self.params
        )
        if self.stock is not None:
            model.state = np.array([self.stock])
            model.store.set_initial_stock(model.state)
        model.step()
        stock = None if model.state is None else float(model.state[0])
        return np.asarray(model.payoffs[0], dtype=float), stock

    def me_and_others(self, me: bool, others_c: int) -> list[bool]:
        """Seat 0 is "you"; then ``others_c`` cooperators among the other seats."""
        return [me] + [i < others_c for i in range(self.n - 1)]

    def words(self) -> str:
        """This match's numbers, as the rules text names them."""
        parts = [f"n = {self.n} players"]
        parts += [f"{k} = {v:g}" for k, v in self.params.items() if v is not None]
        text = "In this match " + ", ".join(parts) + "."
        if self.stock is not None:
            text += f" The stock at the start of this round is {self.stock:g}."
        return text


def draw_match(game: str, rng: np.random.Generator) -> Match:
    from mesa_dilemmas.dilemmas.binary.prompts import game_rules
    from mesa_dilemmas.dilemmas.binary.rules import make_game

    names = _param_names(game)
    for _ in range(100):
        n = int(rng.integers(2, 9))
        params = {p: PARAM_DRAWS[p](rng, n) for p in names if p in PARAM_DRAWS}
        try:
            rules = make_game(game, n, 2, **params)
        except ValueError:
            continue
        break
    else:  # pragma: no cover - every C/D game accepts some draw
        raise ValueError(f"game: no valid parameters drawn for {game!r}")
    stock = None
    if rules.HAS_STOCK:
        full = float(rules.initial_state(1)[0])
        stock = float(round(rng.uniform(0.2, 1.0) * full))
    context = f"{game_rules(game)}\n\nC and D are the two actions of a round."
    return Match(game, n, {k: v for k, v in rules.params().items() if k in params}, stock, context)


def _num(x: float) -> float:
    return float(round(x, 6))


def _tol(x: float) -> float:
    return max(0.01, 0.02 * abs(x))


def _bound(m: Match) -> float:
    """A range wide enough for any payoff of the match (the number spec's ends)."""
    top = max([1.0, *(abs(v) for v in m.params.values() if isinstance(v, int | float))])
    return float(m.n * (top + 1) + (m.stock or 0))


def _state(m: Match, **extra: int) -> dict[str, Any]:
    """What the answer was computed at: the match, and ``others_c`` (how many of the others
    choose C; seat 0 is "you") or ``cooperators`` (how many of all)."""
    return {"n": m.n, "params": m.params, "stock": m.stock, **extra}


def _item(
    game: str, skill: str, m: Match, q: str, answer: float, state: dict[str, Any], **kw: Any
) -> Item:
    span = _bound(m)
    kw.setdefault("low", -span)
    kw.setdefault("high", span)
    kw.setdefault("tolerance", _tol(answer))
    return number_item(
        game,
        skill,
        f"{m.words()} {q}",
        _num(answer),
        context=m.context,
        state=state,
        **kw,
    )


def _others(m: Match, rng: np.random.Generator) -> int:
    return int(rng.integers(0, m.n))


def _other_words(j: int, n: int) -> str:
    """How many of the others choose C, in words."""
    if n == 2:
        return f"the other player chooses {'C' if j else 'D'}"
    if j == 0:
        return f"none of the other {n - 1} players chooses C"
    return f"{j} of the other {n - 1} players {'chooses' if j == 1 else 'choose'} C"


def _group_words(c: int, n: int) -> str:
    """How many of all the players choose C, in words."""
    if c == n:
        return f"all {n} players choose C"
    if c == 0:
        return f"all {n} players choose D"
    return f"{c} of the {n} players {'chooses' if c == 1 else 'choose'} C and the rest choose D"


def payoff_of(action: str) -> Callable[[str, np.random.Generator], Item]:
    def make(game: str, rng: np.random.Generator) -> Item:
        m = draw_match(game, rng)
        j = _others(m, rng)
        pay, _ = m.play(m.me_and_others(action == "C", j))
        q = (
            f"This round {_other_words(j, m.n)} and you choose {action}. "
            "What is your payoff this round?"
        )
        skill = "payoff_cooperate" if action == "C" else "payoff_defect"
        return _item(game, skill, m, q, pay[0], _state(m, others_c=j))

    return make


def better_action(game: str, rng: np.random.Generator) -> Item:
    m = draw_match(game, rng)
    j = _others(m, rng)
    c, _ = m.play(m.me_and_others(True, j))
    d, _ = m.play(m.me_and_others(False, j))
    answer = "equal" if abs(c[0] - d[0]) < 1e-9 else ("C" if c[0] > d[0] else "D")
    q = (
        f"{m.words()} This round {_other_words(j, m.n)}. Which of your actions gives you the "
        "higher payoff this round: C, D, or are they equal?"
    )
    return choice_item(
        game,
        "better_action",
        q,
        answer,
        ("C", "D", "equal"),
        context=m.context,
        state=_state(m, others_c=j),
    )


def group_payoff(game: str, rng: np.random.Generator) -> Item:
    m = draw_match(game, rng)
    c = int(rng.integers(0, m.n + 1))
    pay, _ = m.play([i < c for i in range(m.n)])
    q = (
        f"This round {_group_words(c, m.n)}. What is the total "
        "of all the players' payoffs this round?"
    )
    span = m.n * _bound(m)
    return _item(
        game, "group_payoff", m, q, float(pay.sum()), _state(m, cooperators=c), low=-span, high=span
    )


def others_gain(game: str, rng: np.random.Generator) -> Item:
    m = draw_match(game, rng)
    j = _others(m, rng)
    other = 1  # a seat among the others: a cooperator when there is one
    d, _ = m.play(m.me_and_others(False, j))
    c, _ = m.play(m.me_and_others(True, j))
    kind = "C" if j > 0 else "D"
    change = c[other] - d[other]
    q = (
        f"This round {_other_words(j, m.n)}. If you choose C instead of D, by how much does the "
        f"payoff this round of another player who chooses {kind} change? (Give the change: "
        "positive if it rises, negative if it falls, 0 if it stays the same.)"
    )
    return _item(game, "others_gain", m, q, change, _state(m, others_c=j))


def best_for_group(game: str, rng: np.random.Generator) -> Item:
    for _ in range(100):  # a match where one number of cooperators is best (no tie)
        m = draw_match(game, rng)
        totals = [float(m.play([i < c for i in range(m.n)])[0].sum()) for c in range(m.n + 1)]
        best = max(totals)
        winners = [c for c, t in enumerate(totals) if t > best - 1e-9]
        if len(winners) == 1:
            break
    q = (
        f"{m.words()} How many of the {m.n} players should choose C this round to make the total "
        "of all the players' payoffs this round as large as possible?"
    )
    return number_item(
        game,
        "best_for_group",
        q,
        winners[0],
        low=0,
        high=m.n,
        tolerance=0,
        integer=True,
        context=m.context,
        state=_state(m),
    )


def threshold(game: str, rng: np.random.Generator) -> Item:
    m = draw_match(game, rng)
    j = _others(m, rng)
    # reached when a defector gains from the others' cooperation: its payoff with j others
    # cooperating above its payoff when nobody cooperates (both rounds of the game's model)
    with_j, _ = m.play(m.me_and_others(False, j))
    alone, _ = m.play(m.me_and_others(False, 0))
    q = (
        f"{m.words()} This round {_other_words(j, m.n)} and you choose D. Is the threshold "
        "reached this round?"
    )
    return choice_item(
        game,
        "threshold",
        q,
        yes_no(with_j[0] > alone[0] + 1e-9),
        context=m.context,
        state=_state(m, others_c=j),
    )


def next_stock(game: str, rng: np.random.Generator) -> Item:
    m = draw_match(game, rng)
    c = int(rng.integers(0, m.n + 1))
    _, stock = m.play([i < c for i in range(m.n)])
    assert stock is not None
    q = f"This round {_group_words(c, m.n)}. What is the stock at the start of the next round?"
    return _item(
        game,
        "next_stock",
        m,
        q,
        stock,
        _state(m, cooperators=c),
        low=0.0,
        tolerance=max(0.05, 0.02 * stock),
    )


def pool_share(game: str, rng: np.random.Generator) -> Item:
    m = draw_match(game, rng)
    c = int(rng.integers(1, m.n + 1))
    pay, _ = m.play([i < c for i in range(m.n)])
    # a contributor keeps nothing of its own: its payoff is its share of the fund
    q = (
        f"This round {_group_words(c, m.n)}. How much does each "
        "player receive from the shared fund this round?"
    )
    return _item(game, "pool_share", m, q, pay[0], _state(m, cooperators=c), low=0.0)


MAKERS: dict[str, Callable[[str, np.random.Generator], Item]] = {
    "payoff_cooperate": payoff_of("C"),
    "payoff_defect": payoff_of("D"),
    "better_action": better_action,
    "group_payoff": group_payoff,
    "others_gain": others_gain,
    "best_for_group": best_for_group,
    "threshold": threshold,
    "next_stock": next_stock,
    "pool_share": pool_share,
}


def battery(game: str, rng: np.random.Generator, n: int) -> list[Item]:
    """``n`` items of ``game`` (every skill in turn) at matches drawn from ``rng``."""
    from mesa_dilemmas.dilemmas.binary.rules import binary_games

    if game not in binary_games():
        raise ValueError(
            f"game: {game!r} is not a C/D game; these are: {', '.join(binary_games())}"
        )

    def bind(make: Callable[[str, np.random.Generator], Item]) -> Maker:
        return lambda r: make(game, r)

    return collect([bind(MAKERS[s.name]) for s in skills(game)], rng, n)


__all__ = ["COMMON_SKILLS", "MAKERS", "Match", "battery", "draw_match", "skills"]
