"""The Solara app: a home page and one route per game (``solara run mesa_dilemmas.viz.dashboard.app``)."""

from __future__ import annotations

from typing import Any

import solara

from mesa_dilemmas.dilemmas.registry import games
from mesa_dilemmas.viz.dashboard import binary, evolution, fishery, generic, port_of_mars
from mesa_dilemmas.viz.dashboard.components import CSS, GameScreen, Text, navigation
from mesa_dilemmas.viz.dashboard.runtime import GamePage

PUBLIC_GOODS, COLLECTIVE_RISK, COMMON_POOL = binary.PAGES
#: the pages in menu order
BUILTIN_PAGES: list[GamePage] = [
    fishery.PAGE, PUBLIC_GOODS, COLLECTIVE_RISK, COMMON_POOL, evolution.PAGE, port_of_mars.PAGE,
]  # fmt: skip
#: registered games without a page of their own (installed packages' games) get the generic one
EXTRA_PAGES: list[GamePage] = [
    generic.page_for(name) for name in games() if name not in {p.path for p in BUILTIN_PAGES}
]
PAGES: list[GamePage] = BUILTIN_PAGES + EXTRA_PAGES


@solara.component
def Home() -> None:
    solara.Style(CSS)
    navigation()
    Text("mesa-dilemmas", tag="h2")
    Text(
        "Rule-based and LLM agents playing social dilemmas, live. Every page has the game's "
        "parameters, the population (rule personas and LLM agents: provider and model, the "
        "embedded local model by default) and a seed in the sidebar; Step plays a round, "
        "Reset starts over with the parameters chosen."
    )
    with solara.ColumnsResponsive(12, large=6):
        for page in PAGES:
            with solara.Card(page.title):
                Text(page.summary)
                with solara.Link(f"/{page.path}"):
                    solara.Button(f"open {page.path.replace('_', ' ')}", text=True)


# Solara routes take components without arguments: one small component per page.
@solara.component
def Fishery() -> None:
    GameScreen(fishery.PAGE)


@solara.component
def PublicGoods() -> None:
    GameScreen(PUBLIC_GOODS)


@solara.component
def CollectiveRisk() -> None:
    GameScreen(COLLECTIVE_RISK)


@solara.component
def CommonPool() -> None:
    GameScreen(COMMON_POOL)


@solara.component
def CulturalEvolution() -> None:
    GameScreen(evolution.PAGE)


@solara.component
def PortOfMars() -> None:
    GameScreen(port_of_mars.PAGE)


def _screen(page: GamePage) -> Any:
    def Screen() -> None:
        GameScreen(page)

    Screen.__name__ = f"Screen_{page.path}"
    return solara.component(Screen)


routes = [
    solara.Route(path="/", component=Home, label="home"),
    *[
        solara.Route(path=page.path, component=component, label=page.path.replace("_", " "))
        for page, component in zip(
            BUILTIN_PAGES,
            [Fishery, PublicGoods, CollectiveRisk, CommonPool, CulturalEvolution, PortOfMars],
            strict=True,
        )
    ],
    *[
        solara.Route(path=page.path, component=_screen(page), label=page.path.replace("_", " "))
        for page in EXTRA_PAGES
    ],
]
