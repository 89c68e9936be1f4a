"""Every registered game has a public import path, as Mesa's examples do
(``from mesa.examples import BoltzmannWealth``): ``from <its package> import <ModelClass>`` gives
the registered class, for the built-in games and a third-party one (``examples/stag_hunt``)."""

from __future__ import annotations

import importlib

import pytest

from mesa_dilemmas.dilemmas.registry import game_model, games


@pytest.mark.parametrize("name", sorted(games()))
def test_the_games_package_exports_its_model(name: str) -> None:
    cls = game_model(name)
    package = cls.__module__.rpartition(".")[0]
    assert getattr(importlib.import_module(package), cls.__name__) is cls
    assert cls.__name__ in importlib.import_module(package).__all__


def test_the_built_in_games_are_all_checked() -> None:
    assert {"fishery", "public_goods", "collective_risk", "common_pool", "port_of_mars"} <= set(
        games()
    )
