"""The fishery page (paper 003): the lake, the catch, compliance, sanctions and norm evolution."""

from __future__ import annotations

import html
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import solara

from mesa_dilemmas.agents.population import Group, Population
from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.dilemmas.fishery.agent_view import FisheryLake, policy_words
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.viz.dashboard import controls as c
from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.charts import Ref, Series
from mesa_dilemmas.viz.dashboard.compare import ComparePage, Quantity
from mesa_dilemmas.viz.dashboard.components import ChartGrid, Metric, Metrics, Table, Text, fmt
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage

#: reporters charted over rounds (missing ones, in an older model, chart as empty)
SERIES = (
    "stock",
    "total_harvest",
    "compliance",
    "mean_effort",
    "deaths",
    "punishments",
    "efficiency",
    "group_norm",
    "norm_similarity",
    "norm_alignment",
    "n_alive",
)


@dataclass(frozen=True)
class Villager:
    id: int
    kind: str  # "LLM" or "rule"
    disposition: str
    alive: bool
    wealth: float
    effort: float
    harvest: float
    norm: str  # the personal norm: a cap for rule villagers, the strategy text of LLM villagers


@dataclass(frozen=True)
class FisheryView:
    round: int
    series: dict[str, list[float]]
    capacity: float
    collapse_threshold: float
    h_opt: float
    shared_policy: str
    norm_history: list[tuple[int, str]]
    villagers: list[Villager]
    collapsed: bool
    survival_time: int
    #: what collapsed the lake, in words ("" while it has not): the stock, starvation or both
    collapse_cause: str = ""


def controls() -> dict[str, Any]:
    fields = params_model(FisheryModel).model_fields
    out: dict[str, Any] = {
        "n_agents": c.slider(FisheryModel, "n_agents", high=40, label="villagers"),
        "population": c.select(FisheryModel, "population", label="personas (general or typed)"),
        "altruism_ratio": c.slider(
            FisheryModel, "altruism_ratio", step=0.05, label="share of altruistic villagers (typed)"
        ),
        "llm_agents": c.slider(FisheryModel, "llm_agents", high=10, label="of which LLM villagers"),
        **c.llm_controls(),
        "capacity": c.slider(
            FisheryModel, "capacity", low=50, high=1000, step=10, label="lake capacity"
        ),
        "growth_rate": c.slider(FisheryModel, "growth_rate", step=0.05, label="growth rate r"),
        "catchability": c.slider(FisheryModel, "catchability", low=0.01, high=0.2, step=0.005),
        "collapse_threshold": c.slider(FisheryModel, "collapse_threshold", high=100, step=1),
        "penalty": c.slider(FisheryModel, "penalty", high=30, step=0.5, label="sanction beta"),
        "punish_cost": c.slider(
            FisheryModel, "punish_cost", high=10, step=0.5, label="cost of sanctioning gamma"
        ),
        "punishment_off_at": c.slider(
            FisheryModel,
            "punishment_off_at",
            high=100,
            label="punishment off from round (0: never)",
        ),
        "social_learning": c.checkbox(FisheryModel, "social_learning"),
        "group_decision": c.checkbox(
            FisheryModel, "group_decision", label="group decision (norms)"
        ),
        "proposal_form": c.select(FisheryModel, "proposal_form"),
        "stop_at_collapse": c.checkbox(FisheryModel, "stop_at_collapse"),
        "rng": c.seed_box(42),
    }
    if "punishment" in fields:  # newer models switch punishment off altogether
        out["punishment"] = c.checkbox(FisheryModel, "punishment")
    return out


def build(params: dict[str, Any], seed: int, llm: str | None) -> FisheryModel:
    """The page's game: its "of which LLM villagers" slider becomes the population handed to
    the model (that many villagers on random seats answer through ``llm``)."""
    params = dict(params)
    n_llm = int(params.pop("llm_agents", 0) or 0)
    players = Population(groups=[Group(llm=llm or "local", count=n_llm)]) if n_llm else None
    return FisheryModel(**params, players=players, rng=seed)


def _norm_text(model: FisheryModel, v: Any) -> str:
    text = getattr(v, "norm_text", None)
    return text if text else f"harvest at most {v.personal_norm:.2f}"


