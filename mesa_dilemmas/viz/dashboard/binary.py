"""The binary-action games' pages (paper 002): Public Goods, Collective Risk, Common Pool.

One page definition serves the three games; they differ only in their model
class, their own parameters and the strategies offered.  The population is a
count per strategy plus a count of LLM players, so a group is built the way the
paper builds one: a number of agents of each kind.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import solara

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.binary_game import BinaryDilemmaModel
from mesa_dilemmas.viz.dashboard import controls as c
from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.agent_views import BinaryPopulation
from mesa_dilemmas.viz.dashboard.charts import PALETTE, Ref, Series
from mesa_dilemmas.viz.dashboard.components import ChartGrid, Metric, Metrics
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage

#: strategy colours: the palette without the green and red that mean C and D
STRATEGY_COLORS = tuple(c for c in PALETTE if c not in ("#2ca02c", "#d62728"))

#: reference strategies offered on every page, with the page's defaults (count each)
STRATEGIES = ("all_c", "all_d", "tft(0.5)", "grim(0.34)", "rnd(0.5)", "ptft")
GAME_STRATEGIES = {"collective_risk": ("threshold",)}
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
    stock: list[float] | None  # start of each round and now (Common Pool)
    capacity: float | None
    totals: list[float]  # total payoff per player
    actions: np.ndarray  # (rounds played, players) bool
    welfare: tuple[float, float]  # min and max mean payoff per player per round, over a whole game
    metrics: dict[str, Any]
    threshold: int | None = None  # collective risk: cooperators needed for the benefit (m)


def _game_params(game: str) -> dict[str, Any]:
    cls = game_model(game)
    out: dict[str, Any] = {"rounds": c.slider(cls, "rounds", high=100, label="rounds")}
    if game == "public_goods":
        out["k"] = c.slider(cls, "k", low=1.1, high=8.0, step=0.1, label="multiplier k (1 < k < n)")
    elif game == "collective_risk":
        out["k"] = c.slider(cls, "k", low=0.1, high=8.0, step=0.1, label="benefit k")
        out["m"] = c.int_slider("threshold m (0: half the group)", 0, 0, 4 * MAX_PER_STRATEGY)
    else:
        out["capacity"] = c.int_slider("capacity K (0: 4 n)", 0, 0, 400, 4)
        out["growth"] = c.slider(cls, "growth", low=0.1, step=0.1, label="regrowth g")
    return out


def page_controls(game: str) -> dict[str, Any]:
    defaults = Counter(params_default(game_model(game)))
    offered = (*STRATEGIES, *GAME_STRATEGIES.get(game, ()))
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
    offered = (*STRATEGIES, *GAME_STRATEGIES.get(game, ()))
    seats = [LLM] * int(params.get("n_llm", 0))
    for spec in offered:
        seats += [spec] * int(params.get(count_key(spec), 0))
    return seats


def build_for(game: str):  # noqa: ANN201 - a BuildFn
    def build(params: dict[str, Any], seed: int, llm: str | None) -> BinaryDilemmaModel:
        seats = lineup(game, params)
        if len(seats) < 2:
            raise ValueError(
                f"players: at least 2 are needed (got {len(seats)}); raise some counts"
            )
        kwargs: dict[str, Any] = {"n_players": len(seats), "rounds": int(params["rounds"])}
        for key in ("k", "growth"):
            if key in params:
                kwargs[key] = float(params[key])
        if params.get("m"):
            kwargs["m"] = int(params["m"])
        if params.get("capacity"):
            kwargs["capacity"] = float(params["capacity"])
        cls = game_model(game)
        if LLM not in seats:
            return cls(**kwargs, strategies=tuple(seats), rng=seed)
        from mesa_dilemmas.agents.strategies.policy import StrategyPolicy
        from mesa_dilemmas.llm import make_policy

        policies = [make_policy(llm or "local") if s == LLM else StrategyPolicy(s) for s in seats]
        return cls(**kwargs, policies=policies, rng=seed)

    return build


def _label(agent: Any) -> str:
    name = str(getattr(agent.policy, "name", ""))
    return LLM if name.startswith("llm:") else name.removeprefix("strategy:")


def snapshot(model: BinaryDilemmaModel) -> BinaryView:
    store, t, n = model.store, model.store.round, model.rules.n_players
    coop = (store.coop[0, :t] / n).tolist()
    mean = store.payoffs[0, :, :t].mean(axis=0).tolist() if t else []
    stock = None if store.stock is None else store.stock[0, : t + 1].tolist()
    final = model.final_metrics() if t else {}
    metrics = {
        "round": t,
        "cooperation_rate": coop[-1] if coop else math.nan,
        "mean_payoff": mean[-1] if mean else math.nan,
        "normalised_payoff": final.get("normalised_payoff", math.nan),
        "overall_cooperation": final.get("cooperation_rate", math.nan),
        "welfare_efficiency": final.get("welfare_efficiency", math.nan),
    }
    if stock is not None:
        metrics["stock"] = stock[-1]
    return BinaryView(
        round=t,
        n_rounds=model.rules.n_rounds,
        players=[_label(a) for a in model.players],
        coop_rate=coop,
        mean_payoff=mean,
        stock=stock,
        capacity=getattr(model.rules, "capacity", None),
        totals=model.total_payoffs().tolist(),
        actions=np.array(model.actions, dtype=bool),
        welfare=model.rules.welfare_bounds(),
        threshold=getattr(model.rules, "m", None),
        metrics=metrics,
    )


@solara.component
def Panels(view: BinaryView, model: DashboardModel) -> None:
    m, t = view.metrics, model.token
    items = [
        Metric("round", f"round (of {view.n_rounds})", view.round),
        Metric("cooperation_rate", "cooperation this round", m["cooperation_rate"]),
        Metric("mean_payoff", "mean payoff this round", m["mean_payoff"]),
        Metric("normalised_payoff", "payoff per player per round", m["normalised_payoff"]),
        Metric("welfare_efficiency", "welfare efficiency", m["welfare_efficiency"]),
        Metric("players", "players", len(view.players)),
    ]
    if "stock" in m:
        items.insert(3, Metric("stock", "stock", m["stock"]))
    Metrics(items)
    BinaryPopulation(model)
    kinds = list(dict.fromkeys(view.players))
    colors = [STRATEGY_COLORS[kinds.index(p) % len(STRATEGY_COLORS)] for p in view.players]
    labels = [f"{i}: {p}" for i, p in enumerate(view.players)]
    rounds = list(range(1, view.round + 1))
    low, high = view.welfare
    average = list(np.cumsum(view.mean_payoff) / np.arange(1, len(view.mean_payoff) + 1))
    n = len(view.players)
    threshold = (
        [Ref(f"threshold: {view.threshold} of {n} cooperate", view.threshold / n, "#9467bd")]
        if view.threshold and n else []
    )  # fmt: skip
    charts = [
        ("cooperation_rate", lambda: vega.line(
            "Cooperation rate per round", [Series("share cooperating", view.coop_rate, x=rounds)],
            threshold, ylim=(-0.02, 1.02)), view.coop_rate),
        ("mean_payoff", lambda: vega.line(
            "Mean payoff per round", [Series("mean payoff", view.mean_payoff, x=rounds),
                                      Series("average so far", average, x=rounds, style="--")],
            [Ref(f"worst average over a game {low:.2f}", low, "#d62728"),
             Ref(f"best average over a game {high:.2f}", high, "#2ca02c")], ylabel="payoff",
            subtitle="the references bound the average over all rounds; a single round can exceed them"),
         view.mean_payoff),
        ("payoffs", lambda: vega.bars(
            "Payoff distribution: total per player", labels, {"total payoff": view.totals},
            ylabel="payoff", colors=colors), view.totals),
        ("actions", lambda: vega.actions("Who cooperated", view.actions, labels),
         view.coop_rate),
    ]  # fmt: skip
    if view.stock is not None:
        stock = view.stock
        charts.insert(1, ("stock", lambda: vega.line(
            "Stock (start of each round)", [Series("stock", stock)],
            [Ref(f"capacity {view.capacity:g}", view.capacity or 0.0, "#999999", ":")],
            ylabel="resource"), stock))  # fmt: skip
    ChartGrid(charts, t)


TITLES = {
    "public_goods": ("Public Goods", "Contribute to a pot multiplied by k and shared by all: "
                     "cooperation pays the group, defection pays the defector."),
    "collective_risk": ("Collective Risk", "Everyone gains k only if at least m players contribute "
                        "this round."),
    "common_pool": ("Common Pool", "Cooperators take S/(2n), defectors S/n of a stock that regrows "
                    "logistically; one all-defect round empties it."),
}  # fmt: skip


def page(game: str) -> GamePage:
    title, summary = TITLES[game]
    return GamePage(
        path=game,
        title=f"{title} (paper 002)",
        summary=summary + " Strategies are code; LLM players answer C or D each round.",
        controls=lambda: page_controls(game),
        build=build_for(game),
        snapshot=snapshot,
        panels=Panels,
        llm_agents=lambda params: int(params.get("n_llm", 0)),
        round_of=lambda model: int(model.store.round),
        agent_labels=lambda model: {
            a.unique_id: f"player {i} ({_label(a)})" for i, a in enumerate(model.players)
        },
    )


PAGES = [page(g) for g in ("public_goods", "collective_risk", "common_pool")]
