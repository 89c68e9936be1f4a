"""Rule-based fishery villagers (paper 003, Sec. 3.1.3 and Appendix B, Table 3).

The villager's strategy s = (e, m, g) and punishing probability p live on its
agent (``strategy_effort``, ``monitoring``, ``personal_norm``, ``punishing``: see
``model.Villager``); this policy answers the model's questions from them:

* effort    -- the strategy's effort e, lowered if needed so the harvest stays
               within the personal cap g (g is "the preferred cap on own
               harvest", Sec. 3.1.1; switch ``respect_personal_cap``);
* punish    -- inspect the peer the model drew with probability m; if its
               harvest exceeds the group norm G, punish it with probability p;
* imitate   -- copy the model peer with the logit probability
               1 / (1 + exp(-delta (P_k - P_i))) of the payoff moving averages;
* propose   -- propose one's own personal cap g (as a number, or as a sentence
               stating it when proposals are text);
* vote      -- among text proposals, the one whose stated cap is nearest g.
"""

from __future__ import annotations

import math

import numpy as np

from mesa_dilemmas.agents.decisions import Decision, NumberSpec
from mesa_dilemmas.agents.policy import RulePolicy

#: initial strategy ranges by disposition: effort e, personal cap g, punishing probability p.
#: "general" follows Table 3; altruistic/selfish follow the altruism experiment of Table 3.
TYPE_RANGES: dict[str, dict[str, tuple[float, float]]] = {
    "general": {"effort": (0.0, 1.0), "norm": (2.0, 8.0), "punish": (0.0, 1.0)},
    "altruistic": {"effort": (0.2, 0.5), "norm": (4.0, 8.0), "punish": (0.0, 0.1)},
    "selfish": {"effort": (0.7, 1.0), "norm": (10.0, 14.0), "punish": (0.4, 0.5)},
}


def draw_strategy(
    rng: np.random.Generator,
    disposition: str,
    punisher_profile: str = "table",
    monitoring: tuple[float, float] = (0.5, 1.0),
) -> tuple[float, float, float, float]:
    """Initial (effort, monitoring, punishing probability, personal cap) for one villager.

    ``punisher_profile="text"`` swaps the altruists' and selfish agents' punishing
    ranges, following Appendix B's prose (altruists punish more) instead of Table 3.
    """
    ranges = TYPE_RANGES[disposition]
    punish = ranges["punish"]
    if punisher_profile == "text" and disposition in ("altruistic", "selfish"):
        other = "selfish" if disposition == "altruistic" else "altruistic"
        punish = TYPE_RANGES[other]["punish"]
    e = rng.uniform(*ranges["effort"])
    m = rng.uniform(*monitoring)  # the paper gives no range for m: a model parameter
    p = rng.uniform(*punish)
    g = rng.uniform(*ranges["norm"])
    return float(e), float(m), float(p), float(g)


def imitation_probability(
    own_payoff: float, model_payoff: float, selection_strength: float
) -> float:
    """Fermi/logit rule: the probability of copying a peer whose payoff is ``model_payoff``."""
    x = -selection_strength * (model_payoff - own_payoff)
    if x > 700:  # exp overflow: the peer is far worse, never copy
        return 0.0
    return 1.0 / (1.0 + math.exp(x))


class VillagerRules(RulePolicy):
    """The rule-based villager of the paper's ABM validation."""

    name = "rule"

    def effort(self, decision: Decision) -> float:
        me = self.agent
        model = me.model
        e = float(me.strategy_effort)
        if model.p.respect_personal_cap and model.stock > 0:
            e = min(e, float(me.personal_norm) / (model.p.catchability * model.stock))
        return e

    def punish(self, decision: Decision) -> str:
        me = self.agent
        model = me.model
        obs = decision.observation
        if model.random.random() >= me.monitoring:
            return "none"
        if obs["sampled_peer_harvest"] <= obs["group_norm"]:
            return "none"
        if model.random.random() >= me.punishing:
            return "none"
        return str(obs["sampled_peer"])

    def imitate(self, decision: Decision) -> str:
        obs = decision.observation
        prob = imitation_probability(
            obs["own"]["payoff"], obs["model"]["payoff"], obs["selection_strength"]
        )
        return "copy" if self.agent.model.random.random() < prob else "keep"

    def propose(self, decision: Decision) -> float | str:
        if not isinstance(decision.spec, NumberSpec):  # a text proposal: the game's wording
            return decision.observation["own_cap_text"]
        return float(self.agent.personal_norm)

    def vote(self, decision: Decision) -> str:
        """Vote for the proposal whose stated cap is nearest one's own cap."""
        own = float(self.agent.personal_norm)
        options = decision.spec.options
        caps = decision.observation[
            "proposal_caps"
        ]  # the cap each option states, as the game reads it
        scored = [(abs(c - own), i) for i, c in enumerate(caps) if c is not None]
        return options[min(scored)[1]] if scored else options[0]
