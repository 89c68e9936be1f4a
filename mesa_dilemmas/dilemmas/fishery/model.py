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

The parameters are one typed object, :class:`~.parameters.FisheryParameters` (read as
``model.p``); those the paper leaves open (alpha, c, R_min, the initial wealth, m, delta,
sigma, the EMA weight, the revision rate) carry the calibrated defaults documented in
``docs/fishery.md``.  Each villager's state lives on its :class:`Villager` agent, read over
the seats as ``model.seats.get("wealth")``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import mesa
import numpy as np
from mesa.agentset import AgentSet

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
from mesa_dilemmas.dilemmas.fishery.parameters import FisheryParameters, FisheryShorthands
from mesa_dilemmas.dilemmas.fishery.persona import VillagerPersona
from mesa_dilemmas.dilemmas.fishery.villagers import (
    TYPE_RANGES,
    VillagerRules,
    draw_strategy,
)
from mesa_dilemmas.dilemmas.metrics import gini
from mesa_dilemmas.dilemmas.voting import median_vote, plurality_vote

EFFORT = NumberSpec(0.0, 1.0)
CAP = NumberSpec(0.0, 1e6)
COPY_OR_KEEP = ChoiceSpec(("copy", "keep"))
PROPOSAL_TEXT = TextSpec(max_chars=400)
NORMS = StructSpec({"personal": TextSpec(max_chars=400), "community": TextSpec(max_chars=400)})
NO_ONE = "none"


class Villager(DilemmaAgent):
    """A fisher. Its state lives on it, as plain attributes (``slot`` is its seat, 0..n-1):

    * ``strategy_effort`` -- e, its imitable effort propensity (a language villager's is only
      the fallback for an unusable answer: it plays the effort it answers);
    * ``effort`` -- the effort it exerted this round (e before the first harvest, 0 once starved);
    * ``monitoring`` -- m, the probability that it inspects the peer it is shown;
    * ``punishing`` -- p, the probability that it punishes an inspected peer above the group norm;
    * ``personal_norm`` -- g, its preferred cap on its own harvest, in fish;
    * ``wealth`` -- P, its total payoff so far (below 0 it starves);
    * ``round_payoff`` -- this round's payoff: harvest - c, less fines and punishing costs;
    * ``payoff_avg`` -- the moving average of its round payoffs that imitation compares;
    * ``harvest`` -- its catch this round, in fish (0 for the starved);
    * ``punished`` -- how many villagers punished it this round;
    * ``alive`` -- False once it starved (it is then removed from the model's agents);
    * ``language`` -- whether it is a language (LLM) villager, whose norms are text;
    * ``norm_text`` -- a language villager's personal strategy, else None."""

    def __init__(
        self,
        model: mesa.Model,
        policy: Policy,
        persona: Persona,
        *,
        strategy: tuple[float, float, float, float],
        wealth: float,
        language: bool = False,
    ) -> None:
        """``strategy`` is the drawn (e, m, p, g); a language villager's ``norm_text`` is its
        persona's strategy text."""
        e, m, p, g = strategy
        self.strategy_effort = self.effort = e
        self.monitoring = m
        self.punishing = p
        self.personal_norm = g
        self.wealth = wealth
        self.round_payoff = 0.0
        self.payoff_avg = 0.0
        self.harvest = 0.0
        self.punished = 0
        self.alive = True
        self.language = language
        self.norm_text: str | None = persona.strategy_text if language else None
        super().__init__(model, policy, persona)

    def settle(self, payoff_ema: float) -> None:
        """Add this round's payoff to its wealth and to the moving average (weight ``payoff_ema``)."""
        self.wealth += self.round_payoff
        self.payoff_avg = (1 - payoff_ema) * self.payoff_avg + payoff_ema * self.round_payoff

    def starve(self) -> None:
        """Die of hunger: it stops fishing and leaves the model's agents (its seat stays)."""
        self.alive = False
        self.effort = self.strategy_effort = 0.0
        self.remove()


