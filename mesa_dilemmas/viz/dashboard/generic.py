"""A page for any registered game that has no page of its own (installed games included).

Its controls come from the game's parameter schema (a slider for a bounded number, a select
for a choice, a checkbox for a flag; other parameters keep their defaults), and its panels
chart every numeric model reporter over rounds.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any

import solara

from mesa_dilemmas.dilemmas.base import params_model
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


def schema_controls(model_cls: type) -> dict[str, Any]:
    """Controls for every parameter a control can show; the seed box last."""
    out: dict[str, Any] = {}
    for name, info in params_model(model_cls).model_fields.items():
        annotation = c._base_type(info.annotation)
        try:
            if typing.get_origin(info.annotation) is typing.Literal:
                out[name] = c.select(model_cls, name)
            elif annotation is bool:
                out[name] = c.checkbox(model_cls, name)
            elif annotation in (int, float):
                out[name] = c.slider(model_cls, name)
        except (TypeError, ValueError):  # unbounded or without a default: keep the default
            continue
    out["rng"] = c.seed_box(42)
    return out


def _numeric(values: list[Any]) -> list[float] | None:
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        return None


def snapshot(model: Any) -> GenericView:
    series: dict[str, list[float]] = {}
    for name, values in model.datacollector.model_vars.items():
        numbers = _numeric(list(values))
        if numbers is not None:
            series[name] = numbers
    return GenericView(int(getattr(model, "time", 0)), series)


@solara.component
def Panels(view: GenericView, model: DashboardModel) -> None:
    last = {k: (v[-1] if v else math.nan) for k, v in view.series.items()}
    Metrics(
        [
            Metric("round", "round", view.round),
            *(Metric(k, k.replace("_", " "), x) for k, x in last.items()),
        ]
    )
    charts = [
        (k, lambda k=k, v=v: vega.line(k.replace("_", " "), [Series(k, v)]), v)
        for k, v in view.series.items()
    ]
    ChartGrid(charts, model.token)


def page_for(name: str) -> GamePage:
    """The generic page of the registered game ``name``."""
    model_cls = game_model(name)
    doc = (model_cls.__doc__ or "").strip().splitlines()
    return GamePage(
        path=name,
        title=name.replace("_", " ").title(),
        summary=doc[0] if doc else f"The {name} game.",
        controls=lambda: schema_controls(model_cls),
        build=lambda params, seed, llm: model_cls(**params, rng=seed),
        snapshot=snapshot,
        panels=Panels,
        round_of=lambda game: int(getattr(game, "time", 0)),
    )
