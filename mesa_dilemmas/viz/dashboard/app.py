"""The Solara app: a home page and one route per game (``solara run mesa_dilemmas.viz.dashboard.app``)."""

from __future__ import annotations

import solara
import solara.server.settings

from mesa_dilemmas.dilemmas.registry import games
from mesa_dilemmas.viz.dashboard import binary, evolution, fishery, generic, port_of_mars
from mesa_dilemmas.viz.dashboard.compare import CompareScreen, fishery_compare
from mesa_dilemmas.viz.dashboard.components import CSS, GameScreen, Text, navigation
from mesa_dilemmas.viz.dashboard.runtime import GamePage

# Solara's "This website runs on Solara" corner sits over the pages' content (the bottom
# right chart); the browser tab says what is open instead of "Solara".
solara.server.settings.theme.show_banner = False
solara.server.settings.theme.title = "mesa-dilemmas"

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
#: the compare page: two settings of the fishery side by side
COMPARE = fishery_compare()


def short_name(page: GamePage) -> str:
    """The page's name in the navigation: "Port of Mars", not "port_of_mars"."""
    return page.title.split(" (")[0].split(":")[0].strip()


@solara.component
def Home() -> None:
    solara.Style(CSS)
    navigation()
    with solara.AppBar():
        solara.AppBarTitle("mesa-dilemmas: social dilemmas, live")
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
        with solara.Card("Compare two settings"):
            Text(
                "Two fishery games side by side, from the same seed and stepping together: "
                "punishment on in one, off in the other (or any other pair of settings)."
            )
            with solara.Link("/compare"):
                solara.Button("open compare", text=True)


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


@solara.component
def Compare() -> None:
    CompareScreen(COMPARE)


@solara.component
def InstalledGame() -> None:
    """The generic page of an installed game, chosen by the route (keyed by it, so moving to
    another installed game's page starts that game, not the previous one's)."""
    path = solara.use_router().path.strip("/").split("/")[-1]  # (use_route would nest a level)
    page = next((p for p in EXTRA_PAGES if p.path == path), EXTRA_PAGES[0])
    GameScreen(page).key(page.path)


routes = [
    solara.Route(path="/", component=Home, label="Home"),
    *[
        solara.Route(path=page.path, component=component, label=short_name(page))
        for page, component in zip(
            BUILTIN_PAGES,
            [Fishery, PublicGoods, CollectiveRisk, CommonPool, CulturalEvolution, PortOfMars],
            strict=True,
        )
    ],
    *[
        solara.Route(path=page.path, component=InstalledGame, label=short_name(page))
        for page in EXTRA_PAGES
    ],
    solara.Route(path="compare", component=Compare, label="Compare"),
]
