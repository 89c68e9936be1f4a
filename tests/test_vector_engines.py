"""Any game's fast engine runs only what it declares: a game whose package has a ``vector``
module (picked by ``choose_engine`` for rule-only sweeps) must declare every parameter a
scenario may set (``params_model``: the model's ``Parameters`` and ``Shorthands``) as run at
every value (``SUPPORTED``), without effect on rule players (``INERT``) or run at some values
only (``ONLY``), and must send an undeclared one to the Mesa model.  The fishery's
engine is the one today; a future one (the C/D games', Port of Mars') is checked the same way."""

from __future__ import annotations

import pytest

from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.dilemmas.registry import game_model, games
from mesa_dilemmas.scenarios.batch_chunks import vector_engine

ENGINES = {
    name: module
    for name in sorted(games())
    if (module := vector_engine(game_model(name))) is not None
}


def test_the_fishery_has_a_fast_engine() -> None:
    assert "fishery" in ENGINES


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_a_fast_engine_declares_every_model_parameter(name: str) -> None:
    module = ENGINES[name]
    declared = [set(module.SUPPORTED), set(module.INERT), set(module.ONLY)]
    union = set().union(*declared)
    params = set(params_model(game_model(name)).model_fields)  # Parameters and Shorthands
    assert params - union == set(), f"{name}: parameters its fast engine never declares"
    assert sum(map(len, declared)) == len(union), f"{name}: a parameter declared twice"
    assert module.unsupported({"not_a_parameter_of_any_game": 1}) is not None
