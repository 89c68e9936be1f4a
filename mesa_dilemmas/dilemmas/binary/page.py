"""The page of a binary-action (C/D) game (paper 002): each C/D game's ``page.py`` makes its own.

One page definition serves every C/D game; they differ only in their model class, their own
parameters (the controls a game passes to :func:`binary_page`) and the strategies offered.  The population is a
count per strategy plus a count of LLM players, so a group is built the way the
paper builds one: a number of agents of each kind.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import solara

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.binary.agent_view import BinaryPopulation
from mesa_dilemmas.dilemmas.binary.game import BinaryDilemmaModel
from mesa_dilemmas.dilemmas.binary.rules import BinaryGame
from mesa_dilemmas.viz.dashboard import controls as c
from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.charts import PALETTE, Ref, Series
from mesa_dilemmas.viz.dashboard.components import ChartGrid, Metric, Metrics
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage
from mesa_dilemmas.viz.dashboard.save_scenario import llm_table

#: strategy colours: the palette without the green and red that mean C and D
STRATEGY_COLORS = tuple(c for c in PALETTE if c not in ("#2ca02c", "#d62728"))

#: reference strategies offered on every page, with the page's defaults (count each)
STRATEGIES = ("all_c", "all_d", "tft(0.5)", "grim(0.34)", "rnd(0.5)", "ptft")
#: per game: the strategies its page offers besides STRATEGIES, and its own parameter controls
_EXTRA_STRATEGIES: dict[str, tuple[str, ...]] = {}
_GAME_CONTROLS: dict[str, Any] = {}
MAX_PER_STRATEGY = 16
LLM = "LLM"


def count_key(spec: str) -> str:
    """``tft(0.5)`` -> ``n_tft_0_5``: a parameter name for a strategy's count."""
    return "n_" + re.sub(r"[^0-9a-zA-Z]+", "_", spec).strip("_")


@dataclass(frozen=True)
class BinaryView:
    round: int
    n_rounds: int
    players: list[str]  # seat labels: strategy names or "LLM"
    coop_rate: list[float]  # per round
    mean_payoff: list[float]  # per round
    stock: list[float] | None  # start of each round and now (a game with a resource stock)
    capacity: float | None
    totals: list[float]  # total payoff per player
    actions: np.ndarray  # (rounds played, players) bool
    welfare: tuple[float, float]  # min and max mean payoff per player per round, over a whole game
    exact: bool  # whether ``welfare`` and ``bounds_so_far`` are the true extremes
    metrics: dict[str, Any]
    threshold: int | None = None  # a threshold game: cooperators needed for the benefit (m)
    #: per round played: the worst and best possible average payoff over the rounds so far
    bounds_so_far: tuple[list[float], list[float]] = ([], [])
    depleted_in: int | None = (
        None  # a stock game: the round that emptied the stock (it stays empty)
    )


@lru_cache(maxsize=4096)
def _prefix_bounds(
    cls: type, n: int, t: int, params: tuple[tuple[str, Any], ...]
) -> tuple[float, float]:
    return cls(n, t, **dict(params)).welfare_bounds()


def exact_bounds(rules: BinaryGame) -> bool:
    """Whether the game's welfare bounds are the true extremes (a regrowing stock's only for
    regrowth g >= 2; below it they are the average of named plays, see its ``welfare_bounds``)."""
    return float(getattr(rules, "growth", 2.0)) >= 2.0


def bounds_so_far(rules: BinaryGame, t: int) -> tuple[float, float]:
    """(worst, best) possible mean payoff per player per round over the first ``t`` rounds.

    The game's ``welfare_bounds`` hold for the average over all its rounds; over fewer
    rounds a stateful game allows more (one all-defect round 1 of a game with a regrowing
    stock pays the whole stock, twice the best average of a 20-round game), so an average so far is
    compared with the bounds of a game that lasts the rounds played."""
    params = tuple(sorted(rules.params().items()))
    return _prefix_bounds(type(rules), rules.n_players, max(1, t), params)


def _game_params(game: str) -> dict[str, Any]:
    cls = game_model(game)
    return {"rounds": c.slider(cls, "rounds", high=100, label="rounds"), **_GAME_CONTROLS[game]()}


