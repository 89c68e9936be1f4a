"""The fishery's comprehension battery: questions about its rules at random states, each answer
computed by playing :class:`~.model.FisheryModel` itself at that state.

Every item builds a small model with the drawn parameters, puts the state in place (the stock,
the villagers' wealth, the group norm), scripts the villagers' answers (efforts, punishments)
and runs the model's own phases -- or, for the imitation rule, calls its rule function -- and
reads the answer off the model.  A question states the rules it needs in our own words: the
game's LLM villagers are never told the mapping from effort to payoff (payoffs stay latent in
play), so a question that did not state it would test a guess, not comprehension.

Entry point: ``mesa_dilemmas.comprehension`` -> ``fishery`` (see
:mod:`mesa_dilemmas.dilemmas.comprehension`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mesa_dilemmas.agents.policy import FixedPolicy
from mesa_dilemmas.dilemmas.comprehension import (
    Item,
    Maker,
    Skill,
    choice_item,
    collect,
    number_item,
    yes_no,
)

GAME = "fishery"

SKILLS: tuple[Skill, ...] = (
    Skill("harvest", "one's catch from one's effort and the fish in the lake"),
    Skill("payoff", "the day's payoff: the catch less the fish one eats"),
    Skill("regrowth", "the fish in the lake tomorrow after regrowth"),
    Skill("sustainable_catch", "the largest total daily catch the lake can sustain"),
    Skill("collapse", "whether the day's catches leave the lake collapsed"),
    Skill("fine", "the day's payoff after fines received and the cost of punishing"),
    Skill("compliance", "how many villagers keep to the agreed cap"),
    Skill("starvation", "whether one survives the day with one's wealth, catch and food"),
    Skill("group_cap", "the cap the median vote adopts from the proposals"),
    Skill("imitation", "the probability of copying a peer's strategy (the logit rule)"),
)


def _model(rng: np.random.Generator, n: int, **params: Any) -> Any:
    """A rule-played fishery of ``n`` villagers (imitation, votes and punishment off unless
    asked for), seeded from ``rng``."""
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

    base: dict[str, Any] = {
        "n_agents": n,
        "punishment": False,
        "social_learning": False,
        "group_decision": False,
        "stop_at_collapse": False,
        "initial_wealth": 1000.0,
    }
    base.update(params)
    return FisheryModel(rng=int(rng.integers(2**31)), **base)


def _script(model: Any, answers: Sequence[dict[str, Any]]) -> None:
    """Each villager (seat order) answers from its mapping kind -> value (or callable)."""
    for v, table in zip(model.villagers, answers, strict=True):
        policy = FixedPolicy(table)
        v.policy = policy
        policy.bind(v)


def _efforts(model: Any, efforts: Sequence[float]) -> None:
    _script(model, [{"fishery.effort": float(e)} for e in efforts])


def _fish(x: float) -> str:
    return f"{x:g}"


def _catch_rule(alpha: float) -> str:
    return (
        f"A villager's catch for the day is {alpha:g} x (its fishing effort, from 0 to 1) x "
        "(the number of fish in the lake before anyone fishes)."
    )


def _draw_alpha(rng: np.random.Generator) -> float:
    return float(rng.choice([0.02, 0.025, 0.03, 0.0342, 0.04, 0.05, 0.06, 0.08]))


def _draw_effort(rng: np.random.Generator) -> float:
    return round(float(rng.uniform(0.0, 1.0)), 2)


def _state(**values: Any) -> dict[str, Any]:
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in values.items()}


# -- the skills ------------------------------------------------------------------------------


def harvest(rng: np.random.Generator) -> Item:
    alpha, stock, e = _draw_alpha(rng), int(rng.integers(60, 301)), _draw_effort(rng)
    n = int(rng.integers(2, 8))
    m = _model(rng, n, catchability=alpha, capacity=300.0)
    m.stock = float(stock)
    _efforts(m, [e] + [_draw_effort(rng) for _ in range(n - 1)])
    m.phase_harvest()
    h = m.villagers[0].harvest
    q = (
        f"{_catch_rule(alpha)} The lake holds {stock} fish this morning and you fish with "
        f"effort {e:g}. How many fish do you catch today?"
    )
    return number_item(
        GAME,
        "harvest",
        q,
        h,
        low=0,
        high=stock,
        tolerance=max(0.05, 0.02 * h),
        state=_state(alpha=alpha, stock=stock, effort=e),
    )


def payoff(rng: np.random.Generator) -> Item:
    alpha, stock, e = _draw_alpha(rng), int(rng.integers(60, 301)), _draw_effort(rng)
    c = float(rng.choice([1.0, 1.5, 1.9, 2.0, 2.5, 3.0]))
    m = _model(rng, 3, catchability=alpha, consumption=c, capacity=300.0)
    m.stock = float(stock)
    _efforts(m, [e, _draw_effort(rng), _draw_effort(rng)])
    m.phase_harvest()
    me = m.villagers[0]
    q = (
        f"{_catch_rule(alpha)} Every villager eats {c:g} fish a day, and a day's payoff is the "
        f"catch less the fish eaten. The lake holds {stock} fish this morning and you fish with "
        f"effort {e:g}. What is your payoff today?"
    )
    return number_item(
        GAME,
        "payoff",
        q,
        me.round_payoff,
        low=-c,
        high=stock,
        tolerance=max(0.05, 0.02 * abs(me.round_payoff)),
        state=_state(alpha=alpha, stock=stock, effort=e, consumption=c),
    )


def regrowth(rng: np.random.Generator) -> Item:
    capacity = float(rng.choice([100, 200, 300, 400]))
    left = int(rng.integers(5, int(capacity) + 1))
    doubling = bool(rng.random() < 0.3)
    r = float(rng.choice([0.3, 0.5, 0.6, 0.8, 1.0]))
    m = _model(
        rng, 2, capacity=capacity, growth_rate=r, regrowth="doubling" if doubling else "logistic"
    )
    m.stock = float(left)
    m.phase_settle()
    rule = (
        f"Overnight the fish left in the lake double, up to the lake's capacity of {capacity:g} fish."
        if doubling
        else (
            f"Overnight the lake's fish regrow: with S fish left it gains {r:g} x S x (1 - S / "
            f"{capacity:g}) fish, and it never holds more than its capacity of {capacity:g}."
        )
    )
    q = f"{rule} After today's fishing {left} fish are left. How many fish are in the lake tomorrow morning?"
    return number_item(
        GAME,
        "regrowth",
        q,
        m.stock,
        low=0,
        high=capacity,
        tolerance=max(0.5, 0.01 * m.stock),
        state=_state(capacity=capacity, left=left, r=r, doubling=doubling),
    )


def sustainable_catch(rng: np.random.Generator) -> Item:
    capacity = float(rng.choice([100, 150, 200, 250, 300, 400, 500]))
    doubling = bool(rng.random() < 0.3)
    r = float(rng.choice([0.2, 0.4, 0.5, 0.6, 0.8, 1.0]))
    m = _model(
        rng, 2, capacity=capacity, growth_rate=r, regrowth="doubling" if doubling else "logistic"
    )
    rule = (
        f"Overnight the fish left in the lake double, up to its capacity of {capacity:g} fish."
        if doubling
        else (
            f"Overnight the lake's fish regrow: with S fish left it gains {r:g} x S x (1 - S / "
            f"{capacity:g}) fish; it holds at most {capacity:g}."
        )
    )
    q = (
        f"{rule} What is the largest total number of fish the village can catch every day, day "
        "after day, without the lake shrinking?"
    )
    return number_item(
        GAME,
        "sustainable_catch",
        q,
        m.h_opt,
        low=0,
        high=capacity,
        tolerance=max(0.5, 0.02 * m.h_opt),
        state=_state(capacity=capacity, r=r, doubling=doubling),
    )


def collapse(rng: np.random.Generator) -> Item:
    want = bool(rng.random() < 0.5)  # half the states collapse (drawn until the model says so)
    for _ in range(100):
        alpha = float(rng.choice([0.04, 0.06, 0.08, 0.1, 0.12]))
        n = int(rng.integers(3, 7))
        threshold = float(rng.choice([20, 30, 40, 50]))
        r = float(rng.choice([0.1, 0.2, 0.3, 0.4]))
        stock = int(rng.integers(int(threshold), int(2 * threshold)))
        efforts = [_draw_effort(rng) for _ in range(n)]
        m = _model(
            rng, n, catchability=alpha, collapse_threshold=threshold, growth_rate=r, capacity=300.0
        )
        m.stock = float(stock)
        _efforts(m, efforts)
        m.step()
        if m.collapsed == want:
            break
    q = (
        f"{_catch_rule(alpha)} Overnight the lake's fish regrow: with S fish left it gains "
        f"{r:g} x S x (1 - S / 300) fish. The lake counts as collapsed when it holds {threshold:g} "
        f"fish or fewer at the end of a day, after the regrowth. This morning it holds {stock} "
        f"fish and the {n} villagers fish with efforts {', '.join(f'{e:g}' for e in efforts)}. "
        "Is the lake collapsed at the end of today?"
    )
    return choice_item(
        GAME,
        "collapse",
        q,
        yes_no(m.collapsed),
        state=_state(alpha=alpha, stock=stock, efforts=efforts, threshold=threshold, r=r),
    )


def fine(rng: np.random.Generator) -> Item:
    alpha, stock, e = _draw_alpha(rng), int(rng.integers(60, 301)), _draw_effort(rng)
    c = float(rng.choice([1.0, 1.9, 2.0, 3.0]))
    beta = float(rng.choice([2, 5, 8, 10, 15]))
    gamma = float(rng.choice([0, 0.5, 1, 2, 3]))
    per_punisher = bool(rng.random() < 0.5)
    punishers = int(rng.integers(0, 4))
    i_punish = bool(rng.random() < 0.5)
    n = punishers + 2
    m = _model(
        rng,
        n,
        catchability=alpha,
        consumption=c,
        penalty=beta,
        punish_cost=gamma,
        punishment=True,
        fine_per_punisher=per_punisher,
        capacity=300.0,
    )
    m.stock = float(stock)
    me, other = m.villagers[0], m.villagers[-1]
    tables: list[dict[str, Any]] = []
    for i, _v in enumerate(m.villagers):
        target = "none"
        if i == 0 and i_punish:
            target = str(other.unique_id)
        elif 1 <= i <= punishers:
            target = str(me.unique_id)
        tables.append(
            {"fishery.effort": e if i == 0 else _draw_effort(rng), "fishery.punish": target}
        )
    _script(m, tables)
    m.phase_harvest()
    m.phase_punish()
    fine_rule = (
        f"a punished villager pays a fine of {beta:g} for each villager who punishes it"
        if per_punisher
        else f"a punished villager pays a fine of {beta:g} once, however many villagers punish it"
    )
    q = (
        f"Every villager eats {c:g} fish a day; a day's payoff is the catch less the fish eaten, "
        f"less any fines and punishing costs. Each villager may punish one other villager: "
        f"{fine_rule}, and punishing costs the punisher {gamma:g}. Today you catch "
        f"{me.harvest:.2f} fish, {punishers} {'villager punishes' if punishers == 1 else 'villagers punish'} you, "
        f"and you {'punish one villager' if i_punish else 'punish nobody'}. What is your payoff today?"
    )
    low = -c - beta * 3 - gamma
    return number_item(
        GAME,
        "fine",
        q,
        me.round_payoff,
        low=low,
        high=stock,
        tolerance=max(0.05, 0.02 * abs(me.round_payoff)),
        state=_state(
            harvest=me.harvest,
            consumption=c,
            beta=beta,
            gamma=gamma,
            per_punisher=per_punisher,
            punishers=punishers,
            i_punish=i_punish,
        ),
    )


def compliance(rng: np.random.Generator) -> Item:
    alpha, n = _draw_alpha(rng), int(rng.integers(3, 9))
    stock = int(rng.integers(100, 301))
    efforts = [_draw_effort(rng) for _ in range(n)]
    catches_at = [alpha * e * stock for e in efforts]
    cap = round(float(np.quantile(catches_at, rng.uniform(0.1, 0.9))), 1)
    m = _model(rng, n, catchability=alpha, capacity=300.0)
    m.stock = float(stock)
    m.group_norm = cap
    _efforts(m, efforts)
    m.step()
    q = (
        f"{_catch_rule(alpha)} The village has agreed that nobody catches more than {cap:g} fish "
        f"a day. This morning the lake holds {stock} fish and the {n} villagers fish with efforts "
        f"{', '.join(f'{e:g}' for e in efforts)}. How many of the {n} villagers keep to the cap today?"
    )
    kept = int(round(m.compliance * m.n_alive))
    return number_item(
        GAME,
        "compliance",
        q,
        kept,
        low=0,
        high=n,
        tolerance=0,
        integer=True,
        state=_state(alpha=alpha, stock=stock, efforts=efforts, cap=cap),
    )


def starvation(rng: np.random.Generator) -> Item:
    want = bool(rng.random() < 0.5)  # half the states starve (drawn until the model says so)
    for _ in range(100):
        alpha, stock, e = _draw_alpha(rng), int(rng.integers(20, 121)), _draw_effort(rng)
        c = float(rng.choice([1.9, 2.0, 3.0, 4.0, 5.0]))
        wealth = round(float(rng.uniform(0.0, 3.0)), 1)
        m = _model(rng, 3, catchability=alpha, consumption=c, capacity=300.0)
        m.stock = float(stock)
        me = m.villagers[0]
        me.wealth = wealth
        _efforts(m, [e, _draw_effort(rng), _draw_effort(rng)])
        m.step()
        # a state whose end-of-day wealth is within rounding of zero is drawn again
        if me.alive == want and abs(me.wealth) >= 0.01:
            break
    q = (
        f"Every villager eats {c:g} fish a day; a day's payoff is the catch less the fish eaten, "
        "and it is added to the villager's wealth at the end of the day. A villager whose wealth "
        f"falls below zero dies. Your wealth is {wealth:g} and today you catch "
        f"{me.harvest:.2f} fish. Are you still alive at the end of the day?"
    )
    return choice_item(
        GAME,
        "starvation",
        q,
        yes_no(me.alive),
        state=_state(wealth=wealth, harvest=me.harvest, consumption=c),
    )


def group_cap(rng: np.random.Generator) -> Item:
    n = int(rng.integers(3, 10))
    proposals = [round(float(rng.uniform(1.0, 20.0)), 1) for _ in range(n)]
    m = _model(rng, n, group_decision=True, proposal_form="number")
    for v, cap in zip(m.villagers, proposals, strict=True):
        v.personal_norm = cap  # a rule villager proposes its personal norm
    m.phase_govern()
    q = (
        f"Each of the {n} villagers proposes a cap on the fish a villager may catch each day, "
        "and the village adopts the median proposal (with an even number of proposals, the mean "
        f"of the two middle ones). The proposals are {', '.join(_fish(p) for p in proposals)}. "
        "What cap does the village adopt?"
    )
    return number_item(
        GAME,
        "group_cap",
        q,
        m.group_norm,
        low=0,
        high=20,
        tolerance=0.05,
        state=_state(proposals=proposals),
    )


def imitation(rng: np.random.Generator) -> Item:
    from mesa_dilemmas.dilemmas.fishery.villagers import imitation_probability

    own = round(float(rng.uniform(-2.0, 6.0)), 1)
    peer = round(float(rng.uniform(-2.0, 6.0)), 1)
    delta = float(rng.choice([0.5, 1.0, 1.15, 2.0]))
    prob = imitation_probability(own, peer, delta)
    q = (
        "When a villager reconsiders its fishing strategy it looks at one peer and copies the "
        "peer's strategy with probability 1 / (1 + exp(-d x (peer's average payoff - own average "
        f"payoff))), with d = {delta:g}. Your average payoff is {own:g} and the peer's is "
        f"{peer:g}. What is the probability that you copy the peer (a number from 0 to 1)?"
    )
    return number_item(
        GAME,
        "imitation",
        q,
        prob,
        low=0,
        high=1,
        tolerance=0.02,
        state=_state(own=own, peer=peer, delta=delta),
    )


MAKERS: dict[str, Callable[[np.random.Generator], Item]] = {
    "harvest": harvest,
    "payoff": payoff,
    "regrowth": regrowth,
    "sustainable_catch": sustainable_catch,
    "collapse": collapse,
    "fine": fine,
    "compliance": compliance,
    "starvation": starvation,
    "group_cap": group_cap,
    "imitation": imitation,
}


def skills(game: str) -> tuple[Skill, ...]:
    return SKILLS


def battery(game: str, rng: np.random.Generator, n: int) -> list[Item]:
    """``n`` items (every skill in turn) at states drawn from ``rng``."""
    if game != GAME:
        raise ValueError(f"game: this battery is the {GAME}'s, not {game!r}")
    makers: list[Maker] = [MAKERS[s.name] for s in SKILLS]
    return collect(makers, rng, n)


__all__ = ["GAME", "MAKERS", "SKILLS", "battery", "skills"]