def snapshot(model: FisheryModel) -> FisheryView:
    collected = model.datacollector.model_vars
    series = {k: [float(x) for x in collected.get(k, [])] for k in SERIES}
    villagers = [
        Villager(
            id=v.unique_id,
            kind="LLM" if v.language else "rule",
            disposition=v.persona.disposition,
            alive=bool(v.alive),
            wealth=float(v.wealth),
            effort=float(v.effort),
            harvest=float(v.harvest),
            norm=_norm_text(model, v),
        )
        for v in model.villagers
    ]
    return FisheryView(
        round=model.round,
        series=series,
        capacity=float(model.p.capacity),
        collapse_threshold=float(model.p.collapse_threshold),
        h_opt=float(model.h_opt),
        shared_policy=policy_words(model.shared_policy),
        norm_history=[(r, policy_words(p)) for r, p in model.norm_history],
        villagers=villagers,
        collapsed=bool(model.collapsed),
        survival_time=int(model.survival_time),
        collapse_cause=collapse_cause(model),
    )


def collapse_cause(model: FisheryModel) -> str:
    """What collapsed the lake, in words, from the round it collapsed in ("" while it has not):
    the stock at or below the collapse threshold, a villager starving, or both (the game
    collapses on either)."""
    if not model.collapsed:
        return ""
    t = int(model.survival_time)
    collected = model.datacollector.model_vars
    stock = float(collected["stock"][t])
    if model.p.regrowth == "doubling":  # checked before the doubling
        stock = float(model.stock_after_harvest) if t == model.round else stock / 2.0
    starved = int(model.p.n_agents) - int(collected["n_alive"][t])
    threshold = fmt(model.p.collapse_threshold)
    fell = stock <= model.p.collapse_threshold
    who = f"{starved} villager{'s' if starved != 1 else ''} starved"
    if fell and starved > 0:
        return f"the stock fell to {fmt(stock)}, at or below the collapse threshold {threshold}, and {who}"
    if fell:
        return f"the stock fell to {fmt(stock)}, at or below the collapse threshold {threshold}"
    return f"{who} (the stock, {fmt(stock)}, stayed above the collapse threshold {threshold})"


def _last(values: list[float]) -> float:
    return values[-1] if values else math.nan


def population_text(villagers: list[Villager]) -> tuple[str, str]:
    """One count split two ways: ("10 (8 rule + 2 LLM)", "6 selfish, 4 altruistic")."""
    n, llm = len(villagers), sum(v.kind == "LLM" for v in villagers)
    kinds = Counter(v.disposition for v in villagers)
    population = f"{n} ({n - llm} rule + {llm} LLM)" if llm else f"{n} (all rule-based)"
    return population, ", ".join(f"{k} {d}" for d, k in sorted(kinds.items()))


@solara.component
def Panels(view: FisheryView, model: DashboardModel) -> None:
    s, t = view.series, model.token
    alive = sum(v.alive for v in view.villagers)
    population, personas = population_text(view.villagers)
    Metrics(
        [
            Metric("population", "villagers", population),
            Metric("personas", "their personas", personas),
            Metric("round", "round", view.round),
            Metric("stock", "lake stock", _last(s["stock"])),
            Metric("total_harvest", "harvest this round", _last(s["total_harvest"])),
            Metric(
                "efficiency",
                "efficiency so far (catch ÷ H_opt, the sustainable optimum; above 1: overfishing)",
                _last(s["efficiency"]),
            ),
            Metric("compliance", "compliance", _last(s["compliance"])),
            Metric("mean_effort", "mean effort", _last(s["mean_effort"])),
            Metric("alive", "alive", alive),
            Metric("deaths", "deaths", _last(s["deaths"])),
            Metric("punishments", "sanctions this round", _last(s["punishments"])),
            Metric("norm_similarity", "norm similarity", _last(s["norm_similarity"])),
            Metric("norm_alignment", "norm alignment", _last(s["norm_alignment"])),
            Metric("collapsed", "collapsed", view.collapsed),
        ]
    )
    if view.collapsed:
        with solara.Div(attributes={"data-banner": "collapse", "data-token": model.token}):
            solara.Error(
                f"The lake collapsed in round {view.survival_time}: {view.collapse_cause}."
            )
    FisheryLake(model)

    def per_round(label: str, key: str) -> Series:
        """What happens during a round starts at round 1 (round 0 is the start, nothing fished)."""
        return Series(label, s[key][1:], x=range(1, len(s[key])))

    charts = [
        (
            "stock",
            lambda: vega.line(
                "Lake stock",
                [Series("stock", s["stock"])],
                [
                    Ref(
                        f"collapse threshold {fmt(view.collapse_threshold)}",
                        view.collapse_threshold,
                        "#d62728",
                    ),
                    Ref(f"capacity {fmt(view.capacity)}", view.capacity, "#999999", ":"),
                ],
                ylabel="fish",
                ylim=(0, view.capacity * 1.05),
            ),
            s["stock"],
        ),
        (
            "total_harvest",
            lambda: vega.line(
                "Total harvest vs sustainable optimum",
                [per_round("total harvest", "total_harvest")],
                [Ref(f"optimum H_opt = {fmt(view.h_opt)}", view.h_opt, "#2ca02c")],
                ylabel="fish",
            ),
            s["total_harvest"][1:],
        ),
        (
            "compliance",
            lambda: vega.line(
                "Compliance and mean effort",
                [
                    per_round("compliance (harvest within the norm)", "compliance"),
                    per_round("mean effort", "mean_effort"),
                ],
                ylim=(-0.02, 1.02),
            ),
            s["compliance"][1:],
        ),
        (
            "punishments",
            lambda: vega.line(
                "Sanctions and deaths",
                [
                    per_round("sanctions per round", "punishments"),
                    per_round("deaths (total)", "deaths"),
                ],
                ylabel="count",
            ),
            s["punishments"][1:],
        ),
        (
            "norm_similarity",
            lambda: vega.line(
                "Personal norms: similarity and alignment",
                [
                    Series("similarity (mean pairwise cosine)", s["norm_similarity"]),
                    Series("alignment (cosine with the mean)", s["norm_alignment"]),
                ],
                ylim=(-0.02, 1.02),
            ),
            s["norm_similarity"],
        ),
        (
            "group_norm",
            lambda: vega.line(
                "Group norm: the shared harvest cap",
                [Series("cap G", s["group_norm"])],
                ylabel="fish",
            ),
            s["group_norm"],
        ),
    ]
    ChartGrid(charts, t)
    NormEvolution(view)


