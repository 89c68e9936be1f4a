"""The Solara app: a home page and one route per registered page (``solara run mesa_dilemmas.viz.dashboard.app``).

Pages come from the entry point group ``mesa_dilemmas.pages`` (a ``GamePage`` or a
``ComparePage``), this package's games and installed ones alike; a registered game without a
page of its own gets the generic page of its parameter schema.
"""

from __future__ import annotations

from typing import Any

import solara
import solara.server.settings

from mesa_dilemmas.dilemmas.registry import PAGES as PAGES_GROUP
from mesa_dilemmas.dilemmas.registry import games, load_extensions
from mesa_dilemmas.viz.dashboard import generic
from mesa_dilemmas.viz.dashboard.compare import ComparePage, CompareScreen
from mesa_dilemmas.viz.dashboard.components import CSS, Text, navigation
from mesa_dilemmas.viz.dashboard.runtime import GamePage
from mesa_dilemmas.viz.dashboard.screen import GameScreen

# Solara's "This website runs on Solara" corner sits over the pages' content (the bottom
# right chart); the browser tab says what is open instead of "Solara".
solara.server.settings.theme.show_banner = False
solara.server.settings.theme.title = "mesa-dilemmas"

_REGISTERED: dict[str, Any] = load_extensions(PAGES_GROUP)
#: the registered game pages, in menu order (``GamePage.order``, then the path)
REGISTERED_PAGES: list[GamePage] = sorted(
    (p for p in _REGISTERED.values() if isinstance(p, GamePage)), key=lambda p: (p.order, p.path)
)
#: compare pages (two settings side by side)
COMPARE_PAGES: list[ComparePage] = [p for p in _REGISTERED.values() if isinstance(p, ComparePage)]
#: registered games without a page of their own (e.g. a game named by import path) get the
#: generic one
EXTRA_PAGES: list[GamePage] = [
    generic.page_for(name)
    for name in games()
    if name not in {p.path for p in REGISTERED_PAGES} and name not in _REGISTERED
]
PAGES: list[GamePage] = REGISTERED_PAGES + EXTRA_PAGES


def short_name(page: GamePage) -> str:
    """The page's name in the navigation: its title up to any "(" or ":" ("My Game", not "my_game")."""
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
        for compare in COMPARE_PAGES:
            with solara.Card(compare.title):
                Text(compare.summary)
                with solara.Link(f"/{compare.path}"):
                    solara.Button(f"open {compare.path.replace('_', ' ')}", text=True)


# Solara routes take components without arguments: one component serves every page, chosen by
# the route (keyed by it, so moving to another page starts that page's game, not the last one's)
_BY_PATH: dict[str, GamePage] = {page.path: page for page in PAGES}
_COMPARE_BY_PATH: dict[str, ComparePage] = {c.path: c for c in COMPARE_PAGES}


def _route_path() -> str:
    return solara.use_router().path.strip("/").split("/")[-1]  # (use_route would nest a level)


@solara.component
def RoutedPage() -> None:
    page = _BY_PATH.get(_route_path(), PAGES[0])
    GameScreen(page).key(page.path)


@solara.component
def RoutedCompare() -> None:
    compare = _COMPARE_BY_PATH.get(_route_path(), COMPARE_PAGES[0])
    CompareScreen(compare).key(compare.path)


routes = [
    solara.Route(path="/", component=Home, label="Home"),
    *[solara.Route(path=page.path, component=RoutedPage, label=short_name(page)) for page in PAGES],
    *[solara.Route(path=c.path, component=RoutedCompare, label="Compare") for c in COMPARE_PAGES],
]
