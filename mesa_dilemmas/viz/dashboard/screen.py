"""A game's screen: the sidebar (run controls, parameters) and the main area (status, the LLM
panel, the page's panels, export, the run's settings), put together from :mod:`.components`."""

from __future__ import annotations

from typing import Any

import solara
import solara.lab
from mesa.visualization.utils import update_counter

from mesa_dilemmas.viz.dashboard.components import (
    CSS,
    Export,
    PageModel,
    RoundStatus,
    RunControls,
    RunSettings,
    Text,
    default_params,
    navigation,
)
from mesa_dilemmas.viz.dashboard.inputs import ParameterInputs
from mesa_dilemmas.viz.dashboard.llm_panel import LLMPanel
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage
from mesa_dilemmas.viz.dashboard.theme import ThemeToggle


@solara.component
def GameScreen(page: GamePage) -> None:
    """One game's page: Mesa's Reset / ▶ / Step and the page's parameters in the sidebar, the
    page's panels in the main area.

    The sidebar is put together from Mesa's pieces rather than ``SolaraViz`` itself:
    ``SolaraViz`` always adds its own settings ("Render Interval", "Use Threads", the
    model's clock) that mean nothing to a game page, and its sliders show no values.
    The controls are Mesa's ``ModelController`` (so Play, pause and Reset behave as on
    any Mesa page); the parameters are :func:`.inputs.ParameterInputs`, which Reset
    reads the same way Mesa's ``ModelCreator`` does."""

    controls = solara.use_memo(lambda: {"page": page, **page.controls()}, [])
    #: what the next Reset builds (Mesa's ModelController reads it)
    params = solara.use_reactive(solara.use_memo(lambda: default_params(controls), []))
    model = solara.use_reactive(solara.use_memo(lambda: DashboardModel(**params.value), []))
    solara.use_effect(lambda: model.value.close, [model.value])

    def change(name: str, value: Any) -> None:
        params.value = {**params.value, name: value}

    solara.Style(CSS)
    navigation()
    with solara.AppBar():
        solara.AppBarTitle(page.title)
        ThemeToggle()
    with solara.Sidebar(), solara.Column(classes=["mdd-sidebar"]):
        with solara.Card("Run", margin=0):
            RunControls(model, params)
        with solara.Card("Parameters", subtitle="Reset starts a game with these", margin=0):
            ParameterInputs(controls, params.value, change)
    ModelView(model.value)


@solara.component
def ModelView(model: DashboardModel) -> None:
    """Title, status, the LLM panel (if LLM agents play), the page's panels on the latest
    snapshot, the data downloads, the run's settings."""
    tick = update_counter.get()  # re-render after every Step, Reset and live tick
    PageModel.provide(model)
    version = model.version
    solara.use_effect(lambda: model.shown(version), [model.uid, version])  # Play may go on
    with solara.Div(attributes={"data-page": model.page.path}):
        Text(model.page.title, tag="h2")
        Text(model.page.summary)
        RoundStatus(model, tick)
        # right under the status line: while a slow LLM round runs, its progress is in sight
        # (below the charts it was a page's length away)
        if model.llm is not None:
            LLMPanel(model, tick)
        if model.view is not None:
            model.page.panels(view=model.view, model=model)
        if model.view is not None:
            Export(model, tick)
        RunSettings(model)
