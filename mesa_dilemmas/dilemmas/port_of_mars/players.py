"""Rule-based Port of Mars players whose every decision follows their persona.

A persona is mapped once to a handful of behavioural parameters
(:class:`~mesa_dilemmas.dilemmas.port_of_mars.personas.PlayerParams`, see that module for what SVO
angles, cultural groups and trait sets mean in numbers); the rules below read only the
decision's observation (what a human or LLM player would see) plus those parameters, and draw
any randomness from the model's generator, so a seeded game is reproducible.

The health rule reacts to danger: the shortfall is measured against the port health that keeps
the next round at one event (prosocial) or out of the three-event zone (individualist), and
every player covers a survival shortfall.

**Leadership** (paper 001 Sec. 4.4; the game only changes what each player is told).  A rule
player responds to what it is told, with this documented rule: a player told it *is* the leader
acts as steward of the port -- its calm-round share of coins to port health and its share of a
projected shortfall rise by ``LEADER_HEALTH_BONUS`` (and it keeps its meeting pledge fully);
a player told that *another* player leads closes half of the gap between its conformity and 1
(it follows the group plan more closely).  So the variants differ: *vanilla* changes only the
leader, *unaware* only the others, *announce* both.

The **reference bot** reproduces the online game's built-in idle-player bot
(``rules.json`` -> ``reference_bot``).  The rule meeting writer is in
:mod:`.narrator`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.policy import Policy, RulePolicy
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES
from mesa_dilemmas.dilemmas.port_of_mars.personas import (
    PlayerParams,
    params_for,
    svo_params,
)

if TYPE_CHECKING:
    import mesa


#: added to a leader's calm-round health share and shortfall share (the leadership rule)
LEADER_HEALTH_BONUS = 0.15

#: estimated coins to obtain one unit of a resource one cannot buy (make a trade good, trade 1:1, risk)
TRADE_PRICE = 4.0
#: a non-goal accomplishment estimated to cost more coins than this is discarded
DISCARD_ABOVE_COINS = 14.0
#: keep the current goal unless another card is this much more efficient
GOAL_SWITCH_MARGIN = 1.3


def _clip(x: float, lo: float, hi: float) -> float:
    return float(min(hi, max(lo, x)))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# -- reading observations -----------------------------------------------------


def missing(cost: Mapping[str, int], held: Mapping[str, int]) -> dict[str, int]:
    """Units of each resource still needed for ``cost``."""
    return {r: n - held.get(r, 0) for r, n in cost.items() if held.get(r, 0) < n}


def estimated_coins(
    card: Mapping[str, Any], obs: Mapping[str, Any], held: Mapping[str, int] | None = None
) -> float:
    """Coins a card still costs: buyable units at this round's price, the rest via trade."""
    held = obs["resources"] if held is None else held
    costs = obs["coin_costs"]
    return float(
        sum(
            costs[r] * n if r in costs else TRADE_PRICE * n
            for r, n in missing(card["cost"], held).items()
        )
    )


def efficiency(card: Mapping[str, Any], obs: Mapping[str, Any]) -> float:
    return card["points"] / (1.0 + estimated_coins(card, obs))


def goal_card(obs: Mapping[str, Any]) -> dict[str, Any] | None:
    goal = obs.get("goal")
    return next((c for c in obs["accomplishments"] if c["name"] == goal), None)


def next_wear_projection(obs: Mapping[str, Any], own_coins: float, others_coins: float) -> float:
    """Port health after this round's credits and the next wear, given coins to port health."""
    hc = max(1, obs["port_health_coin_cost"])
    return obs["port_health"] + (own_coins + others_coins) / hc - obs["wear_per_round"]