def page_controls(game: str) -> dict[str, Any]:
    defaults = Counter(params_default(game_model(game)))
    offered = (*STRATEGIES, *_EXTRA_STRATEGIES.get(game, ()))
    counts = {
        count_key(spec): c.int_slider(
            f"players: {spec}", defaults.get(spec, 0), 0, MAX_PER_STRATEGY
        )
        for spec in offered
    }
    return {
        **counts,
        "n_llm": c.int_slider("players: LLM", 0, 0, 8),
        **c.llm_controls(),
        **_game_params(game),
        "rng": c.seed_box(42),
    }


def params_default(cls: type) -> tuple[str, ...]:
    """The model's default strategy specs (one seat each)."""
    from mesa_dilemmas.dilemmas.base import params_model

    return tuple(params_model(cls).model_fields["strategies"].default)


def lineup(game: str, params: dict[str, Any]) -> list[str]:
    """Seat order: LLM players first, then each strategy's players in menu order."""
    offered = (*STRATEGIES, *_EXTRA_STRATEGIES.get(game, ()))
    seats = [LLM] * int(params.get("n_llm", 0))
    for spec in offered:
        seats += [spec] * int(params.get(count_key(spec), 0))
    return seats


def game_kwargs(params: dict[str, Any], seats: list[str]) -> dict[str, Any]:
    """The game's own keyword parameters for this page's settings and seats."""
    kwargs: dict[str, Any] = {"n_players": len(seats), "rounds": int(params["rounds"])}
    for key in ("k", "growth"):
        if key in params:
            kwargs[key] = float(params[key])
    if params.get("m"):
        kwargs["m"] = int(params["m"])
    if params.get("capacity"):
        kwargs["capacity"] = float(params["capacity"])
    return kwargs


def build_for(game: str):  # noqa: ANN201 - a BuildFn
    def build(params: dict[str, Any], seed: int, llm: str | None) -> BinaryDilemmaModel:
        seats = lineup(game, params)
        if len(seats) < 2:
            raise ValueError(
                f"players: at least 2 are needed (got {len(seats)}); raise some counts"
            )
        kwargs = game_kwargs(params, seats)
        cls = game_model(game)
        if LLM not in seats:
            return cls(**kwargs, strategies=tuple(seats), rng=seed)
        return cls(**kwargs, players=seat_groups(seats, llm or "local"), rng=seed)

    return build


def scenario_body(model: DashboardModel) -> dict[str, Any]:
    """ "Save as scenario" (:attr:`GamePage.scenario_of`): the counts per strategy become the
    seat order the page plays (``strategies``, one spec per seat), or with LLM players a
    ``[population]`` with explicit seats."""
    game, params = model.page.path, model.params
    seats = lineup(game, params)
    kwargs = game_kwargs(params, seats)
    out: dict[str, Any] = {"params": kwargs, "max_steps": int(params["rounds"])}
    if LLM not in seats:
        kwargs["strategies"] = list(seats)
        return out
    out["population"] = seat_groups(seats, model.llm_choice.spec)
    out["llm"] = llm_table(model)
    return out


def seat_groups(seats: list[str], llm: str) -> dict[str, Any]:
    """The page's seats as a ``[population]``: one group per strategy and one for the language
    model, each on its explicit seats (the one way every game is told who plays)."""
    groups: list[dict[str, Any]] = []
    for spec in dict.fromkeys(seats):
        where = [i for i, s in enumerate(seats) if s == spec]
        kind = {"llm": llm} if spec == LLM else {"strategy": spec}
        groups.append({**kind, "seats": where})
    return {"groups": groups}


def _label(agent: Any) -> str:
    name = str(getattr(agent.policy, "name", ""))
    return LLM if name.startswith("llm:") else name.removeprefix("strategy:")