@solara.component
def NormEvolution(view: FisheryView) -> None:
    """The shared policy now, the policies adopted so far, and every villager's personal norm."""
    with solara.Card("Norm evolution"):
        Text("", bold="Current shared policy")
        solara.HTML(
            tag="div",
            unsafe_innerHTML=html.escape(view.shared_policy),
            classes=["mdd-policy"],
            attributes={"data-text": "shared-policy"},
        )
        with solara.Columns([1, 2]):
            with solara.Column():
                Text(f"({len(view.norm_history)})", bold="Adopted policies")
                Table(
                    ["from round", "policy"],
                    [(r, p) for r, p in reversed(view.norm_history)],
                    key="norm-history",
                )
            with solara.Column():
                Text(
                    "(rule villagers: their cap; LLM villagers: their strategy)",
                    bold="Personal norms",
                )
                Table(
                    [
                        "villager",
                        "kind",
                        "disposition",
                        "alive",
                        "wealth",
                        "effort",
                        "catch",
                        "personal norm",
                    ],
                    [
                        (
                            v.id,
                            v.kind,
                            v.disposition,
                            v.alive,
                            round(v.wealth, 1),
                            round(v.effort, 3),
                            round(v.harvest, 2),
                            v.norm,
                        )
                        for v in view.villagers
                    ],
                    key="personal-norms",
                )


PAGE = GamePage(
    path="fishery",
    order=10,
    title="Fishery: norms in a shared lake",
    summary=(
        "Villagers fish a shared lake that regrows logistically, sanction over-harvesting, "
        "imitate successful peers and vote on a harvest cap (paper 003)."
    ),
    controls=controls,
    build=build,
    snapshot=snapshot,
    panels=Panels,
    llm_agents=lambda params: int(params.get("llm_agents", 0)),
    agent_labels=lambda model: {
        v.unique_id: f"villager {v.unique_id} ({'LLM' if v.policy_name.startswith('llm:') else 'rule'}, "
        f"{v.persona.disposition})"
        for v in model.villagers
    },
)


def compare_page() -> ComparePage:
    """The Compare page: two fishery settings side by side (B: punishment off)."""

    def punishment_off(specs: dict[str, Any]) -> dict[str, Any]:
        # newer models have a switch; older ones: a sanction that costs nothing
        return {"punishment": False} if "punishment" in specs else {"penalty": 0.0}

    return ComparePage(
        page=PAGE,
        quantities=(
            Quantity("stock", "lake stock", "fish"),
            Quantity("total_harvest", "harvest per round", "fish", per_round=True),
            Quantity("compliance", "compliance", per_round=True),
            Quantity("mean_effort", "mean effort", per_round=True),
            Quantity("punishments", "sanctions per round", "count", per_round=True),
            Quantity("group_norm", "group norm (shared cap)", "fish"),
            Quantity("n_alive", "villagers alive", "count"),
            Quantity("efficiency", "efficiency so far"),
        ),
        b_defaults=punishment_off,
        agent_view=FisheryLake,
        summary="Two fishery games side by side, from the same seed and stepping together: "
        "punishment on in one, off in the other (or any other pair of settings).",
    )


#: the Compare page (entry point ``mesa_dilemmas.pages``: ``fishery_compare``)
COMPARE = compare_page()
