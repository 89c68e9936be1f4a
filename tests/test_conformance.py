"""Every registered game passes the conformance suite that third-party games are held to."""

from __future__ import annotations

from typing import Annotated, Literal

import mesa
import pytest
from pydantic import Field

from mesa_dilemmas.dilemmas.registry import game_model, games
from mesa_dilemmas.testing import GameCheckFailed, check_game, check_schema

#: small, fast settings per game (the suite itself uses each game's defaults otherwise)
PARAMS = {"fishery": {"n_agents": 5, "proposal_form": "text"}, "port_of_mars": {"n_rounds": 3}}


@pytest.mark.parametrize("name", sorted(games()))
def test_every_registered_game_passes_check_game(name):
    report = check_game(game_model(name), params=PARAMS.get(name, {}), steps=3)
    assert report.decision_kinds, f"{name} asked no decisions"
    assert report.passed[-1] == "llm_path"


def test_check_game_catches_a_broken_game():
    """The suite can fail: a game that asks a decision without a documented fallback."""
    from mesa_dilemmas.agents.decisions import Decision
    from mesa_dilemmas.dilemmas.fishery.model import EFFORT, FisheryModel

    class NoFallback(FisheryModel):
        def phase_harvest(self):
            agent = next(iter(self.agents))
            self.ask(Decision("fishery.effort", EFFORT, {}, agent, self.round, fallback=None))
            super().phase_harvest()

    with pytest.raises(
        GameCheckFailed, match="check_decisions: fishery.effort: no documented fallback"
    ):
        check_game(NoFallback, params={"n_agents": 3}, steps=1)


class Declared(mesa.Model):
    def __init__(
        self,
        *,
        n: Annotated[int, Field(ge=2, description="players")] = 3,
        mode: Annotated[Literal["a", "b"], Field(description="which rule")] = "a",
        rng=None,
    ):
        super().__init__(rng=rng)


class Undescribed(mesa.Model):
    def __init__(self, *, n: Annotated[int, Field(ge=2)] = 3, rng=None):
        super().__init__(rng=rng)


class Unresolvable(mesa.Model):
    def __init__(self, *, n: NoSuchType = 3, rng=None):  # noqa: F821 - the defect under test
        super().__init__(rng=rng)


def test_check_schema_passes_declared_bounds_and_catches_a_schema_that_cannot_build():
    check_schema(Declared)  # n = 1 and mode = "c" are rejected, as declared
    with pytest.raises(
        GameCheckFailed, match="check_schema: the keyword parameters do not build a schema"
    ):
        check_schema(Unresolvable)
    with pytest.raises(GameCheckFailed, match="parameters without a description: n"):
        check_schema(Undescribed)
