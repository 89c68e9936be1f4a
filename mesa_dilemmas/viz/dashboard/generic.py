"""A page for any registered game that has no page of its own (installed games included).

Its controls come from the game's parameter schema (a slider for a bounded number, a select
for a choice, a checkbox for a flag; other parameters keep their defaults), and its panels
chart every numeric model reporter over rounds.  A game that seats its players from a
population (a ``players`` parameter) and takes the ``llm`` policy kind gets LLM seats too: a
count of seats and the LLM controls every page has, handed to the model as a ``Population``.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field
from typing import Any

import solara

from mesa_dilemmas.dilemmas.base import build_model, params_model
from mesa_dilemmas.dilemmas.registry import game_model
from mesa_dilemmas.viz.dashboard import controls as c
from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.charts import Series
from mesa_dilemmas.viz.dashboard.components import ChartGrid, Metric, Metrics
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage


@dataclass(frozen=True)
class GenericView:
    round: int
    series: dict[str, list[float]]
    #: the reporters' words ("share of hunters who went for the stag"), by reporter name
    words: dict[str, str] = field(default_factory=dict)


#: the longest parameter description used as a control's label (a longer one is its tooltip only)
LABEL_CHARS = 60


def control_label(name: str, description: str | None) -> str:
    """A control's words: the parameter's description when it is short ("hunters in the
    group"), else its name in words ("n hunters")."""
    text = (description or "").strip().rstrip(".")
    return text if text and len(text) <= LABEL_CHARS else name.replace("_", " ")


def words_of(key: str, words: dict[str, str] | None = None) -> str:
    """A reporter's words: the page's own (``words``), else its name in words."""
    return (words or {}).get(key) or key.replace("_", " ")


#: the control of the LLM seats' count on a generic page
LLM_SEATS = "llm_seats"


def takes_llm_seats(model_cls: type) -> bool:
    """Whether the game seats a population (``players``) that may hold language models."""
    return "players" in params_model(model_cls).model_fields and "llm" in getattr(
        model_cls, "POLICY_KINDS", ()
    )


def schema_controls(model_cls: type) -> dict[str, Any]:
    """Controls for every parameter a control can show, labelled in words; the LLM seats and
    controls where the game takes them; the seed box last."""
    out: dict[str, Any] = {}
    for name, info in params_model(model_cls).model_fields.items():
        annotation = c._base_type(info.annotation)
        label = control_label(name, info.description)
        try:
            if typing.get_origin(info.annotation) is typing.Literal:
                out[name] = c.select(model_cls, name, label=label)
            elif annotation is bool:
                out[name] = c.checkbox(model_cls, name, label=label)
            elif annotation in (int, float):
                out[name] = c.slider(model_cls, name, label=label)
        except (TypeError, ValueError):  # unbounded or without a default: keep the default
            continue
    if takes_llm_seats(model_cls):
        out[LLM_SEATS] = c.int_slider("players: LLM (the first seats)", 0, 0, 8)
        out.update(c.llm_controls())
    out["rng"] = c.seed_box(42)
    return out


def llm_population(seats: int, llm: str) -> dict[str, Any]:
    """``seats`` language models on the first seats, the game's rule players on the rest."""
    return {"placement": "first", "groups": [{"llm": llm, "count": seats}]}


def build_game(model_cls: type, params: dict[str, Any], seed: int, llm: str | None) -> Any:
    """The game of a generic page: its parameters, and its LLM seats as a population."""
    params = dict(params)
    seats = int(params.pop(LLM_SEATS, 0) or 0)
    if seats > 0:
        params["players"] = llm_population(seats, llm or "local")
    return build_model(model_cls, params, seed)


def scenario_of(model: DashboardModel) -> dict[str, Any]:
    """ "Save as scenario" of a generic page: its parameters, and its LLM seats as the
    scenario's ``[population]`` with the page's ``[llm]`` settings."""
    from mesa_dilemmas.viz.dashboard.save_scenario import llm_table

    params = dict(model.params)
    seats = int(params.pop(LLM_SEATS, 0) or 0)
    out: dict[str, Any] = {"params": params}
    if seats > 0:
        out["population"] = llm_population(seats, model.llm_choice.spec)
        out["llm"] = llm_table(model)
    return out


def _numeric(values: list[Any]) -> list[float] | None:
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        return None


def snapshot(model: Any, words: dict[str, str] | None = None) -> GenericView:
    series: dict[str, list[float]] = {}
    for name, values in model.datacollector.model_vars.items():
        numbers = _numeric(list(values))
        if numbers is not None:
            series[name] = numbers
    return GenericView(
        int(getattr(model, "time", 0)), series, {k: words_of(k, words) for k in series}
    )


@solara.component
def Panels(view: GenericView, model: DashboardModel) -> None:
    last = {k: (v[-1] if v else math.nan) for k, v in view.series.items()}
    said = {k: words_of(k, view.words) for k in view.series}
    Metrics(
        [
            Metric("round", "round", view.round),
            *(Metric(k, said[k], x) for k, x in last.items()),
        ]
    )
    charts = [
        (k, lambda k=k, v=v: vega.line(said[k][:1].upper() + said[k][1:], [Series(said[k], v)]), v)
        for k, v in view.series.items()
    ]
    ChartGrid(charts, model.token)


def page_for(name: str, words: dict[str, str] | None = None) -> GamePage:
    """The generic page of the registered game ``name``; ``words`` name its reporters for people
    (``{"stag_share": "share of hunters who went for the stag"}``; others: the name in words)."""
    model_cls = game_model(name)
    doc = (model_cls.__doc__ or "").strip().splitlines()
    return GamePage(
        path=name,
        title=name.replace("_", " ").title(),
        summary=doc[0] if doc else f"The {name} game.",
        controls=lambda: schema_controls(model_cls),
        build=lambda params, seed, llm: build_game(model_cls, params, seed, llm),
        llm_agents=lambda params: int(params.get(LLM_SEATS, 0) or 0),
        scenario_of=scenario_of,
        snapshot=lambda model: snapshot(model, words),
        panels=Panels,
        round_of=lambda game: int(getattr(game, "time", 0)),
    )
