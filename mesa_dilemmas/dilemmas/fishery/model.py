"""The shared-lake fishery with punishment, social learning and group norms (paper 003).

One round (Sec. 3.1 of the paper), in phase order:

1. ``harvest``  -- every living villager chooses an effort e in [0, 1]; harvest
   h = alpha * e * R; the lake loses the total catch (never below 0); each
   villager's round payoff starts at h - c.
2. ``punish``   -- every villager is shown one peer drawn uniformly among the
   other living villagers (and the public table of efforts and payoffs) and may
   punish one villager: the punished pays beta, the punisher gamma.  A rule
   villager inspects its drawn peer with probability m and, if that peer's
   harvest exceeds the group norm G, punishes with probability p.  A punished
   villager pays beta once however many punished it (the paper's indicator V;
   ``fine_per_punisher=True`` charges beta per punisher).  Punishment can be
   switched off from round ``punishment_off_at`` (the "shock").  Our addition, off
   by default: with ``sanction_learning`` > 0 a punished rule villager also cuts its
   effort propensity by the fraction min(1, sanction_learning * beta).
3. ``settle``   -- wealth P += round payoff; a villager whose wealth falls below 0
   starves and is removed; the payoff moving average used for imitation is
   updated; the lake regrows logistically, R += r R (1 - R / K).
4. ``learn``    -- payoff-biased social learning.  Each villager revises with
   probability ``revision_rate``: it meets one random peer k and copies k's
   strategy (e, m, g) with the logit probability 1 / (1 + exp(-delta (Pk - Pi)))
   -- the copy is perturbed by Gaussian mutation.  (Language villagers learn
   in context instead: their norm update sees sampled peers' outcomes.)
5. ``govern``   -- propose -> vote.  Every villager proposes a harvest cap.  With
   ``proposal_form="number"`` the median-voter rule sets G; with ``"text"`` the
   distinct proposals go to a plurality vote (ties broken at random), the
   winner is broadcast verbatim, and G becomes the cap it states, if any.

Survival time T_s is the first round with R <= R_min or a death (with GovSim's
``regrowth="doubling"`` the lake is checked after the harvest, before it doubles);
efficiency is the mean over rounds 1..T_s of total harvest / H_opt with H_opt = r K / 4
(K / 2 for doubling); ``govsim_efficiency`` is GovSim's 1 - max(0, H - catch) / H with
H = H_opt * ``efficiency_horizon``.  Compliance is the share with h <= G;
``effort_compliance`` the share with e <= G / (alpha K), the effort meeting G in a full lake.  A text
policy that states no single per-villager cap leaves G unchanged and adds one to
``cap_unparsed``.

Parameters the paper leaves open (alpha, c, R_min, the initial wealth, m, delta,
sigma, the EMA weight, the revision rate) are keyword parameters here with the
calibrated defaults documented in ``docs/fishery.md``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated, Any, ClassVar, Literal

import mesa
import numpy as np
from pydantic import Field

from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.agents.decisions import ChoiceSpec, Decision, NumberSpec, StructSpec, TextSpec
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.agents.population import Group, Population, population_table
from mesa_dilemmas.dilemmas.base import DilemmaModel
from mesa_dilemmas.dilemmas.fishery.language import (
    NO_POLICY_YET,
    initial_strategy,
    prompt_fields,
    prompts_dir,
    proposals_text,
)
from mesa_dilemmas.dilemmas.fishery.norm_structure import (
    numeric_norm_structure,
    text_norm_structure,
)
from mesa_dilemmas.dilemmas.fishery.norms import cap_sentence, stated_cap
from mesa_dilemmas.dilemmas.fishery.villagers import (
    TYPE_RANGES,
    VillagerRules,
    draw_strategy,
)
from mesa_dilemmas.dilemmas.metrics import gini
from mesa_dilemmas.dilemmas.voting import median_vote, plurality_vote

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Positive = Annotated[float, Field(gt=0.0)]
NonNegative = Annotated[float, Field(ge=0.0)]

EFFORT = NumberSpec(0.0, 1.0)
CAP = NumberSpec(0.0, 1e6)
COPY_OR_KEEP = ChoiceSpec(("copy", "keep"))
PROPOSAL_TEXT = TextSpec(max_chars=400)
NORMS = StructSpec({"personal": TextSpec(max_chars=400), "community": TextSpec(max_chars=400)})
NO_ONE = "none"


class Villager(DilemmaAgent):
    """A fisher. Its numbers live in the model's arrays at ``slot``; these properties
    let the DataCollector and the dashboard read them like ordinary attributes.
    ``norm_text`` is the personal strategy of a language (LLM) villager, else None."""

    norm_text: str | None = None

    @property
    def effort(self) -> float:
        return float(self.model.effort[self.slot])

    @property
    def monitoring(self) -> float:
        return float(self.model.monitor[self.slot])

    @property
    def punishing(self) -> float:
        return float(self.model.punish_p[self.slot])

    @property
    def personal_norm(self) -> float:
        return float(self.model.norm[self.slot])

    @property
    def wealth(self) -> float:
        return float(self.model.wealth[self.slot])

    @property
    def harvest(self) -> float:
        return float(self.model.harvest[self.slot])


#: the fishery's rule players by name (a population's ``rule = "..."``)
RULE_PLAYERS = {"rule": lambda **_: VillagerRules()}


class FisheryModel(DilemmaModel):
    """A shared-lake fishery with punishment, payoff-biased imitation and propose->vote norms."""

    GAME: ClassVar[str] = "fishery"
    #: the metrics summarised per grid cell (mean, s.e.m.) in summary.json
    RUN_METRICS: ClassVar[tuple[str, ...]] = (
        "survival_time",
        "efficiency",
        "collapsed",
        "compliance",
        "effort_compliance",
        "govsim_efficiency",  # GovSim's measure: after the first four, off the printed table
        "mean_effort",
        "stock",
        "deaths",
        "punishments",
        "wealth_gini",
        "norm_similarity",
        "norm_alignment",
        "cap_unparsed",
    )
    PHASES: ClassVar[tuple[str, ...]] = ("harvest", "punish", "settle", "learn", "govern")
    PROMPTS_DIR: ClassVar[Any] = prompts_dir()
    #: the step reporter of LLM decisions per LLM agent and round (summary.json llm_per_round)
    LLM_DECISIONS_REPORTER: ClassVar[str] = "llm_decisions_per_villager"

    def __init__(
        self,
        *,
        n_agents: Annotated[int, Field(ge=2, le=1000, description="villagers at the start")] = 10,
        capacity: Annotated[
            Positive,
            Field(
                description="carrying capacity K of the lake", json_schema_extra={"unit": "fish"}
            ),
        ] = 300.0,
        growth_rate: Annotated[
            float, Field(ge=0.0, le=2.0, description="logistic regrowth rate r per round")
        ] = 0.6,
        initial_stock: Annotated[
            Fraction, Field(description="the lake's stock at the start, as a share of K")
        ] = 1.0,
        catchability: Annotated[
            float,
            Field(
                gt=0.0,
                le=1.0,
                description="alpha: the share of the stock one unit of effort catches (h = alpha e R)",
            ),
        ] = 0.0342,
        consumption: Annotated[
            NonNegative,
            Field(
                description="c: fish a villager must eat each round (subtracted from its payoff)"
            ),
        ] = 1.9,
        initial_wealth: Annotated[
            NonNegative,
            Field(description="P0: each villager's wealth at the start; below 0 it starves"),
        ] = 45.7,
        collapse_threshold: Annotated[
            NonNegative,
            Field(
                description="R_min: the lake has collapsed when its stock falls to this many fish",
                json_schema_extra={"unit": "fish"},
            ),
        ] = 50.2,
        penalty: Annotated[
            NonNegative, Field(description="beta: the fine a punished villager pays")
        ] = 10.0,
        punish_cost: Annotated[
            NonNegative, Field(description="gamma: what punishing costs the punisher")
        ] = 0.0,
        punishment: Annotated[
            bool, Field(description="whether villagers may punish at all")
        ] = True,
        punishment_off_at: Annotated[
            int,
            Field(
                ge=0,
                description="the round from which punishment is switched off (0: never; the shock)",
            ),
        ] = 0,
        regrowth: Annotated[
            Literal["logistic", "doubling"],
            Field(description="logistic regrowth, or GovSim's doubling of what is left up to K"),
        ] = "logistic",
        population: Annotated[
            Literal["general", "typed"],
            Field(
                description="rule villagers drawn from one general range, or typed altruists and selfish villagers (Table 3)"
            ),
        ] = "general",
        altruism_ratio: Annotated[
            Fraction,
            Field(description="with population = typed: the share of altruistic villagers"),
        ] = 0.5,
        punisher_profile: Annotated[
            Literal["table", "text"],
            Field(description="who punishes how much: Table 3's ranges, or the appendix's prose"),
        ] = "table",
        monitoring_min: Annotated[
            Fraction,
            Field(description="lowest probability m that a rule villager inspects its drawn peer"),
        ] = 0.347,
        monitoring_max: Annotated[
            Fraction,
            Field(description="highest probability m that a rule villager inspects its drawn peer"),
        ] = 1.0,
        selection_strength: Annotated[
            NonNegative,
            Field(description="delta: how strongly a payoff difference drives imitation (logit)"),
        ] = 1.15,
        mutation_sd: Annotated[
            NonNegative,
            Field(
                description="sigma: s.d. of the Gaussian noise on a copied effort and monitoring"
            ),
        ] = 0.02,
        norm_mutation_sd: Annotated[
            NonNegative,
            Field(description="s.d. of the Gaussian noise on a copied personal norm, in fish"),
        ] = 0.2,
        payoff_ema: Annotated[
            float,
            Field(
                gt=0.0,
                le=1.0,
                description="weight of this round's payoff in the moving average imitation compares",
            ),
        ] = 0.5,
        revision_rate: Annotated[
            Fraction,
            Field(description="probability that a villager considers imitating a peer each round"),
        ] = 0.456,
        respect_personal_cap: Annotated[
            bool,
            Field(
                description="ours, off by default: a rule villager never harvests above its own norm"
            ),
        ] = False,
        sanction_learning: Annotated[
            float,
            Field(
                ge=0.0,
                le=1.0,
                description="ours, off by default: a punished villager cuts its effort by this share per unit of fine",
            ),
        ] = 0.0,
        fine_per_punisher: Annotated[
            bool, Field(description="charge the fine once per punisher instead of once per round")
        ] = False,
        efficiency_horizon: Annotated[
            int, Field(ge=1, description="rounds over which GovSim's efficiency is measured")
        ] = 12,
        social_learning: Annotated[
            bool,
            Field(
                description="villagers see peers' efforts and payoffs and imitate (off: the OGD/Neither ablations)"
            ),
        ] = True,
        group_decision: Annotated[
            bool,
            Field(
                description="villagers propose and vote a shared norm each round (off: the OSL/Neither ablations)"
            ),
        ] = True,
        proposal_form: Annotated[
            Literal["number", "text"],
            Field(description="norm proposals as numbers (median vote) or texts (plurality vote)"),
        ] = "number",
        stop_at_collapse: Annotated[
            bool, Field(description="stop the run at the first collapse or death")
        ] = True,
        players: Annotated[
            Population | None,
            Field(description="who plays: a [population] table of rule, LLM and strategy groups"),
        ] = None,
        llm_agents: Annotated[
            int,
            Field(
                ge=0,
                le=1000,
                description="shorthand: this many villagers are LLM agents (model from llm)",
            ),
        ] = 0,
        llm: Annotated[
            str, Field(description="the model LLM villagers use, e.g. local or openai:gpt-4o-mini")
        ] = "local",
        peers_sampled: Annotated[
            int,
            Field(
                ge=1,
                le=1000,
                description="peers whose outcomes an LLM villager sees when it revises its norm",
            ),
        ] = 3,
        universalization_hint: Annotated[
            bool,
            Field(
                description="GovSim's hint: tell LLM villagers what happens if everyone fishes as they do"
            ),
        ] = False,
        rng: Any = None,
    ) -> None:
        super().__init__(rng=rng)
        self.validate_params(locals())
        self.n_agents = n_agents
        self.capacity = capacity
        self.growth_rate = growth_rate
        self.catchability = catchability
        self.consumption = consumption
        self.collapse_threshold = collapse_threshold
        self.penalty = penalty
        self.punish_cost = punish_cost
        self.punishment = punishment
        self.punishment_off_at = punishment_off_at
        self.regrowth = regrowth
        self.peers_sampled = peers_sampled
        self.universalization_hint = universalization_hint
        self.selection_strength = selection_strength
        self.mutation_sd = mutation_sd
        self.norm_mutation_sd = norm_mutation_sd
        self.payoff_ema = payoff_ema
        self.revision_rate = revision_rate
        self.respect_personal_cap = respect_personal_cap
        self.sanction_learning = sanction_learning
        self.fine_per_punisher = fine_per_punisher
        self.efficiency_horizon = efficiency_horizon
        self.social_learning = social_learning
        self.group_decision = group_decision
        self.proposal_form = proposal_form
        self.stop_at_collapse = stop_at_collapse
        # the optimal sustainable harvest: logistic MSY rK/4; "doubling" regrowth: K/2 (harvest
        # down to K/2 each round, which doubles back to K)
        self.h_opt = growth_rate * capacity / 4.0 if regrowth == "logistic" else capacity / 2.0

        n = n_agents
        self.stock = capacity * initial_stock
        self.strategy_effort = np.zeros(n)  # the imitable effort propensity e
        self.effort = np.zeros(n)  # the effort actually exerted this round
        self.monitor = np.zeros(n)
        self.punish_p = np.zeros(n)
        self.norm = np.zeros(n)
        self.wealth = np.full(n, float(initial_wealth))
        self.payoff_avg = np.zeros(n)
        self.round_payoff = np.zeros(n)
        self.harvest = np.zeros(n)
        self.alive = np.ones(n, dtype=bool)
        self.punished = np.zeros(n, dtype=int)
        #: this round's sanctions as (punisher slot, punished slot), in the order they were given
        self.sanctions: list[tuple[int, int]] = []
        self.villagers: list[Villager] = []
        self.language = np.zeros(n, dtype=bool)  # villagers whose norms are text (LLM villagers)

        dispositions = self._dispositions(population, altruism_ratio)
        self.population = self.population_from_params(
            {"players": players, "llm_agents": llm_agents, "llm": llm}
        )

        def persona_of(slot: int, group: Group | None) -> Persona:
            disposition = dispositions[slot]
            e, m, p, g = draw_strategy(
                self.rng, disposition, punisher_profile, (monitoring_min, monitoring_max)
            )
            self.strategy_effort[slot], self.monitor[slot], self.punish_p[slot] = e, m, p
            self.norm[slot] = g
            self.effort[slot] = e
            persona = self.population.persona_for(group, Persona(disposition=disposition))
            if (
                group is not None and group.kind != "rule"
            ):  # a language villager: its norms are text
                text = persona.strategy_text or initial_strategy(persona.disposition, self.rng)
                persona = replace(persona, strategy_text=text)
                self.language[slot] = True
            return persona

        def villager(slot: int, policy: Policy, persona: Persona) -> Villager:
            agent = Villager(self, policy, persona)
            agent.norm_text = persona.strategy_text if self.language[slot] else None
            return agent

        self.villagers.extend(
            self.seat_players(n, rules=RULE_PLAYERS, persona_of=persona_of, agent_of=villager)
        )

        self.group_norm = float(np.median(self.norm))
        self.shared_policy = NO_POLICY_YET if self.language.any() else cap_sentence(self.group_norm)
        self.norm_history: list[tuple[int, str]] = [(0, self.shared_policy)]

        # per-round and cumulative metrics (model reporters read these attributes)
        self.total_harvest = 0.0
        self.efficiency_now = 0.0
        self.efficiency_sum = 0.0
        self.efficiency = 0.0
        self.compliance = 1.0
        self.effort_compliance = 1.0
        self.stock_after_harvest = self.stock
        #: harvests played so far (before the first, nobody has an effort anyone could observe)
        self.rounds_fished = 0
        self.cumulative_harvest = 0.0
        self.govsim_efficiency = 0.0
        self.cap_unparsed = 0
        self.mean_effort = float(self.effort.mean())
        self.wealth_gini = 0.0
        self.n_alive = n
        self.deaths = 0
        self.punishments = 0
        self.collapsed = False
        self.survival_time = 0
        self.punishment_active = True
        self.norm_similarity = self.norm_alignment = math.nan
        self.update_norm_structure()
        self.llm_decisions_per_villager = math.nan
        self._llm_asked = 0

        self.datacollector = mesa.DataCollector(
            model_reporters={
                "stock": "stock",
                "total_harvest": "total_harvest",
                "efficiency_t": "efficiency_now",
                "efficiency": "efficiency",
                "compliance": "compliance",
                "effort_compliance": "effort_compliance",
                "govsim_efficiency": "govsim_efficiency",
                "cap_unparsed": "cap_unparsed",
                "mean_effort": "mean_effort",
                "group_norm": "group_norm",
                "wealth_gini": "wealth_gini",
                "n_alive": "n_alive",
                "deaths": "deaths",
                "punishments": "punishments",
                "collapsed": "collapsed",
                "survival_time": "survival_time",
                "norm_similarity": "norm_similarity",
                "norm_alignment": "norm_alignment",
                "shared_policy": "shared_policy",
                "llm_decisions_per_villager": "llm_decisions_per_villager",
                **({"decision_fallbacks": "decision_fallbacks"} if self.may_fall_back() else {}),
            },
        )
        self.datacollector.collect(self)

    # -- population --------------------------------------------------------
    def _dispositions(self, population: str, altruism_ratio: float) -> list[str]:
        if population == "general":
            return ["general"] * self.n_agents
        n_alt = int(round(altruism_ratio * self.n_agents))
        kinds = ["altruistic"] * n_alt + ["selfish"] * (self.n_agents - n_alt)
        return [kinds[i] for i in self.rng.permutation(self.n_agents)]

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> None:
        defaults = {"n_agents": 10, "llm_agents": 0, "monitoring_min": 0.347, "monitoring_max": 1.0}
        p = {**defaults, **{k: v for k, v in params.items() if k in defaults}}
        if p["llm_agents"] > p["n_agents"]:
            raise ValueError(f"llm_agents: {p['llm_agents']} exceeds n_agents={p['n_agents']}")
        cls.population_from_params(params).check(p["n_agents"])
        if params.get("universalization_hint") and params.get("regrowth", "logistic") != "doubling":
            raise ValueError(
                "universalization_hint: needs regrowth = 'doubling' (the hint's threshold is GovSim's)"
            )
        if p["monitoring_min"] > p["monitoring_max"]:
            raise ValueError(
                f"monitoring_min: {p['monitoring_min']} exceeds monitoring_max={p['monitoring_max']}"
            )

    @classmethod
    def population_from_params(cls, params: dict[str, Any]) -> Population:
        """``players`` (a population), or the shorthand ``llm_agents = N`` with ``llm = SPEC``:
        N villagers on random seats answer through that model, the rest are rule villagers."""
        players = population_table(params.get("players"))
        n_llm = params.get("llm_agents", 0)
        if n_llm and not players.is_empty():
            raise ValueError("players: give either a population or llm_agents, not both")
        if n_llm:
            return Population(groups=[Group(llm=params.get("llm", "local"), count=n_llm)])
        return players

    def living(self) -> list[Villager]:
        """The living villagers in seat order: the model's AgentSet (the starved are removed)."""
        return list(self.agents)

    def public_table(self) -> list[dict[str, Any]]:
        """What every villager sees of the others: effort and total payoff (wealth)."""
        living = self.living()
        slots = [v.slot for v in living]
        efforts = np.round(self.effort[slots], 3).tolist()
        payoffs = np.round(self.wealth[slots], 2).tolist()
        return [
            {"id": v.unique_id, "effort": e, "payoff": p}
            for v, e, p in zip(living, efforts, payoffs, strict=True)
        ]

    def _observation(
        self,
        v: Villager,
        table: list[dict[str, Any]],
        *,
        peers_visible: bool | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """What ``v`` is told. Peers' efforts and payoffs are visible with social learning on;
        ``peers_visible=True`` shows them anyway (punishing: the ablations remove imitation, not
        the sight of others' catches when judging them)."""
        visible = self.social_learning if peers_visible is None else peers_visible
        obs = {
            "villager": v.unique_id,
            "consumption": self.consumption,
            "personal_norm": float(self.norm[v.slot]),
            "shared_policy": self.shared_policy if self.group_decision else None,
            "group_norm": self.group_norm,
            "lake_stock": round(self.stock, 2),
            "own_effort": float(self.effort[v.slot]),
            "own_payoff": float(self.wealth[v.slot]),
            "villagers": table if visible else None,
            **extra,
        }
        if self.language[v.slot]:  # text fields for the prompt templates
            obs["personal_norm"] = v.norm_text
            obs.update(prompt_fields(self, v, obs["villagers"]))
        return obs

    # -- phases ------------------------------------------------------------
    def phase_harvest(self) -> None:
        living = self.living()
        self._llm_villagers_this_round = int((self.language & self.alive).sum())
        table = self.public_table()
        efforts = self.ask_all(
            [
                Decision(
                    "fishery.effort",
                    EFFORT,
                    self._observation(v, table),
                    v,
                    self.round,
                    fallback=float(self.strategy_effort[v.slot]),
                )
                for v in living
            ]
        )
        slots = np.fromiter((v.slot for v in living), dtype=int, count=len(living))
        self.effort[slots] = efforts
        self.harvest[:] = 0.0
        self.harvest[slots] = self.catchability * self.effort[slots] * self.stock
        total = float(self.harvest.sum())
        if total > self.stock:  # cannot catch more fish than there are: scale catches down
            self.harvest *= self.stock / total
            total = self.stock
        self.stock = self.stock_after_harvest = max(0.0, self.stock - total)
        self.total_harvest = total
        self.cumulative_harvest += total
        self.round_payoff[:] = 0.0
        self.round_payoff[slots] = self.harvest[slots] - self.consumption
        self.punished[:] = 0
        self.rounds_fished += 1

    def phase_punish(self) -> None:
        self.punishments = 0
        self.sanctions = []
        self.punishment_active = self.punishment and not (
            self.punishment_off_at and self.round >= self.punishment_off_at
        )
        if not self.punishment_active:
            return
        living = self.living()
        if len(living) < 2:
            return
        ids = tuple(str(v.unique_id) for v in living)
        by_id = {v.unique_id: v for v in living}
        harvests = np.round(self.harvest[[v.slot for v in living]], 3).tolist()
        table = [
            {**row, "harvest": h} for row, h in zip(self.public_table(), harvests, strict=True)
        ]
        picks = self.rng.integers(0, len(living) - 1, size=len(living))
        decisions = []
        everyone = (*ids, NO_ONE)  # one answer schema for all (each may not name itself)
        for i, v in enumerate(living):
            peer = living[picks[i] + (picks[i] >= i)]  # uniform over the others
            options = ids[:i] + ids[i + 1 :] + (NO_ONE,)
            obs = self._observation(
                v,
                table,
                peers_visible=True,
                sampled_peer=peer.unique_id,
                sampled_peer_harvest=float(self.harvest[peer.slot]),
                penalty=self.penalty,
                punish_cost=self.punish_cost,
            )
            decisions.append(
                Decision(
                    "fishery.punish",
                    ChoiceSpec(options, schema_options=everyone),
                    obs,
                    v,
                    self.round,
                    fallback=NO_ONE,
                )
            )
        for v, target in zip(living, self.ask_all(decisions), strict=True):
            if target == NO_ONE:
                continue
            victim = by_id[int(target)]
            self.round_payoff[v.slot] -= self.punish_cost  # gamma * B, B an indicator
            self.punished[victim.slot] += 1
            self.sanctions.append((v.slot, victim.slot))
            self.punishments += 1
        # beta * V with V the indicator "was punished this round" (paper 003, Sec. 3.1.2): one fine
        # however many punish; ``fine_per_punisher`` (our option) charges beta per punisher instead
        fined = self.punished if self.fine_per_punisher else (self.punished > 0)
        self.round_payoff -= self.penalty * fined
        if (
            self.sanction_learning
        ):  # our addition (off by default): a sanctioned rule villager fishes less
            hit = (
                self.punished > 0
            ) & ~self.language  # an LLM villager's drawn effort is only its fallback
            cut = min(1.0, self.sanction_learning * self.penalty)
            self.strategy_effort[hit] *= 1.0 - cut

    def phase_settle(self) -> None:
        alive = self.alive
        self.wealth[alive] += self.round_payoff[alive]
        w = self.payoff_ema
        self.payoff_avg[alive] = (1 - w) * self.payoff_avg[alive] + w * self.round_payoff[alive]
        starved = alive & (self.wealth < 0)
        for slot in np.flatnonzero(starved):
            self.alive[slot] = False
            self.effort[slot] = self.strategy_effort[slot] = 0.0
            self.villagers[slot].remove()
            self.deaths += 1
        s = self.stock
        if self.regrowth == "doubling":  # GovSim: what is left doubles, up to capacity
            self.stock = min(self.capacity, 2.0 * s)
        else:  # logistic regrowth after the harvest
            self.stock = min(self.capacity, s + self.growth_rate * s * (1.0 - s / self.capacity))

    def phase_learn(self) -> None:
        if not self.social_learning:
            return
        living = self.living()
        if len(living) < 2:
            return
        revising = self.rng.random(len(living)) < self.revision_rate
        picks = self.rng.integers(0, len(living) - 1, size=len(living))
        decisions, pairs = [], []
        for i, v in enumerate(living):
            if not revising[i] or self.language[v.slot]:  # LLM villagers learn in context instead
                continue
            k = living[picks[i] + (picks[i] >= i)]
            obs = {
                "own": self._strategy_view(v),
                "model": self._strategy_view(k),
                "selection_strength": self.selection_strength,
            }
            decisions.append(
                Decision("fishery.imitate", COPY_OR_KEEP, obs, v, self.round, fallback="keep")
            )
            pairs.append((v.slot, k.slot))
        for (i, k), choice in zip(pairs, self.ask_all(decisions), strict=True):
            if choice == "copy":
                self._copy_strategy(i, k)

    def _strategy_view(self, v: Villager) -> dict[str, Any]:
        s = v.slot
        effort = self.effort[s] if self.language[s] else self.strategy_effort[s]
        return {
            "id": v.unique_id,
            "effort": float(effort),
            "monitoring": float(self.monitor[s]),
            "norm": float(self.norm[s]),
            "payoff": float(self.payoff_avg[s]),
        }

    def _copy_strategy(self, i: int, k: int) -> None:
        """Adopt k's (e, m, g) with Gaussian mutation, clipped to each component's range.  An LLM
        villager's e is the effort it actually played (its drawn effort is only a fallback)."""
        noise = self.rng.normal(0.0, 1.0, size=3)
        effort = self.effort[k] if self.language[k] else self.strategy_effort[k]
        self.strategy_effort[i] = min(1.0, max(0.0, effort + self.mutation_sd * noise[0]))
        self.monitor[i] = min(1.0, max(0.0, self.monitor[k] + self.mutation_sd * noise[1]))
        self.norm[i] = max(0.0, self.norm[k] + self.norm_mutation_sd * noise[2])

    def phase_govern(self) -> None:
        """Propose -> vote.  Language villagers also rewrite their personal strategy here (Fig. 10),
        with or without a group decision; numeric villagers propose their cap."""
        living = self.living()
        if not living or not (self.group_decision or self.language.any()):
            return
        table = self.public_table()
        textual = self.language.any() or self.proposal_form == "text"
        decisions = []
        for v in living:
            if self.language[v.slot]:
                obs = self._observation(v, table)
                if self.social_learning:  # social learning in context: a few sampled peers
                    others = [r for r in table if r["id"] != v.unique_id]
                    k = min(self.peers_sampled, len(others))
                    picks = sorted(self.rng.choice(len(others), size=k, replace=False)) if k else []
                    obs.update(prompt_fields(self, v, [others[i] for i in picks]))
                decisions.append(
                    Decision(
                        "fishery.norms",
                        NORMS,
                        obs,
                        v,
                        self.round,
                        fallback={"personal": v.norm_text, "community": v.norm_text},
                    )
                )
            elif self.group_decision:
                cap = float(self.norm[v.slot])
                obs = self._observation(v, table, own_cap_text=cap_sentence(cap))
                decisions.append(
                    Decision(
                        "fishery.propose",
                        PROPOSAL_TEXT if textual else CAP,
                        obs,
                        v,
                        self.round,
                        fallback=cap_sentence(cap) if textual else cap,
                    )
                )
        answers = self.ask_all(decisions)
        proposals = []
        for d, answer in zip(decisions, answers, strict=True):
            if d.kind == "fishery.norms":
                d.agent.norm_text = answer["personal"]
                proposals.append(answer["community"])
            else:
                proposals.append(answer)
        if not self.group_decision:
            return
        if not textual:  # median-voter rule over numeric caps
            self.group_norm = median_vote(proposals)
            self.shared_policy = cap_sentence(self.group_norm)
        else:  # plurality vote among the distinct text proposals, broadcast verbatim
            options = tuple(dict.fromkeys(proposals))
            if len(options) == 1:
                winner = options[0]
            else:
                ballots = []
                for v in living:
                    obs = self._observation(
                        v, table, proposals=options, proposal_caps=[stated_cap(o) for o in options]
                    )
                    if self.language[v.slot]:
                        obs["proposals_text"] = proposals_text(options)
                    ballots.append(
                        Decision(
                            "fishery.vote",
                            ChoiceSpec(options),
                            obs,
                            v,
                            self.round,
                            fallback=options[0],
                        )
                    )
                winner = plurality_vote(self.ask_all(ballots), self.rng)
            self.shared_policy = winner
            cap = stated_cap(winner)
            if cap is not None:
                self.group_norm = cap
            else:  # the policy states no single per-villager cap in fish: G stays, and we count it
                self.cap_unparsed += 1
        if not self.norm_history or self.norm_history[-1][1] != self.shared_policy:
            self.norm_history.append((self.round, self.shared_policy))

    # -- bookkeeping -------------------------------------------------------
    def end_of_round(self) -> None:
        alive = self.alive
        n_alive = int(alive.sum())
        self.n_alive = n_alive
        self.efficiency_now = self.total_harvest / self.h_opt if self.h_opt > 0 else 0.0
        if n_alive:
            self.compliance = float((self.harvest[alive] <= self.group_norm + 1e-12).mean())
            # effort-based: e <= G / (alpha K), the effort that meets G in a full lake.  (At the round's
            # own stock this would equal h <= G, which rises as the lake empties whatever villagers do.)
            allowed = self.group_norm / (self.catchability * self.capacity)
            self.effort_compliance = float((self.effort[alive] <= allowed + 1e-12).mean())
            self.mean_effort = float(self.effort[alive].mean())
            self.wealth_gini = gini(self.wealth[alive])
        else:
            self.compliance, self.mean_effort = math.nan, math.nan
        self.update_norm_structure()
        self._count_llm_decisions()
        if not self.collapsed:
            self.efficiency_sum += self.efficiency_now
            self.survival_time = self.round
            self.efficiency = self.efficiency_sum / self.round
            # GovSim's efficiency: 1 - max(0, H - total catch) / H with H the optimal catch over the
            # horizon (K/2 per month x 12 months = 600 fish for its lake of 100)
            best = self.h_opt * self.efficiency_horizon
            self.govsim_efficiency = (
                1.0 - max(0.0, best - self.cumulative_harvest) / best if best > 0 else 0.0
            )
            # GovSim checks the lake after the harvest, before the remainder doubles
            stock = self.stock_after_harvest if self.regrowth == "doubling" else self.stock
            if stock <= self.collapse_threshold or n_alive < self.n_agents:
                self.collapsed = True
        if self.collapsed and self.stop_at_collapse:
            self.running = False
        super().end_of_round()

    def _count_llm_decisions(self) -> None:
        """Decisions put to LLM villagers this round, per LLM villager (the paper's budget is 4)."""
        if not self.language.any():
            return
        ids = {v.unique_id for v in self.villagers if self.language[v.slot]}
        asked = sum(row[0] for (aid, _), row in self.broker.stats.counts.items() if aid in ids)
        round_asked, self._llm_asked = asked - self._llm_asked, asked
        self.llm_decisions_per_villager = round_asked / max(1, self._llm_villagers_this_round)

    def update_norm_structure(self) -> None:
        """Similarity and alignment of the living villagers' personal norms (paper 003, Sec. 4.2.4):
        TF-IDF of the strategy texts in a language society, else the numeric strategies."""
        living = self.living()
        if len(living) < 2:
            self.norm_similarity = self.norm_alignment = math.nan
            return
        if self.language.any():
            texts = [v.norm_text or cap_sentence(self.norm[v.slot]) for v in living]
            result = text_norm_structure(texts)
        else:
            slots = [v.slot for v in living]
            result = numeric_norm_structure(
                np.column_stack(
                    [self.strategy_effort[slots], self.monitor[slots], self.norm[slots]]
                )
            )
        self.norm_similarity, self.norm_alignment = result.similarity, result.alignment


__all__ = ["TYPE_RANGES", "FisheryModel", "Villager"]
