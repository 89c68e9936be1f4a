"""The open registry of games: built-in and installed games look the same to every tool.

A game is a Mesa model class.  It is named in a scenario either by a registered name
(``game = "fishery"``) or by its import path (``game = "my_pkg.stag_hunt:StagHuntModel"``).
Names come from the entry point group ``mesa_dilemmas.games`` -- this package registers its own
games there (see ``pyproject.toml``), and any installed package can add its games the same way,
so they appear in ``mesa-dilemmas scenarios``, in ``mesa-dilemmas run`` and on the dashboard
without editing this project.  When the package's metadata is not installed (running from a
source tree), the built-in names below stand in for its own entry points.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

import mesa

from mesa_dilemmas.agents.population import load_object

ENTRY_POINT_GROUP = "mesa_dilemmas.games"

#: this package's own entry points, used only when its metadata is missing
BUILTIN_GAMES: dict[str, str] = {
    "fishery": "mesa_dilemmas.dilemmas.fishery:FisheryModel",
    "public_goods": "mesa_dilemmas.dilemmas.public_goods:PublicGoodsModel",
    "collective_risk": "mesa_dilemmas.dilemmas.collective_risk:CollectiveRiskModel",
    "common_pool": "mesa_dilemmas.dilemmas.common_pool:CommonPoolModel",
    "port_of_mars": "mesa_dilemmas.dilemmas.port_of_mars:PortOfMarsModel",
}


class UnknownGame(KeyError):
    """A game name that is neither registered nor an importable ``module:Class``."""

    def __str__(self) -> str:
        return str(self.args[0])


@cache
def games() -> dict[str, str]:
    """Every registered game: name -> ``"module:ModelClass"`` (imported only when used)."""
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if not set(BUILTIN_GAMES) <= set(found):  # running without this package's metadata
        found = {**BUILTIN_GAMES, **found}
    return dict(sorted(found.items()))


def is_game_path(name: str) -> bool:
    return ":" in name


def game_model(name: str) -> type[mesa.Model]:
    """The model class of a registered game name or of a ``"package.module:Class"`` path."""
    path = games().get(name)
    if path is None:
        if not is_game_path(name):
            raise UnknownGame(
                f"unknown game {name!r}; allowed: {', '.join(games())} or 'package.module:ModelClass'"
            )
        path = name
    try:
        cls = load_object(path)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UnknownGame(f"cannot load game {name!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, mesa.Model)):
        raise UnknownGame(f"game {name!r} is not a mesa.Model subclass")
    return cls


def game_name(model_cls: type[mesa.Model]) -> str:
    """The short name a game reports in results (its ``GAME``, else the class name)."""
    return getattr(model_cls, "GAME", "") or model_cls.__name__
