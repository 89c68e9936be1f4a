"""The fishery's parameters, one typed object (``model.p``), and its scenario shorthands.

:class:`FisheryParameters` is the schema the CLI (``--set``), TOML scenarios, sweeps,
sensitivity analyses and the dashboard read; :class:`~.model.FisheryModel` validates its keyword
arguments into it and reads them as ``self.p.capacity``.  Parameters the paper leaves open
(alpha, c, R_min, the initial wealth, m, delta, sigma, the EMA weight, the revision rate) carry
the calibrated defaults documented in ``docs/fishery.md``.  :class:`FisheryShorthands` are the
scenario's other way to say who plays (``llm_agents = 3`` with ``llm = "local"``): the scenario
loader expands them into ``players`` (:func:`~mesa_dilemmas.dilemmas.base.build_model`), so the
model only ever receives a population.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mesa_dilemmas.agents.population import Population
from mesa_dilemmas.dilemmas.base import DilemmaParameters

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Positive = Annotated[float, Field(gt=0.0)]
NonNegative = Annotated[float, Field(ge=0.0)]


class FisheryParameters(DilemmaParameters):
    """The fishery's parameters (read by the model as ``self.p``); cross-field checks are
    :meth:`~.model.FisheryModel.validate_params`."""

    n_agents: Annotated[int, Field(ge=2, le=1000, description="villagers at the start")] = 10
    capacity: Annotated[
        Positive,
        Field(description="carrying capacity K of the lake", json_schema_extra={"unit": "fish"}),
    ] = 300.0
    growth_rate: Annotated[
        float, Field(ge=0.0, le=2.0, description="logistic regrowth rate r per round")
    ] = 0.6
    initial_stock: Annotated[
        Fraction, Field(description="the lake's stock at the start, as a share of K")
    ] = 1.0
    catchability: Annotated[
        float,
        Field(
            gt=0.0,
            le=1.0,
            description="alpha: the share of the stock one unit of effort catches (h = alpha e R)",
        ),
    ] = 0.0342
    consumption: Annotated[
        NonNegative,
        Field(description="c: fish a villager must eat each round (subtracted from its payoff)"),
    ] = 1.9
    initial_wealth: Annotated[
        NonNegative,
        Field(description="P0: each villager's wealth at the start; below 0 it starves"),
    ] = 45.7
    collapse_threshold: Annotated[
        NonNegative,
        Field(
            description="R_min: the lake has collapsed when its stock falls to this many fish",
            json_schema_extra={"unit": "fish"},
        ),
    ] = 50.2
    penalty: Annotated[
        NonNegative, Field(description="beta: the fine a punished villager pays")
    ] = 10.0
    punish_cost: Annotated[
        NonNegative, Field(description="gamma: what punishing costs the punisher")
    ] = 0.0
    punishment: Annotated[bool, Field(description="whether villagers may punish at all")] = True
    punishment_off_at: Annotated[
        int,
        Field(
            ge=0,
            description="the round from which punishment is switched off (0: never; the shock)",
        ),
    ] = 0
    regrowth: Annotated[
        Literal["logistic", "doubling"],
        Field(description="logistic regrowth, or GovSim's doubling of what is left up to K"),
    ] = "logistic"
    population: Annotated[
        Literal["general", "typed"],
        Field(
            description="rule villagers drawn from one general range, or typed altruists and selfish villagers (Table 3)"
        ),
    ] = "general"
    altruism_ratio: Annotated[
        Fraction,
        Field(description="with population = typed: the share of altruistic villagers"),
    ] = 0.5
    punisher_profile: Annotated[
        Literal["table", "text"],
        Field(description="who punishes how much: Table 3's ranges, or the appendix's prose"),
    ] = "table"
    monitoring_min: Annotated[
        Fraction,
        Field(description="lowest probability m that a rule villager inspects its drawn peer"),
    ] = 0.347
    monitoring_max: Annotated[
        Fraction,
        Field(description="highest probability m that a rule villager inspects its drawn peer"),
    ] = 1.0
    selection_strength: Annotated[
        NonNegative,
        Field(description="delta: how strongly a payoff difference drives imitation (logit)"),
    ] = 1.15
    mutation_sd: Annotated[
        NonNegative,
        Field(description="sigma: s.d. of the Gaussian noise on a copied effort and monitoring"),
    ] = 0.02
    norm_mutation_sd: Annotated[
        NonNegative,
        Field(description="s.d. of the Gaussian noise on a copied personal norm, in fish"),
    ] = 0.2
    payoff_ema: Annotated[
        float,
        Field(
            gt=0.0,
            le=1.0,
            description="weight of this round's payoff in the moving average imitation compares",
        ),
    ] = 0.5
    revision_rate: Annotated[
        Fraction,
        Field(description="probability that a villager considers imitating a peer each round"),
    ] = 0.456
    respect_personal_cap: Annotated[
        bool,
        Field(
            description="ours, off by default: a rule villager never harvests above its own norm"
        ),
    ] = False
    sanction_learning: Annotated[
        float,
        Field(
            ge=0.0,
            le=1.0,
            description="ours, off by default: a punished villager cuts its effort by this share per unit of fine",
        ),
    ] = 0.0
    fine_per_punisher: Annotated[
        bool, Field(description="charge the fine once per punisher instead of once per round")
    ] = False
    efficiency_horizon: Annotated[
        int, Field(ge=1, description="rounds over which GovSim's efficiency is measured")
    ] = 12
    social_learning: Annotated[
        bool,
        Field(
            description="villagers see peers' efforts and payoffs and imitate (off: the OGD/Neither ablations)"
        ),
    ] = True
    group_decision: Annotated[
        bool,
        Field(
            description="villagers propose and vote a shared norm each round (off: the OSL/Neither ablations)"
        ),
    ] = True
    proposal_form: Annotated[
        Literal["number", "text"],
        Field(description="norm proposals as numbers (median vote) or texts (plurality vote)"),
    ] = "number"
    stop_at_collapse: Annotated[
        bool, Field(description="stop the run at the first collapse or death")
    ] = True
    players: Annotated[
        Population | None,
        Field(description="who plays: a [population] table of rule, LLM and strategy groups"),
    ] = None
    peers_sampled: Annotated[
        int,
        Field(
            ge=1,
            le=1000,
            description="peers whose outcomes an LLM villager sees when it revises its norm",
        ),
    ] = 3
    universalization_hint: Annotated[
        bool,
        Field(
            description="GovSim's hint: tell LLM villagers what happens if everyone fishes as they do"
        ),
    ] = False


class FisheryShorthands(BaseModel):
    """Scenario shorthands for who plays: ``llm_agents`` villagers on random seats answer
    through ``llm``, the rest are rule villagers (:meth:`~.model.FisheryModel.population_from_params`
    turns them into ``players``; the model never receives them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    llm_agents: Annotated[
        int,
        Field(
            ge=0,
            le=1000,
            description="shorthand: this many villagers are LLM agents (model from llm)",
        ),
    ] = 0
    llm: Annotated[
        str, Field(description="the model LLM villagers use, e.g. local or openai:gpt-4o-mini")
    ] = "local"


__all__ = ["FisheryParameters", "FisheryShorthands"]