#: the fishery's rule players by name (a population's ``rule = "..."``)
RULE_PLAYERS = {"rule": lambda **_: VillagerRules()}


class FisheryModel(DilemmaModel):
    """A shared-lake fishery with punishment, payoff-biased imitation and propose->vote norms."""

    GAME: ClassVar[str] = "fishery"
    PERSONA = VillagerPersona
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
    #: the step reporters (column -> model attribute), in the DataCollector's order; the
    #: vectorised engine (``vector.py``) writes the same columns
    STEP_REPORTERS: ClassVar[dict[str, str]] = {
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
    }
    PROMPTS_DIR: ClassVar[Any] = prompts_dir()
    #: the step reporter of LLM decisions per LLM agent and round (summary.json llm_per_round)
    LLM_DECISIONS_REPORTER: ClassVar[str] = "llm_decisions_per_villager"
    Parameters = FisheryParameters
    Shorthands = FisheryShorthands

    def __init__(self, *, rng: Any = None, **params: Any) -> None:
        """``params`` are :class:`FisheryParameters` fields (read as ``self.p``); who plays is
        ``players``, a population (the scenario's ``llm_agents`` shorthand is expanded into one
        before the model is built: :func:`~mesa_dilemmas.dilemmas.base.build_model`)."""
        super().__init__(rng=rng, **params)
        p = self.p
        self.validate_params(dict(p))
        # the optimal sustainable harvest: logistic MSY rK/4; "doubling" regrowth: K/2 (harvest
        # down to K/2 each round, which doubles back to K)
        self.h_opt = (
            p.growth_rate * p.capacity / 4.0 if p.regrowth == "logistic" else p.capacity / 2.0
        )

        n = p.n_agents
        self.stock = p.capacity * p.initial_stock
        #: this round's sanctions as (punisher slot, punished slot), in the order they were given
        self.sanctions: list[tuple[int, int]] = []

        dispositions = self._dispositions(p.population, p.altruism_ratio)
        self.population = self.population_from_params({"players": p.players})
        drawn: dict[int, tuple[float, float, float, float]] = {}  # each seat's (e, m, p, g)
        language: set[int] = set()  # the seats of language villagers

        def persona_of(slot: int, group: Group | None) -> Persona:
            disposition = dispositions[slot]
            drawn[slot] = draw_strategy(
                self.rng, disposition, p.punisher_profile, (p.monitoring_min, p.monitoring_max)
            )
            persona = self.population.persona_for(group, VillagerPersona(disposition=disposition))
            if (
                group is not None and group.kind != "rule"
            ):  # a language villager: its norms are text
                text = persona.strategy_text or initial_strategy(persona.disposition, self.rng)
                persona = replace(persona, strategy_text=text)
                language.add(slot)
            return persona

        def villager(slot: int, policy: Policy, persona: Persona) -> Villager:
            return Villager(
                self,
                policy,
                persona,
                strategy=drawn[slot],
                wealth=float(p.initial_wealth),
                language=slot in language,
            )

        #: every villager in seat order, the starved included (they leave ``self.agents``)
        self.villagers: list[Villager] = self.seat_players(
            n, rules=RULE_PLAYERS, persona_of=persona_of, agent_of=villager
        )
        #: the same seats as an AgentSet (``.get`` / ``.set`` / ``.do`` over every seat in order)
        self.seats = AgentSet(self.villagers, random=self.random)

        self.group_norm = float(np.median(np.array(self.seats.get("personal_norm"))))
        self.shared_policy = (
            NO_POLICY_YET if self.language_society() else cap_sentence(self.group_norm)
        )
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
        self.mean_effort = float(np.array(self.seats.get("effort")).mean())
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
                **self.STEP_REPORTERS,
                **({"decision_fallbacks": "decision_fallbacks"} if self.may_fall_back() else {}),
            },
        )
        self.datacollector.collect(self)

    # -- population --------------------------------------------------------
    def _dispositions(self, population: str, altruism_ratio: float) -> list[str]:
        if population == "general":
            return ["general"] * self.p.n_agents
        n_alt = int(round(altruism_ratio * self.p.n_agents))
        kinds = ["altruistic"] * n_alt + ["selfish"] * (self.p.n_agents - n_alt)
        return [kinds[i] for i in self.rng.permutation(self.p.n_agents)]

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> None:
        """Cross-field checks of a scenario's parameters (shorthands included) or of a model's
        own (``dict(model.p)``)."""
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
        """Who plays: ``players`` (a population), or the scenario shorthand ``llm_agents = N``
        with ``llm = SPEC``: N villagers on random seats answer through that model, the rest are
        rule villagers.  :func:`~mesa_dilemmas.dilemmas.base.build_model` calls it to expand the
        shorthands; the model itself reads only ``players``."""
        players = population_table(params.get("players"))
        n_llm = params.get("llm_agents", 0)
        if n_llm and not players.is_empty():
            raise ValueError("players: give either a population or llm_agents, not both")
        if n_llm:
            return Population(groups=[Group(llm=params.get("llm", "local"), count=n_llm)])
        return players

    def living(self) -> list[Villager]:
        """The living villagers in seat order (the starved are removed from the model's agents)."""
        return list(self.agents_by_type[Villager])

    def language_society(self) -> bool:
        """Whether any seat holds a language (LLM) villager."""
        return any(self.seats.get("language"))

    def public_table(self) -> list[dict[str, Any]]:
        """What every villager sees of the others: effort and total payoff (wealth)."""
        living = self.agents_by_type[Villager]
        efforts = np.round(np.array(living.get("effort")), 3).tolist()
        payoffs = np.round(np.array(living.get("wealth")), 2).tolist()
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
        visible = self.p.social_learning if peers_visible is None else peers_visible
        obs = {
            "villager": v.unique_id,
            "consumption": self.p.consumption,
            "personal_norm": float(v.personal_norm),
            "shared_policy": self.shared_policy if self.p.group_decision else None,
            "group_norm": self.group_norm,
            "lake_stock": round(self.stock, 2),
            "own_effort": float(v.effort),
            "own_payoff": float(v.wealth),
            "villagers": table if visible else None,
            **extra,
        }
        if v.language:  # text fields for the prompt templates
            obs["personal_norm"] = v.norm_text
            obs.update(prompt_fields(self, v, obs["villagers"]))
        return obs

    # -- phases ------------------------------------------------------------
    def phase_harvest(self) -> None:
        living = self.living()
        self._llm_villagers_this_round = sum(v.language for v in living)
        table = self.public_table()
        efforts = self.ask_all(
            [
                Decision(
                    "fishery.effort",
                    EFFORT,
                    self._observation(v, table),
                    v,
                    self.round,
                    fallback=float(v.strategy_effort),
                )
                for v in living
            ]
        )
        self.seats.set("harvest", 0.0).set("round_payoff", 0.0).set("punished", 0)
        for v, effort in zip(living, efforts, strict=True):
            v.effort = float(effort)
            v.harvest = self.p.catchability * v.effort * self.stock
        # numpy's (pairwise) sum over every seat in seat order, as the vectorised engine sums
        total = float(np.array(self.seats.get("harvest")).sum())
        if total > self.stock:  # cannot catch more fish than there are: scale catches down
            scale = self.stock / total
            for v in self.villagers:
                v.harvest *= scale
            total = self.stock
        self.stock = self.stock_after_harvest = max(0.0, self.stock - total)
        self.total_harvest = total
        self.cumulative_harvest += total
        for v in living:
            v.round_payoff = v.harvest - self.p.consumption
        self.rounds_fished += 1

    def phase_punish(self) -> None:
        self.punishments = 0
        self.sanctions = []
        self.punishment_active = self.p.punishment and not (
            self.p.punishment_off_at and self.round >= self.p.punishment_off_at
        )
        if not self.punishment_active:
            return
        living = self.living()
        if len(living) < 2:
            return
        ids = tuple(str(v.unique_id) for v in living)
        by_id = {v.unique_id: v for v in living}
        harvests = np.round(np.array([v.harvest for v in living]), 3).tolist()
        table = [
            {**row, "harvest": h} for row, h in zip(self.public_table(), harvests, strict=True)
        ]
        picks = self.rng.integers(0, len(living) - 1, size=len(living))
        decisions = []
        # one answer format, and for providers that read the schema first one schema, for
        # every villager of the round (each may not name itself)
        everyone = ChoiceSpec((*ids, NO_ONE))
        for i, v in enumerate(living):
            peer = living[picks[i] + (picks[i] >= i)]  # uniform over the others
            options = ids[:i] + ids[i + 1 :] + (NO_ONE,)
            obs = self._observation(
                v,
                table,
                peers_visible=True,
                sampled_peer=peer.unique_id,
                sampled_peer_harvest=float(peer.harvest),
                penalty=self.p.penalty,
                punish_cost=self.p.punish_cost,
            )
            decisions.append(
                Decision(
                    "fishery.punish",
                    ChoiceSpec(options),
                    obs,
                    v,
                    self.round,
                    fallback=NO_ONE,
                    shown=everyone,
                )
            )
        for v, target in zip(living, self.ask_all(decisions), strict=True):
            if target == NO_ONE:
                continue
            victim = by_id[int(target)]
            v.round_payoff -= self.p.punish_cost  # gamma * B, B an indicator
            victim.punished += 1
            self.sanctions.append((v.slot, victim.slot))
            self.punishments += 1
        # beta * V with V the indicator "was punished this round" (paper 003, Sec. 3.1.2): one fine
        # however many punish; ``fine_per_punisher`` (our option) charges beta per punisher instead
        for v in self.villagers:
            fined = v.punished if self.p.fine_per_punisher else (v.punished > 0)
            v.round_payoff -= self.p.penalty * fined
        if (
            self.p.sanction_learning
        ):  # our addition (off by default): a sanctioned rule villager fishes less
            cut = min(1.0, self.p.sanction_learning * self.p.penalty)
            # an LLM villager's drawn effort is only its fallback
            for v in self.seats.select(lambda v: v.punished > 0 and not v.language):
                v.strategy_effort *= 1.0 - cut

    def phase_settle(self) -> None:
        living = self.agents_by_type[Villager]
        living.do(Villager.settle, self.p.payoff_ema)
        for v in living.select(lambda v: v.wealth < 0):  # in seat order
            v.starve()
            self.deaths += 1
        s = self.stock
        if self.p.regrowth == "doubling":  # GovSim: what is left doubles, up to capacity
            self.stock = min(self.p.capacity, 2.0 * s)
        else:  # logistic regrowth after the harvest
            self.stock = min(
                self.p.capacity, s + self.p.growth_rate * s * (1.0 - s / self.p.capacity)
            )

    def phase_learn(self) -> None:
        if not self.p.social_learning:
            return
        living = self.living()
        if len(living) < 2:
            return
        revising = self.rng.random(len(living)) < self.p.revision_rate
        picks = self.rng.integers(0, len(living) - 1, size=len(living))
        decisions, pairs = [], []
        for i, v in enumerate(living):
            if not revising[i] or v.language:  # LLM villagers learn in context instead
                continue
            k = living[picks[i] + (picks[i] >= i)]
            obs = {
                "own": self._strategy_view(v),
                "model": self._strategy_view(k),
                "selection_strength": self.p.selection_strength,
            }
            decisions.append(
                Decision("fishery.imitate", COPY_OR_KEEP, obs, v, self.round, fallback="keep")
            )
            pairs.append((v.slot, k.slot))
        for (i, k), choice in zip(pairs, self.ask_all(decisions), strict=True):
            if choice == "copy":
                self._copy_strategy(i, k)

    def _strategy_view(self, v: Villager) -> dict[str, Any]:
        effort = v.effort if v.language else v.strategy_effort
        return {
            "id": v.unique_id,
            "effort": float(effort),
            "monitoring": float(v.monitoring),
            "norm": float(v.personal_norm),
            "payoff": float(v.payoff_avg),
        }

    def _copy_strategy(self, i: int, k: int) -> None:
        """The villager at seat i adopts seat k's (e, m, g) with Gaussian mutation, clipped to each
        component's range.  An LLM villager's e is the effort it actually played (its drawn effort
        is only a fallback)."""
        noise = self.rng.normal(0.0, 1.0, size=3)
        v, peer = self.villagers[i], self.villagers[k]
        effort = peer.effort if peer.language else peer.strategy_effort
        v.strategy_effort = float(min(1.0, max(0.0, effort + self.p.mutation_sd * noise[0])))
        v.monitoring = float(min(1.0, max(0.0, peer.monitoring + self.p.mutation_sd * noise[1])))
        v.personal_norm = float(max(0.0, peer.personal_norm + self.p.norm_mutation_sd * noise[2]))

    def phase_govern(self) -> None:
        """Propose -> vote.  Language villagers also rewrite their personal strategy here (Fig. 10),
        with or without a group decision; numeric villagers propose their cap."""
        living = self.living()
        if not living or not (self.p.group_decision or self.language_society()):
            return
        table = self.public_table()
        textual = self.language_society() or self.p.proposal_form == "text"
        decisions = []
        for v in living:
            if v.language:
                obs = self._observation(v, table)
                if self.p.social_learning:  # social learning in context: a few sampled peers
                    others = [r for r in table if r["id"] != v.unique_id]
                    k = min(self.p.peers_sampled, len(others))
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
            elif self.p.group_decision:
                cap = float(v.personal_norm)
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
        if not self.p.group_decision:
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
                    if v.language:
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
        living = self.agents_by_type[Villager]
        n_alive = len(living)
        self.n_alive = n_alive
        self.efficiency_now = self.total_harvest / self.h_opt if self.h_opt > 0 else 0.0
        if n_alive:
            harvest = np.array(living.get("harvest"))
            effort = np.array(living.get("effort"))
            wealth = np.array(living.get("wealth"))
            self.compliance = float((harvest <= self.group_norm + 1e-12).mean())
            # effort-based: e <= G / (alpha K), the effort that meets G in a full lake.  (At the round's
            # own stock this would equal h <= G, which rises as the lake empties whatever villagers do.)
            allowed = self.group_norm / (self.p.catchability * self.p.capacity)
            self.effort_compliance = float((effort <= allowed + 1e-12).mean())
            self.mean_effort = float(effort.mean())
            self.wealth_gini = gini(wealth)
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
            best = self.h_opt * self.p.efficiency_horizon
            self.govsim_efficiency = (
                1.0 - max(0.0, best - self.cumulative_harvest) / best if best > 0 else 0.0
            )
            # GovSim checks the lake after the harvest, before the remainder doubles
            stock = self.stock_after_harvest if self.p.regrowth == "doubling" else self.stock
            if stock <= self.p.collapse_threshold or n_alive < self.p.n_agents:
                self.collapsed = True
        if self.collapsed and self.p.stop_at_collapse:
            self.running = False
        super().end_of_round()

    def _count_llm_decisions(self) -> None:
        """Decisions put to LLM villagers this round, per LLM villager (the paper's budget is 4)."""
        if not self.language_society():
            return
        ids = {v.unique_id for v in self.seats.select(lambda v: v.language)}
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
        if self.language_society():
            texts = [v.norm_text or cap_sentence(v.personal_norm) for v in living]
            result = text_norm_structure(texts)
        else:
            strategies = self.agents_by_type[Villager].get(
                ["strategy_effort", "monitoring", "personal_norm"]
            )  # one row (e, m, g) per living villager, in seat order
            result = numeric_norm_structure(np.array(strategies))
        self.norm_similarity, self.norm_alignment = result.similarity, result.alignment


__all__ = ["TYPE_RANGES", "FisheryModel", "FisheryParameters", "FisheryShorthands", "Villager"]