def snapshot(model: BinaryDilemmaModel) -> BinaryView:
    store, t, n = model.store, model.store.round, model.rules.n_players
    coop = (store.coop[0, :t] / n).tolist()
    mean = store.payoffs[0, :, :t].mean(axis=0).tolist() if t else []
    stock = None if store.stock is None else store.stock[0, : t + 1].tolist()
    final = model.final_metrics() if t else {}
    lows, highs = [], []
    for r in range(1, t + 1):
        low, high = bounds_so_far(model.rules, r)
        lows.append(low)
        highs.append(high)
    average = final.get("normalised_payoff", math.nan)
    efficiency = (
        (average - lows[-1]) / (highs[-1] - lows[-1]) if t and highs[-1] > lows[-1] else math.nan
    )
    metrics = {
        "round": t,
        "cooperation_rate": coop[-1] if coop else math.nan,
        "mean_payoff": mean[-1] if mean else math.nan,
        "normalised_payoff": average,
        "overall_cooperation": final.get("cooperation_rate", math.nan),
        "welfare_efficiency": efficiency,
    }
    depleted = None
    if stock is not None:
        metrics["stock"] = stock[-1]
        empty = [r for r, level in enumerate(stock) if level <= 1e-9]
        depleted = empty[0] if empty and stock[-1] <= 1e-9 else None
    return BinaryView(
        round=t,
        n_rounds=model.rules.n_rounds,
        players=[_label(a) for a in model.seats],
        coop_rate=coop,
        mean_payoff=mean,
        stock=stock,
        capacity=getattr(model.rules, "capacity", None),
        totals=model.total_payoffs().tolist(),
        actions=np.array(model.actions, dtype=bool),
        welfare=model.rules.welfare_bounds(),
        exact=exact_bounds(model.rules),
        threshold=getattr(model.rules, "m", None),
        metrics=metrics,
        bounds_so_far=(lows, highs),
        depleted_in=depleted,
    )


def _payoff_charts(view: BinaryView, rounds: list[int]) -> list[Any]:
    """Payoffs against the bounds that hold for what is plotted.

    A round's payoff is bounded per round (stateless games: by the number of cooperators;
    a game with a stock: by the stock it started with), an average over the rounds so far by the
    best and worst plays over that many rounds (:func:`bounds_so_far`)."""
    lows, highs = view.bounds_so_far
    average = (np.cumsum(view.mean_payoff) / np.arange(1, len(view.mean_payoff) + 1)).tolist()
    if view.stock is None:  # stateless: a round and any average share the same bounds
        low, high = view.welfare
        return [
            (
                "mean_payoff",
                lambda: vega.line(
                    "Mean payoff: per round and average so far",
                    [
                        Series("mean payoff this round", view.mean_payoff, x=rounds),
                        Series("average so far", average, x=rounds),
                    ],
                    [
                        Ref(f"worst possible {low:.2f}", low, "#7f7f7f"),
                        Ref(f"best possible {high:.2f}", high, "#555555"),
                    ],
                    ylabel="payoff per player",
                    subtitle="the bounds hold for a round and for any average of rounds",
                ),
                view.mean_payoff,
            )
        ]
    n = len(view.players)
    start = view.stock[: len(rounds)]
    return [
        (
            "mean_payoff",
            lambda: vega.line(
                "Mean payoff per round, and what the stock allowed",
                [
                    Series("mean payoff", view.mean_payoff, x=rounds),
                    Series(
                        "most possible (all defect: stock ÷ n)",
                        [s / n for s in start],
                        x=rounds,
                        color="#7f7f7f",
                        style="--",
                    ),
                    Series(
                        "least (all cooperate: ÷ 2n)",
                        [s / (2 * n) for s in start],
                        x=rounds,
                        color="#c7c7c7",
                        style="--",
                    ),
                ],
                ylabel="payoff per player",
            ),
            view.mean_payoff,
        ),
        (
            "average_payoff",
            lambda: vega.line(
                "Average payoff so far, against the best and worst plays",
                [
                    Series("average so far", average, x=rounds),
                    Series("best possible play", highs, x=rounds, color="#7f7f7f", style="--"),
                    Series("worst possible play", lows, x=rounds, color="#c7c7c7", style="--"),
                ],
                ylabel="payoff per player per round",
                subtitle=(
                    f"at round {view.n_rounds} the bounds are the game's: "
                    f"{view.welfare[0]:.2f} to {view.welfare[1]:.2f}"
                )
                if view.exact
                else "regrowth g < 2: approximate bounds (all cooperate, then all defect; "
                "all defect at once)",
            ),
            average,
        ),
    ]


