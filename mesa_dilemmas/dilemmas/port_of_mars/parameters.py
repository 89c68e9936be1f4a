"""Port of Mars's parameters as one typed object, and the scenario shorthands for who plays.

:class:`PortOfMarsParameters` is what the model reads (``model.p.n_rounds``); the CLI's
``--set``, TOML scenarios, grids, sensitivity and the dashboard read the same fields (with
the shorthands of :class:`PortOfMarsShorthands`, see :func:`~mesa_dilemmas.dilemmas.base.params_model`).
The shorthands never reach the model: :func:`~mesa_dilemmas.dilemmas.base.build_model`
turns them into ``players`` with :meth:`PortOfMarsModel.population_from_params
<mesa_dilemmas.dilemmas.port_of_mars.model.PortOfMarsModel.population_from_params>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mesa_dilemmas.agents.population import Population
from mesa_dilemmas.dilemmas.base import DilemmaParameters

Preset = Literal["svo", "cultural", "traits", "reference_bot"]
CulturalGroup = Literal[
    "hierarchical-individualist",
    "hierarchical-communitarian",
    "egalitarian-individualist",
    "egalitarian-communitarian",
    "random",
]
Trait = Literal["cooperative", "selfish", "random"]
Leadership = Literal["none", "vanilla", "announce", "unaware"]


class PortOfMarsParameters(DilemmaParameters):
    """The parameters of one Port of Mars game (the model reads them as ``self.p``)."""

    n_rounds: Annotated[
        int, Field(ge=1, le=30, description="rounds a game lasts (when random_rounds is off)")
    ] = 9
    random_rounds: Annotated[
        bool,
        Field(
            description="draw the game's length uniformly from min_rounds..max_rounds, unknown to the players"
        ),
    ] = False
    min_rounds: Annotated[
        int, Field(ge=1, le=30, description="shortest game when random_rounds is on")
    ] = 8
    max_rounds: Annotated[
        int, Field(ge=1, le=30, description="longest game when random_rounds is on")
    ] = 12
    preset: Annotated[
        Preset,
        Field(
            description="how personas are chosen: SVO angles, cultural groups, trait sets or the online game's bot"
        ),
    ] = "svo"
    svo_angles: Annotated[
        Sequence[float],
        Field(
            min_length=5,
            max_length=5,
            description="with preset = svo: each seat's social value orientation angle, in degrees",
        ),
    ] = (-15.0, 0.0, 15.0, 30.0, 60.0)
    cultural_groups: Annotated[
        Sequence[CulturalGroup],
        Field(
            min_length=5,
            max_length=5,
            description="with preset = cultural: each seat's cultural group (or random)",
        ),
    ] = (
        "hierarchical-individualist",
        "hierarchical-communitarian",
        "egalitarian-individualist",
        "egalitarian-communitarian",
        "random",
    )
    traits: Annotated[
        Sequence[Trait],
        Field(
            min_length=5,
            max_length=5,
            description="with preset = traits: each seat's trait set (or random)",
        ),
    ] = ("cooperative", "selfish", "cooperative", "selfish", "random")
    roles: Annotated[
        Sequence[str],
        Field(max_length=5, description="the seats' roles in order (empty: the game's five roles)"),
    ] = ()
    meeting: Annotated[
        bool,
        Field(
            description="hold the meeting before players invest (off: the no-communication condition)"
        ),
    ] = True
    meeting_chars: Annotated[
        int, Field(ge=200, le=1000, description="longest meeting text, in characters")
    ] = 900
    summary_chars: Annotated[
        int,
        Field(
            ge=40, le=400, description="longest meeting summary a player is shown, in characters"
        ),
    ] = 240
    meeting_turns: Annotated[
        int, Field(ge=0, le=3, description="extra rounds of discussion in an LLM-written meeting")
    ] = 0
    leadership: Annotated[
        Leadership,
        Field(
            description="leadership variant: none, vanilla (only the leader knows), announce (everyone knows) or unaware (only the others know)"
        ),
    ] = "none"
    leader_seat: Annotated[
        int, Field(ge=-1, le=4, description="the leader's seat (-1: drawn at random)")
    ] = -1
    events_in_first_round: Annotated[
        bool, Field(description="draw events already in round 1 (the online game starts without)")
    ] = False
    settle_final_round: Annotated[
        bool, Field(description="apply the last round's events and health loss before scoring")
    ] = True
    life_as_usual_copies: Annotated[
        int,
        Field(ge=0, le=60, description="copies of the calm 'life as usual' card in the event deck"),
    ] = 12
    role_table: Annotated[
        Literal["online", "paper"],
        Field(description="resource prices per role: the online game's or the paper's table"),
    ] = "online"
    max_offers: Annotated[
        int, Field(ge=0, le=5, description="trade offers each player may make per trade round")
    ] = 1
    trade_rounds: Annotated[int, Field(ge=0, le=5, description="trade rounds per game round")] = 1
    players: Annotated[
        Population | None,
        Field(
            description="who plays: a [population] table of rule, LLM and strategy groups, and who writes the meeting"
        ),
    ] = None


class PortOfMarsShorthands(BaseModel):
    """Scenario-level ways of saying who plays, expanded into ``players`` (a population)
    before the model is built: the model never receives them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy_factory: Annotated[
        str,
        Field(
            description="shorthand for the rule seats: rule, reference_bot, random or module:callable"
        ),
    ] = "rule"
    llm_players: Annotated[
        int,
        Field(
            ge=0, le=5, description="shorthand: the first N seats are LLM players (model from llm)"
        ),
    ] = 0
    llm: Annotated[
        str,
        Field(description="the model LLM players use, e.g. local or anthropic:claude-haiku-4-5"),
    ] = "local"
    meeting_writer: Annotated[
        Literal["rule", "llm"],
        Field(description="who writes the meeting: the rule narrator or a language model"),
    ] = "rule"


__all__ = [
    "CulturalGroup",
    "Leadership",
    "PortOfMarsParameters",
    "PortOfMarsShorthands",
    "Preset",
    "Trait",
]