class PortOfMarsRulePolicy(RulePolicy):
    """A persona-driven rule player (see the module docstring for the rules)."""

    name = "rule"

    def __init__(self, params: PlayerParams | None = None) -> None:
        self._fixed_params = params
        self.params: PlayerParams = params or svo_params(0.0)
        self._rng: np.random.Generator | None = None

    def bind(self, agent: mesa.Agent | None) -> None:  # type: ignore[override]
        super().bind(agent)  # type: ignore[arg-type]
        if self._fixed_params is None and agent is not None:
            self.params = params_for(agent.persona)

    @property
    def rng(self) -> np.random.Generator:
        if self.agent is not None:
            return self.agent.model.rng
        if self._rng is None:
            self._rng = np.random.default_rng(0)
        return self._rng

    # -- shared estimates ------------------------------------------------
    def others_expected(self, obs: Mapping[str, Any]) -> float:
        """Coins the other four will put into port health this round (pledges, else last round)."""
        pledges = obs.get("meeting_pledges")
        if pledges:
            return float(sum(v for r, v in pledges.items() if r != obs["role"]))
        last = obs.get("last_round")
        if last:
            mine = obs.get("port_health_coins_last_round") or 0
            return float(max(0, last["port_health_coins_total"] - mine))
        # first round: assume the others are like me
        return 4.0 * self.params.health_base * obs.get("coins_per_round", 10)

    def wanted(self, obs: Mapping[str, Any]) -> dict[str, int]:
        card = goal_card(obs)
        return missing(card["cost"], obs["resources"]) if card else {}

    def led(self, obs: Mapping[str, Any]) -> PlayerParams:
        """The parameters under what this player is told about leadership (module doc)."""
        pp = self.params
        info = obs.get("leadership") or {}
        if info.get("you_are_leader"):
            return replace(
                pp,
                health_base=min(0.9, pp.health_base + LEADER_HEALTH_BONUS),
                health_cap=min(1.0, pp.health_cap + LEADER_HEALTH_BONUS),
                health_share=min(1.0, pp.health_share + LEADER_HEALTH_BONUS),
                conformity=1.0,
            )
        if info.get("leader"):
            return replace(pp, conformity=pp.conformity + 0.5 * (1.0 - pp.conformity))
        return pp

    # -- planning ----------------------------------------------------------
    def health_plan(self, decision: Decision) -> int:
        obs = decision.observation
        pp = self.led(obs)
        coins = obs["coins"]
        hc = max(1, obs["port_health_coin_cost"])
        others = self.others_expected(obs)
        base = pp.health_base * coins
        projected = next_wear_projection(obs, base, others)
        shortfall = max(0.0, pp.health_target - projected)
        plan = min(base + pp.health_share * shortfall * hc, pp.health_cap * coins)
        # survival: nobody wants the port to fail at the next wear (that is 0 points for all)
        survival_gap = max(0.0, 8.0 - next_wear_projection(obs, plan, others))
        plan += survival_gap * hc * max(0.5, pp.health_share)
        pledge = (obs.get("meeting_pledges") or {}).get(obs["role"])
        if pledge is not None and pledge > plan:
            plan += pp.conformity * (pledge - plan)
        return int(min(coins, max(0, round(plan))))

    def speak(self, decision: Decision) -> str:
        """A turn in a turn-by-turn meeting: its health plan and what its goal still needs."""
        obs = decision.observation
        need = self.wanted(obs)
        needs = ", ".join(f"{n} {r}" for r, n in sorted(need.items())) or "nothing"
        return (
            f"I plan to put {self.health_plan(decision)} coins into port health this round. "
            f"For my next accomplishment I still need {needs}."
        )

    def goal_plan(self, decision: Decision) -> str:
        obs = decision.observation
        cards = obs["accomplishments"]
        clean = [c for c in cards if not c["dirty"]] or cards
        best = max(clean, key=lambda c: (efficiency(c, obs), c["points"], c["name"]))
        current = goal_card(obs)
        if (
            current is not None
            and current in clean
            and efficiency(best, obs) <= GOAL_SWITCH_MARGIN * efficiency(current, obs)
        ):
            return current["name"]
        return best["name"]

    # -- investment ------------------------------------------------------
    def invest(self, decision: Decision) -> dict[str, int]:
        obs = decision.observation
        coins = obs["coins"]
        hc = max(1, obs["port_health_coin_cost"])
        costs = dict(obs["coin_costs"])
        plan = obs.get("health_plan")
        plan = coins // 2 if plan is None else min(plan, coins)
        out: dict[str, int] = {"port_health": plan // hc}
        left = coins - out["port_health"] * hc
        held = dict(obs["resources"])

        def buy(r: str, n: int) -> None:
            nonlocal left
            n = min(n, left // costs[r]) if r in costs else 0
            if n > 0:
                out[r] = out.get(r, 0) + n
                held[r] += n
                left -= n * costs[r]

        need = self.wanted(obs)
        for r in sorted(need, key=lambda k: (costs.get(k, 99), k)):
            buy(r, need[r])
        # trade goods for what cannot be bought: the cheapest resource, preferably the specialty
        trade_need = sum(n for r, n in need.items() if r not in costs)
        goods = [r for r in costs if r not in need]
        if goods and trade_need:
            good = min(goods, key=lambda r: (costs[r], r != obs["specialty"], r))
            spare = held[good]
            buy(good, max(0, trade_need + 1 - spare))
        # then the next most efficient card
        others = sorted(
            (c for c in obs["accomplishments"] if not c["dirty"] and c["name"] != obs.get("goal")),
            key=lambda c: -efficiency(c, obs),
        )
        for card in others[:1]:
            nxt = missing(card["cost"], held)
            for r in sorted(nxt, key=lambda k: (costs.get(k, 99), k)):
                buy(r, nxt[r])
        # leftovers: the specialty (a trade good), then whatever is cheapest
        if costs:
            for r in sorted(costs, key=lambda k: (costs[k], k != obs["specialty"], k)):
                buy(r, left // costs[r])
        # coins that can buy nothing go to the port (they do not carry over)
        extra = left // hc
        if extra:
            out["port_health"] += extra
        return out

    # -- trading -----------------------------------------------------------
    def spare(self, obs: Mapping[str, Any]) -> dict[str, int]:
        """Units held beyond what the current goal needs."""
        card = goal_card(obs)
        cost = card["cost"] if card else {}
        return {r: n - cost.get(r, 0) for r, n in obs["resources"].items() if n > cost.get(r, 0)}

    def pick_kind(self) -> str:
        u = float(self.rng.random())
        pp = self.params
        if u < pp.p_selfish:
            return "selfish"
        if u < pp.p_selfish + pp.p_generous:
            return "generous"
        return "fair"

    def partner_for(self, resource: str, obs: Mapping[str, Any]) -> str | None:
        """Who to ask: a holder seen in an Audit, else someone who offered it in the meeting,
        else its specialist, else anyone who can buy it."""
        roles = obs["roles"]
        market = obs.get("meeting_market") or {}
        audit = obs.get("audit")
        if audit:
            holders = [
                (v["resources"].get(resource, 0), r) for r, v in audit.items() if r != obs["role"]
            ]
            best = max(holders)
            if best[0] > 0:
                return best[1]
        offered = sorted(
            r for r, v in (market.get("offers") or {}).items() if resource in v and r != obs["role"]
        )
        if offered:
            return offered[int(self.rng.integers(len(offered)))]
        specialists = [
            r for r, v in roles.items() if v["specialty"] == resource and r != obs["role"]
        ]
        if specialists:
            return specialists[0]
        makers = sorted(
            r for r, v in roles.items() if resource in v["can_buy"] and r != obs["role"]
        )
        return makers[0] if makers else None

    def trade_offer(self, decision: Decision) -> list[dict[str, Any]]:
        obs, pp = decision.observation, self.params
        max_items = getattr(decision.spec, "max_items", 1)
        costs = obs["coin_costs"]
        wants = {r: n for r, n in self.wanted(obs).items() if r not in costs}
        if not wants:
            return []
        spare = self.spare(obs)
        offers: list[dict[str, Any]] = []
        for r in sorted(wants, key=lambda k: (-wants[k], k)):
            if len(offers) >= min(max_items, pp.max_offers):
                break
            partner = self.partner_for(r, obs)
            if partner is None:
                continue
            n = wants[r]
            kind = self.pick_kind()
            if kind == "selfish":
                give_units = max(1, n - 1)
                receive_units = give_units + 1
            elif kind == "generous":
                give_units, receive_units = n + 1, n
            else:
                give_units = receive_units = n
            partner_cannot = set(obs["roles"][partner]["trade_only"])
            order = sorted(
                (k for k in spare if spare[k] > 0 and k != r),
                key=lambda k: (k not in partner_cannot, -spare[k], k),
            )
            give: dict[str, int] = {}
            for k in order:
                if give_units <= 0:
                    break
                take = min(spare[k], give_units)
                give[k] = take
                spare[k] -= take
                give_units -= take
            if not give:
                continue
            offers.append({"to": partner, "give": give, "receive": {r: receive_units}})
        return offers

    def trade_accept(self, decision: Decision) -> str:
        obs, pp = decision.observation, self.params
        offer = obs["offer"]
        held = obs["resources"]
        incoming, outgoing = offer["give"], offer["receive"]
        if any(held.get(r, 0) < n for r, n in outgoing.items()):
            return "no"
        card = goal_card(obs)
        goal_cost = card["cost"] if card else {}
        need = self.wanted(obs)
        others_need: set[str] = set()
        for c in obs["accomplishments"]:
            if not c["dirty"] and c is not card:
                others_need |= set(missing(c["cost"], held))
        costs = obs["coin_costs"]
        v_in = 0.0
        for r, n in incoming.items():
            useful = min(n, need.get(r, 0))
            v_in += useful * 1.0 + (n - useful) * (0.35 if r in others_need else 0.15)
        v_out = 0.0
        for r, n in outgoing.items():
            free = max(0, held[r] - goal_cost.get(r, 0))
            from_free = min(n, free)
            unit = costs[r] / 10.0 if r in costs else 0.5
            v_out += from_free * unit + (n - from_free) * 1.0
        own = v_in - v_out
        partner = 0.8 * sum(outgoing.values()) - 0.3 * sum(incoming.values())
        utility = pp.self_weight * own + pp.others_weight * partner
        return "yes" if utility > pp.accept_threshold else "no"

    # -- accomplishments ---------------------------------------------------
    def dirty_ok(self, obs: Mapping[str, Any], card: Mapping[str, Any], booked: float) -> bool:
        pp = self.params
        own = obs.get("port_health_coins_this_round", 0)
        projected = next_wear_projection(obs, own, self.others_expected(obs)) - booked
        after = projected - card["port_health_cost"]
        if after < pp.dirty_floor:
            return False
        return bool(self.rng.random() < _sigmoid(pp.dirty_bias + 0.04 * (after - 40.0)))

    def purchase(self, decision: Decision) -> list[str]:
        obs = decision.observation
        held = dict(obs["resources"])
        chosen: list[str] = []
        clean = sorted(
            (c for c in obs["accomplishments"] if not c["dirty"]),
            key=lambda c: (c["name"] != obs.get("goal"), -c["points"], c["name"]),
        )
        for c in clean:
            if not missing(c["cost"], held):
                for r, n in c["cost"].items():
                    held[r] -= n
                chosen.append(c["name"])
        booked = 0.0
        for c in sorted(
            (c for c in obs["accomplishments"] if c["dirty"]), key=lambda c: c["port_health_cost"]
        ):
            if self.dirty_ok(obs, c, booked):
                chosen.append(c["name"])
                booked += c["port_health_cost"]
        return chosen

    def discard(self, decision: Decision) -> list[str]:
        obs, pp = decision.observation, self.params
        out = []
        for c in obs["accomplishments"]:
            if c["name"] == obs.get("goal"):
                continue
            if c["dirty"]:
                if self.rng.random() < pp.discard_dirty:
                    out.append(c["name"])
            elif estimated_coins(c, obs) > DISCARD_ABOVE_COINS:
                out.append(c["name"])
        return out

    # -- events ------------------------------------------------------------
    def event_choice(self, decision: Decision) -> str:
        obs, pp = decision.observation, self.params
        event = obs["event"]
        if event["id"] == "personalGain":
            after = obs["port_health"] - 6 - obs["wear_per_round"]
            if after < pp.dirty_floor:
                return "no"
            p = _sigmoid(pp.personal_gain_bias + 0.08 * (obs["port_health"] - 50.0))
            return "yes" if self.rng.random() < p else "no"
        if event["id"] == "bondingThroughAdversity":
            need = self.wanted(obs)
            costs = obs["coin_costs"]
            if need:
                return max(need, key=lambda r: (r not in costs, need[r], r))
            return obs["specialty"]
        if event["id"] == "effortsWasted":
            points = event["points"]  # give back the completed card worth least
            return min(event["options"], key=lambda n: (points[n], n))
        return decision.fallback

    def keep_resources(self, decision: Decision) -> dict[str, int]:
        """Keep units the goal needs first, then the ones hardest to get (cannot be bought)."""
        obs = decision.observation
        left = decision.spec.budget
        held = obs["resources"]
        costs = obs["coin_costs"]
        need = self.wanted(obs)
        card = goal_card(obs)
        goal_cost = card["cost"] if card else {}
        keep: dict[str, int] = {}
        useful = {r: min(held[r], goal_cost.get(r, 0)) for r in RESOURCES}
        for r in sorted(RESOURCES, key=lambda k: (k in costs, -useful[k], -need.get(k, 0), k)):
            take = min(left, useful[r])
            if take > 0:
                keep[r] = take
                left -= take
        for r in sorted(RESOURCES, key=lambda k: (k in costs, -held[k], k)):
            take = min(left, held[r] - keep.get(r, 0))
            if take > 0:
                keep[r] = keep.get(r, 0) + take
                left -= take
        return keep

    def vote(self, decision: Decision) -> str:
        obs, pp = decision.observation, self.params
        event = obs["event"]
        stage = event.get("stage")
        me = obs["role"]
        points = obs["points_by_role"]
        others = sorted((r for r in points if r != me), key=lambda r: (-points[r], r))
        if stage == "hero_or_pariah":
            return "Hero" if self.rng.random() < _sigmoid(pp.hero_bias) else "Pariah"
        if stage == "hero":
            if pp.others_weight < 0.3:
                return me
            return min(points, key=lambda r: (points[r], r))  # help the one furthest behind
        if stage == "pariah":
            return others[0]
        # Compulsive Philanthropy: altruists volunteer, the rest name the front-runner
        if pp.others_weight > 0.7:
            return me
        return others[0]


class ReferenceBotPolicy(RulePolicy):
    """The online game's idle-player bot (``rules.json`` -> ``reference_bot``).

    Differences, chosen for a usable baseline: it discards only dirty
    accomplishments (the original's test matches every card), and in Compulsive
    Philanthropy it votes for the first other role in role order (the original's
    selection has a bug).
    """

    name = "reference_bot"

    def health_plan(self, decision: Decision) -> int:
        obs = decision.observation
        coins = obs["coins"]
        spec_cost = obs["coin_costs"].get(obs["specialty"])
        units = int(0.5 * coins / spec_cost) if spec_cost else 0
        return coins - units * (spec_cost or 0)

    def speak(self, decision: Decision) -> str:
        return f"I will put {self.health_plan(decision)} coins into port health."

    def goal_plan(self, decision: Decision) -> str:
        return decision.spec.options[0]

    def invest(self, decision: Decision) -> dict[str, int]:
        obs = decision.observation
        coins = obs["coins"]
        hc = max(1, obs["port_health_coin_cost"])
        spec_cost = obs["coin_costs"].get(obs["specialty"])
        units = int(0.5 * coins / spec_cost) if spec_cost else 0
        out = {"port_health": (coins - units * (spec_cost or 0)) // hc}
        if units:
            out[obs["specialty"]] = units
        return out

    def trade_offer(self, decision: Decision) -> list[dict[str, Any]]:
        return []

    def trade_accept(self, decision: Decision) -> str:
        held = decision.observation["resources"]
        ok = all(held.get(r, 0) >= n for r, n in decision.observation["offer"]["receive"].items())
        return "yes" if ok else "no"

    def purchase(self, decision: Decision) -> list[str]:
        obs = decision.observation
        for c in obs["accomplishments"]:
            if c["name"] not in decision.spec.item.options:
                continue
            if c["dirty"] and obs["port_health"] <= 35:
                continue
            return [c["name"]]
        return []

    def discard(self, decision: Decision) -> list[str]:
        return [c["name"] for c in decision.observation["accomplishments"] if c["dirty"]]

    def event_choice(self, decision: Decision) -> str:
        event = decision.observation["event"]
        if event["id"] == "personalGain":
            return "yes" if decision.observation["port_health"] > 30 else "no"
        if event["id"] == "bondingThroughAdversity":
            return "culture"
        return decision.fallback

    def keep_resources(self, decision: Decision) -> dict[str, int]:
        return decision.fallback

    def vote(self, decision: Decision) -> str:
        obs = decision.observation
        stage = obs["event"].get("stage")
        me = obs["role"]
        points = obs["points_by_role"]
        if stage == "hero_or_pariah":
            return "Hero" if self.agent.model.rng.random() < 0.5 else "Pariah"  # type: ignore[union-attr]
        if stage == "hero":
            return me
        others = [r for r in points if r != me]
        if stage == "pariah":
            return max(others, key=lambda r: (points[r], r))
        order = ("Curator", "Entrepreneur", "Pioneer", "Politician", "Researcher")
        return next(r for r in order if r != me and r in points)


def _rule_player(**kw: Any) -> Policy:
    """The persona-driven rule player (the online game's bot for a bot persona)."""
    persona = kw.get("persona")
    if persona is not None and persona.extra.get("policy") == "reference_bot":
        return ReferenceBotPolicy()
    return PortOfMarsRulePolicy()


def _random_player(**_: Any) -> Policy:
    from mesa_dilemmas.agents.random_policy import RandomLegalPolicy

    return RandomLegalPolicy()


#: Port of Mars's rule players by name (a population's ``rule = "..."``)
RULE_PLAYERS: dict[str, Any] = {
    "rule": _rule_player,
    "reference_bot": lambda **_: ReferenceBotPolicy(),
    "random": _random_player,
}