@solara.component
def Panels(view: BinaryView, model: DashboardModel) -> None:
    m, t = view.metrics, model.token
    n = len(view.players)
    items = [
        Metric("round", f"round (of {view.n_rounds})", view.round),
        Metric("cooperation_rate", "cooperation this round", m["cooperation_rate"]),
        Metric("mean_payoff", "mean payoff this round", m["mean_payoff"]),
        Metric("normalised_payoff", "payoff per player per round", m["normalised_payoff"]),
        Metric("welfare_efficiency", "welfare efficiency so far (0–1)", m["welfare_efficiency"]),
        Metric("players", "players", n),
    ]
    if view.threshold:
        items.insert(2, Metric("threshold", "threshold m (cooperators needed)", view.threshold))
    if "stock" in m:
        items.insert(3, Metric("stock", "stock", m["stock"]))
    Metrics(items)
    if view.depleted_in is not None:
        with solara.Div(attributes={"data-banner": "depleted", "data-token": model.token}):
            solara.Error(
                f"The pool is depleted: round {view.depleted_in} took the whole stock and an "
                "empty pool does not regrow, so every later round pays nothing."
            )
    BinaryPopulation(model)
    kinds = list(dict.fromkeys(view.players))
    colors = [STRATEGY_COLORS[kinds.index(p) % len(STRATEGY_COLORS)] for p in view.players]
    labels = [f"{i}: {p}" for i, p in enumerate(view.players)]
    rounds = list(range(1, view.round + 1))
    threshold = (
        [
            Ref(
                f"threshold m = {view.threshold}: {view.threshold} of {n} must cooperate",
                view.threshold / n,
                "#9467bd",
            )
        ]
        if view.threshold and n
        else []
    )
    charts = [
        (
            "cooperation_rate",
            lambda: vega.line(
                "Cooperation rate per round",
                [Series("share cooperating", view.coop_rate, x=rounds)],
                threshold,
                ylim=(-0.02, 1.02),
            ),
            view.coop_rate,
        ),
        *_payoff_charts(view, rounds),
        (
            "payoffs",
            lambda: vega.bars(
                "Payoff distribution: total per player",
                labels,
                {"total payoff": view.totals},
                ylabel="payoff",
                colors=colors,
            ),
            view.totals,
        ),
        ("actions", lambda: vega.actions("Who cooperated", view.actions, labels), view.coop_rate),
    ]
    if view.stock is not None:
        stock = view.stock
        refs = [Ref(f"capacity {view.capacity:g}", view.capacity or 0.0, "#999999", ":")]
        charts.insert(
            1,
            (
                "stock",
                lambda: vega.line(
                    "Stock after each round (0: at the start)",
                    [Series("stock", stock)],
                    refs,
                    ylabel="resource",
                    subtitle=f"depleted: emptied in round {view.depleted_in}"
                    if view.depleted_in is not None
                    else "",
                ),
                stock,
            ),
        )
    ChartGrid(charts, t)


def binary_page(
    game: str,
    title: str,
    summary: str,
    controls: Any,
    extra_strategies: tuple[str, ...] = (),
    order: int = 100,
) -> GamePage:
    """The dashboard page of the C/D game ``game``: ``controls()`` returns the game's own
    parameter inputs (besides rounds), ``extra_strategies`` are offered besides STRATEGIES."""
    _GAME_CONTROLS[game] = controls
    _EXTRA_STRATEGIES[game] = tuple(extra_strategies)
    return GamePage(
        path=game,
        order=order,
        title=f"{title} (paper 002)",
        summary=summary + " Strategies are code; LLM players answer C or D each round.",
        controls=lambda: page_controls(game),
        build=build_for(game),
        snapshot=snapshot,
        panels=Panels,
        llm_agents=lambda params: int(params.get("n_llm", 0)),
        round_of=lambda model: int(model.store.round),
        agent_labels=lambda model: {
            a.unique_id: f"player {i} ({_label(a)})" for i, a in enumerate(model.seats)
        },
        scenario_of=scenario_body,
    )
