"""The common-pool fishery with punishment, social learning and group norms (paper 003).

One round (Sec. 3.1 of the paper), in phase order:

1. ``harvest``  -- every living villager chooses an effort e in [0, 1]; harvest
   h = alpha * e * R; the lake loses the total catch (never below 0); each
   villager's round payoff starts at h - c.
2. ``punish``   -- every villager is shown one peer drawn uniformly among the
   other living villagers (and the public table of efforts and payoffs) and may
   punish one villager: the punished pays beta, the punisher gamma.  A rule
   villager inspects its drawn peer with probability m and, if that peer's
   harvest exceeds the group norm G, punishes with probability p.  Punishment
   can be switched off from round ``punishment_off_at`` (the "shock").  With
   ``sanction_learning`` > 0 a punished villager also learns individually from the
   sanction: it cuts its effort propensity by the fraction min(1, sanction_learning *
   beta) -- the heavier the fine, the larger the correction.
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

Survival time T_s is the first round with R <= R_min or a death; efficiency is
the mean over rounds 1..T_s of total harvest / H_opt with H_opt = r K / 4.

Parameters the paper leaves open (alpha, c, R_min, the initial wealth, m, delta,
sigma, the EMA weight, the revision rate) are keyword parameters here with the
calibrated defaults documented in ``docs/fishery.md``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

import mesa
import numpy as np
from pydantic import Field

from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.agents.decisions import ChoiceSpec, Decision, NumberSpec, TextSpec
from mesa_dilemmas.agents.fishery_villagers import (
    TYPE_RANGES,
    VillagerRules,
    draw_strategy,
)
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.dilemmas.base import DilemmaModel
from mesa_dilemmas.dilemmas.metrics import gini
from mesa_dilemmas.dilemmas.norms import cap_sentence, median_vote, plurality_vote, stated_cap

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Positive = Annotated[float, Field(gt=0.0)]
NonNegative = Annotated[float, Field(ge=0.0)]

EFFORT = NumberSpec(0.0, 1.0)
CAP = NumberSpec(0.0, 1e6)
COPY_OR_KEEP = ChoiceSpec(("copy", "keep"))
PROPOSAL_TEXT = TextSpec(max_chars=400)
NO_ONE = "none"


class Villager(DilemmaAgent):
    """A fisher. Its numbers live in the model's arrays at ``slot``; these properties
    let the DataCollector and the dashboard read them like ordinary attributes."""

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


class FisheryModel(DilemmaModel):
    """Common-pool fishery with punishment, payoff-biased imitation and propose->vote norms."""

    GAME: ClassVar[str] = "fishery"
    PHASES: ClassVar[tuple[str, ...]] = ("harvest", "punish", "settle", "learn", "govern")

    def __init__(
        self,
        *,
        n_agents: Annotated[int, Field(ge=2, le=1000)] = 10,
        capacity: Positive = 300.0,
        growth_rate: Annotated[float, Field(ge=0.0, le=2.0)] = 0.6,
        initial_stock: Fraction = 1.0,
        catchability: Annotated[float, Field(gt=0.0, le=1.0)] = 0.04,
        consumption: NonNegative = 1.0,
        initial_wealth: NonNegative = 100.0,
        collapse_threshold: NonNegative = 15.0,
        penalty: NonNegative = 10.0,
        punish_cost: NonNegative = 0.0,
        punishment_off_at: Annotated[int, Field(ge=0)] = 0,
        population: Literal["general", "typed"] = "general",
        altruism_ratio: Fraction = 0.5,
        punisher_profile: Literal["table", "text"] = "table",
        monitoring_min: Fraction = 0.5,
        monitoring_max: Fraction = 1.0,
        selection_strength: NonNegative = 1.0,
        mutation_sd: NonNegative = 0.02,
        norm_mutation_sd: NonNegative = 0.2,
        payoff_ema: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5,
        revision_rate: Fraction = 0.3,
        respect_personal_cap: bool = False,
        sanction_learning: Annotated[float, Field(ge=0.0, le=1.0)] = 0.03,
        social_learning: bool = True,
        group_decision: bool = True,
        proposal_form: Literal["number", "text"] = "number",
        stop_at_collapse: bool = True,
        llm_agents: Annotated[int, Field(ge=0, le=1000)] = 0,
        llm: str = "local",
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
        self.punishment_off_at = punishment_off_at
        self.selection_strength = selection_strength
        self.mutation_sd = mutation_sd
        self.norm_mutation_sd = norm_mutation_sd
        self.payoff_ema = payoff_ema
        self.revision_rate = revision_rate
        self.respect_personal_cap = respect_personal_cap
        self.sanction_learning = sanction_learning
        self.social_learning = social_learning
        self.group_decision = group_decision
        self.proposal_form = proposal_form
        self.stop_at_collapse = stop_at_collapse
        self.h_opt = growth_rate * capacity / 4.0

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
        self.villagers: list[Villager] = []

        dispositions = self._dispositions(population, altruism_ratio)
        llm_slots = set(self.rng.choice(n, size=llm_agents, replace=False).tolist()) if llm_agents else set()
        for slot, disposition in enumerate(dispositions):
            e, m, p, g = draw_strategy(self.rng, disposition, punisher_profile, (monitoring_min, monitoring_max))
            self.strategy_effort[slot], self.monitor[slot], self.punish_p[slot], self.norm[slot] = e, m, p, g
            self.effort[slot] = e
            persona = Persona(disposition=disposition)
            if slot in llm_slots:
                from mesa_dilemmas.llm import make_policy

                policy = make_policy(llm)
            else:
                policy = VillagerRules()
            agent = Villager(self, policy, persona)
            agent.slot = slot
            self.villagers.append(agent)

        self.group_norm = float(np.median(self.norm))
        self.shared_policy = cap_sentence(self.group_norm)
        self.norm_history: list[tuple[int, str]] = [(0, self.shared_policy)]

        # per-round and cumulative metrics (model reporters read these attributes)
        self.total_harvest = 0.0
        self.efficiency_now = 0.0
        self.efficiency_sum = 0.0
        self.efficiency = 0.0
        self.compliance = 1.0
        self.mean_effort = float(self.effort.mean())
        self.wealth_gini = 0.0
        self.n_alive = n
        self.deaths = 0
        self.punishments = 0
        self.collapsed = False
        self.survival_time = 0
        self.punishment_active = True

        self.datacollector = mesa.DataCollector(
            model_reporters={
                "stock": "stock",
                "total_harvest": "total_harvest",
                "efficiency_t": "efficiency_now",
                "efficiency": "efficiency",
                "compliance": "compliance",
                "mean_effort": "mean_effort",
                "group_norm": "group_norm",
                "wealth_gini": "wealth_gini",
                "n_alive": "n_alive",
                "deaths": "deaths",
                "punishments": "punishments",
                "collapsed": "collapsed",
                "survival_time": "survival_time",
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
        defaults = {"n_agents": 10, "llm_agents": 0, "monitoring_min": 0.5, "monitoring_max": 1.0}
        p = {**defaults, **{k: v for k, v in params.items() if k in defaults}}
        if p["llm_agents"] > p["n_agents"]:
            raise ValueError(f"llm_agents: {p['llm_agents']} exceeds n_agents={p['n_agents']}")
        if p["monitoring_min"] > p["monitoring_max"]:
            raise ValueError(f"monitoring_min: {p['monitoring_min']} exceeds monitoring_max={p['monitoring_max']}")

    @classmethod
    def llm_specs(cls, params: dict[str, Any]) -> set[str]:
        return {params.get("llm", "local")} if params.get("llm_agents", 0) else set()

    def living(self) -> list[Villager]:
        return [v for v in self.villagers if self.alive[v.slot]]

    def public_table(self) -> list[dict[str, Any]]:
        """What every villager sees of the others: effort and total payoff (wealth)."""
        return [
            {"id": v.unique_id, "effort": round(float(self.effort[v.slot]), 3),
             "payoff": round(float(self.wealth[v.slot]), 2)}
            for v in self.living()
        ]

    def _observation(self, v: Villager, table: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "villager": v.unique_id,
            "consumption": self.consumption,
            "personal_norm": float(self.norm[v.slot]),
            "shared_policy": self.shared_policy if self.group_decision else None,
            "group_norm": self.group_norm,
            "lake_stock": round(self.stock, 2),
            "own_effort": float(self.effort[v.slot]),
            "own_payoff": float(self.wealth[v.slot]),
            "villagers": table if self.social_learning else None,
            **extra,
        }

    # -- phases ------------------------------------------------------------
    def phase_harvest(self) -> None:
        living = self.living()
        table = self.public_table()
        efforts = self.ask_all([
            Decision("fishery.effort", EFFORT, self._observation(v, table), v, self.round,
                     fallback=float(self.strategy_effort[v.slot]))
            for v in living
        ])
        slots = np.fromiter((v.slot for v in living), dtype=int, count=len(living))
        self.effort[slots] = efforts
        self.harvest[:] = 0.0
        self.harvest[slots] = self.catchability * self.effort[slots] * self.stock
        total = float(self.harvest.sum())
        if total > self.stock:  # cannot catch more fish than there are: scale catches down
            self.harvest *= self.stock / total
            total = self.stock
        self.stock = max(0.0, self.stock - total)
        self.total_harvest = total
        self.round_payoff[:] = 0.0
        self.round_payoff[slots] = self.harvest[slots] - self.consumption
        self.punished[:] = 0

    def phase_punish(self) -> None:
        self.punishments = 0
        self.punishment_active = not (self.punishment_off_at and self.round >= self.punishment_off_at)
        if not self.punishment_active:
            return
        living = self.living()
        if len(living) < 2:
            return
        ids = [v.unique_id for v in living]
        by_id = {v.unique_id: v for v in living}
        table = [{**row, "harvest": round(float(self.harvest[by_id[row["id"]].slot]), 3)}
                 for row in self.public_table()]
        picks = self.rng.integers(0, len(living) - 1, size=len(living))
        decisions = []
        for i, v in enumerate(living):
            peer = living[picks[i] + (picks[i] >= i)]  # uniform over the others
            options = tuple(str(x) for x in ids if x != v.unique_id) + (NO_ONE,)
            obs = self._observation(
                v, table, sampled_peer=peer.unique_id,
                sampled_peer_harvest=float(self.harvest[peer.slot]),
                penalty=self.penalty, punish_cost=self.punish_cost,
            )
            decisions.append(Decision("fishery.punish", ChoiceSpec(options), obs, v, self.round,
                                      fallback=NO_ONE))
        for v, target in zip(living, self.ask_all(decisions), strict=True):
            if target == NO_ONE:
                continue
            victim = by_id[int(target)]
            self.round_payoff[v.slot] -= self.punish_cost
            self.round_payoff[victim.slot] -= self.penalty
            self.punished[victim.slot] += 1
            self.punishments += 1
        if self.sanction_learning:  # individual learning: a sanctioned villager fishes less
            hit = self.punished > 0
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
        # logistic regrowth after the harvest
        s = self.stock
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
            if not revising[i]:
                continue
            k = living[picks[i] + (picks[i] >= i)]
            obs = {
                "own": self._strategy_view(v),
                "model": self._strategy_view(k),
                "selection_strength": self.selection_strength,
            }
            decisions.append(Decision("fishery.imitate", COPY_OR_KEEP, obs, v, self.round, fallback="keep"))
            pairs.append((v.slot, k.slot))
        for (i, k), choice in zip(pairs, self.ask_all(decisions), strict=True):
            if choice == "copy":
                self._copy_strategy(i, k)

    def _strategy_view(self, v: Villager) -> dict[str, Any]:
        s = v.slot
        return {"id": v.unique_id, "effort": float(self.strategy_effort[s]), "monitoring": float(self.monitor[s]),
                "norm": float(self.norm[s]), "payoff": float(self.payoff_avg[s])}

    def _copy_strategy(self, i: int, k: int) -> None:
        """Adopt k's (e, m, g) with Gaussian mutation, clipped to each component's range."""
        noise = self.rng.normal(0.0, 1.0, size=3)
        self.strategy_effort[i] = min(1.0, max(0.0, self.strategy_effort[k] + self.mutation_sd * noise[0]))
        self.monitor[i] = min(1.0, max(0.0, self.monitor[k] + self.mutation_sd * noise[1]))
        self.norm[i] = max(0.0, self.norm[k] + self.norm_mutation_sd * noise[2])

    def phase_govern(self) -> None:
        if not self.group_decision:
            return
        living = self.living()
        if not living:
            return
        table = self.public_table()
        numeric = self.proposal_form == "number"
        spec = CAP if numeric else PROPOSAL_TEXT
        proposals = self.ask_all([
            Decision("fishery.propose", spec, self._observation(v, table), v, self.round,
                     fallback=float(self.norm[v.slot]) if numeric else cap_sentence(self.norm[v.slot]))
            for v in living
        ])
        if numeric:  # median-voter rule over numeric caps
            self.group_norm = median_vote(proposals)
            self.shared_policy = cap_sentence(self.group_norm)
        else:  # plurality vote among the distinct text proposals, broadcast verbatim
            options = tuple(dict.fromkeys(proposals))
            votes = self.ask_all([
                Decision("fishery.vote", ChoiceSpec(options), self._observation(v, table, proposals=options),
                         v, self.round, fallback=options[0])
                for v in living
            ])
            self.shared_policy = plurality_vote(votes, self.rng)
            cap = stated_cap(self.shared_policy)
            if cap is not None:
                self.group_norm = cap
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
            self.mean_effort = float(self.effort[alive].mean())
            self.wealth_gini = gini(self.wealth[alive])
        else:
            self.compliance, self.mean_effort = math.nan, math.nan
        if not self.collapsed:
            self.efficiency_sum += self.efficiency_now
            self.survival_time = self.round
            self.efficiency = self.efficiency_sum / self.round
            if self.stock <= self.collapse_threshold or n_alive < self.n_agents:
                self.collapsed = True
        if self.collapsed and self.stop_at_collapse:
            self.running = False
        super().end_of_round()

    def final_metrics(self) -> dict[str, Any]:
        return {
            "survival_time": self.survival_time,
            "efficiency": self.efficiency,
            "collapsed": self.collapsed,
            "compliance": self.compliance,
            "stock": self.stock,
            "deaths": self.deaths,
        }


__all__ = ["TYPE_RANGES", "FisheryModel", "Villager"]
