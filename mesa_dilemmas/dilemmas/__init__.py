"""The games, one Mesa ``Model`` subclass each, looked up by name (imported lazily)."""

from __future__ import annotations

from importlib import import_module

import mesa

#: game name -> "module:ModelClass"; a module is imported only when its game is used
GAMES: dict[str, str] = {
    "fishery": "mesa_dilemmas.dilemmas.fishery:FisheryModel",
    "public_goods": "mesa_dilemmas.dilemmas.public_goods:PublicGoodsModel",
    "collective_risk": "mesa_dilemmas.dilemmas.collective_risk:CollectiveRiskModel",
    "common_pool": "mesa_dilemmas.dilemmas.common_pool:CommonPoolModel",
    "port_of_mars": "mesa_dilemmas.dilemmas.port_of_mars:PortOfMarsModel",
}


def load_object(path: str) -> object:
    """Import ``"package.module:attribute"``."""
    module, _, attr = path.partition(":")
    obj = import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def game_model(name: str) -> type[mesa.Model]:
    """The model class of a game name, or a clear error listing the known games."""
    if name not in GAMES:
        raise KeyError(f"unknown game {name!r}; known games: {', '.join(sorted(GAMES))}")
    return load_object(GAMES[name])  # type: ignore[return-value]
