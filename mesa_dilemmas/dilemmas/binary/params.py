"""The parameters every C/D game has, annotated once: each game's ``__init__`` uses these types
(the schema, its bounds and its descriptions come from them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from mesa_dilemmas.agents.population import Population
from mesa_dilemmas.dilemmas.binary.rules import MAX_PLAYERS

Players = Annotated[int, Field(ge=2, le=MAX_PLAYERS, description="players in the group")]
Rounds = Annotated[int, Field(ge=1, le=100_000, description="rounds a game lasts")]
Strategies = Annotated[
    tuple[str, ...],
    Field(
        description="the strategy of each default seat, e.g. tft(0.5), all_d, grim(0.34), "
        "or SET:NAME"
    ),
]
PopulationTable = Annotated[
    Population | None,
    Field(description="who plays: a [population] table of strategy, rule and LLM groups"),
]
