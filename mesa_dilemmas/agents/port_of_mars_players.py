"""Rule-based Port of Mars players whose every decision follows their persona.

A persona is mapped once to a handful of behavioural parameters
(:class:`PlayerParams`); the rules below read only the decision's observation
(what a human or LLM player would see) plus those parameters, and draw any
randomness from the model's generator, so a seeded game is reproducible.

**SVO** (paper 001 Sec. 4.2).  With ``s = sin(theta)`` (weight on others) and
``c = cos(theta)`` (weight on oneself) every parameter varies continuously with
the angle: the calm-round share of coins put into port health rises with ``s``,
as do the port health (after the next wear) a player tries to keep and the share
of a projected shortfall it covers; the logit of taking a dirty accomplishment
falls with ``s``; trade offers are more often selfish (ask more units than
offered) at low angles and generous at high ones; a trade is accepted when
``c * own gain + s * partner's gain > 0``, so pro-self players reject more.  The
health rule reacts to danger: the shortfall is measured against the port health
that keeps the next round at one event (prosocial) or out of the three-event zone
(individualist), and every player covers a survival shortfall.

**Cultural groups** (Sec. 4.1) and the **cooperative / selfish trait sets** are
presets: an SVO-equivalent angle read off each description plus overrides for
what the description stresses (respect for agreed structure -> high
conformity to meeting pledges; "interactions as negotiations" -> more and
harder-nosed offers; "do not negatively impact anyone" -> never dirty).
They are modelling choices written down here, not fitted to the paper's tables.

The **reference bot** reproduces the online game's built-in idle-player bot
(``rules.json`` -> ``reference_bot``).

:class:`PortOfMarsRuleNarrator` answers the model-level ``pom.meeting`` decision
without an LLM: it writes a short structured meeting (each player's stated needs
and a pledge of coins to port health that splits the group's projected
shortfall by willingness).  Players move toward their pledge by their conformity.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy, RulePolicy

if TYPE_CHECKING:
    import mesa

RESOURCES: tuple[str, ...] = ("culture", "finance", "government", "legacy", "science")

#: SVO category boundaries (Murphy et al. 2011, as used in paper 001)
SVO_COMPETITIVE_BELOW = -12.04
SVO_PROSOCIAL_ABOVE = 22.45
SVO_ALTRUISTIC_ABOVE = 57.15

#: estimated coins to obtain one unit of a resource one cannot buy (make a trade good, trade 1:1, risk)
TRADE_PRICE = 4.0
#: a non-goal accomplishment estimated to cost more coins than this is discarded
DISCARD_ABOVE_COINS = 14.0
#: how far (fraction of coins) a meeting pledge may go beyond a player's usual ceiling
MEETING_STRETCH = 0.2
#: keep the current goal unless another card is this much more efficient
GOAL_SWITCH_MARGIN = 1.3

CULTURAL_GROUPS: tuple[str, ...] = (
    "hierarchical-individualist",
    "hierarchical-communitarian",
    "egalitarian-individualist",
    "egalitarian-communitarian",
)
TRAIT_SETS: dict[str, tuple[str, ...]] = {
    "cooperative": ("altruistic", "cooperative", "empathetic", "generous", "selfless"),
    "selfish": ("self-centred", "selfish", "uncooperative", "machiavellian"),
}


def _clip(x: float, lo: float, hi: float) -> float:
    return float(min(hi, max(lo, x)))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass(frozen=True)
class PlayerParams:
    """What a rule player's persona means in numbers (see the module docstring)."""

    #: SVO-equivalent angle in degrees (the other fields default from it)
    angle: float
    #: weight on own outcome (cos) and on others' (sin)
    self_weight: float
    others_weight: float
    #: fraction of coins put into port health in a calm round
    health_base: float
    #: most coins (fraction) it puts into port health unless the port would fail at the next wear
    health_cap: float
    #: port health after the next wear the player tries to secure
    health_target: float
    #: fraction of the projected shortfall below the target the player covers itself
    health_share: float
    #: how far the player moves toward its meeting pledge (0: cheap talk, 1: keeps its word)
    conformity: float
    #: logit bias of taking an available dirty accomplishment
    dirty_bias: float
    #: never take a dirty accomplishment that would leave projected port health below this
    dirty_floor: float
    #: probability of discarding a dirty accomplishment it did not take
    discard_dirty: float
    #: probabilities of a selfish / generous offer (the rest are fair)
    p_selfish: float
    p_generous: float
    #: accept a trade when c * own gain + s * partner gain exceeds this
    accept_threshold: float
    #: logit bias of saying yes to Personal Gain
    personal_gain_bias: float
    #: logit bias of voting Hero (rather than Pariah)
    hero_bias: float
    #: most offers this player makes in a trade round (the game's max_offers caps it)
    max_offers: int = 1


def svo_category(angle: float) -> str:
    """Murphy et al.'s SVO category of an angle."""
    if angle > SVO_ALTRUISTIC_ABOVE:
        return "altruistic"
    if angle > SVO_PROSOCIAL_ABOVE:
        return "prosocial"
    if angle > SVO_COMPETITIVE_BELOW:
        return "individualistic"
    return "competitive"


def svo_params(angle: float) -> PlayerParams:
    """Behavioural parameters as continuous functions of the SVO angle (degrees)."""
    rad = math.radians(angle)
    s, c = math.sin(rad), math.cos(rad)
    return PlayerParams(
        angle=float(angle),
        self_weight=c,
        others_weight=s,
        health_base=_clip(0.33 + 0.35 * s, 0.05, 0.9),
        health_cap=_clip(0.40 + 0.35 * s, 0.1, 1.0),
        health_target=_clip(30.0 + 0.6 * angle, 10.0, 65.0),
        health_share=_clip(0.2 + 0.5 * s, 0.05, 0.8),
        conformity=_clip(0.3 + 0.6 * s, 0.0, 1.0),
        dirty_bias=0.2 - 3.0 * s,
        dirty_floor=_clip(12.0 + 0.5 * angle, 5.0, 60.0),
        discard_dirty=_clip(0.05 + 0.8 * s, 0.0, 0.95),
        p_selfish=_clip(0.35 - 0.6 * s, 0.02, 0.9),
        p_generous=_clip(0.05 + 0.45 * s, 0.0, 0.6),
        accept_threshold=0.0,
        personal_gain_bias=1.0 - 4.0 * s,
        hero_bias=0.3 + 2.0 * s,
    )


#: cultural group -> (SVO-equivalent angle, overrides, player-facing description in our words)
CULTURAL_PRESETS: dict[str, tuple[float, dict[str, Any], str]] = {
    "hierarchical-individualist": (
        0.0,
        {"conformity": 0.8, "dirty_bias": 1.4},
        "You believe in a clear social order and respect for authority, and within it you "
        "pursue your own freedom and your own success.",
    ),
    "hierarchical-communitarian": (
        45.0,
        {"conformity": 0.95, "health_share": 0.9},
        "You believe in a structured community with clearly assigned roles, and you put the "
        "welfare of the community and shared duties first.",
    ),
    "egalitarian-individualist": (
        -5.0,
        {"conformity": 0.15, "max_offers": 2, "p_selfish": 0.55, "accept_threshold": 0.1},
        "Your own achievements come first; every interaction is a negotiation and you welcome "
        "open competition between individuals.",
    ),
    "egalitarian-communitarian": (
        50.0,
        {"dirty_bias": -6.0, "discard_dirty": 0.95, "p_selfish": 0.0, "p_generous": 0.5},
        "You care most about the group as a whole and avoid choices that would hurt anyone.",
    ),
}

#: trait set -> (SVO-equivalent angle, overrides, description)
TRAIT_PRESETS: dict[str, tuple[float, dict[str, Any], str]] = {
    "cooperative": (
        75.0,
        {"discard_dirty": 0.95, "conformity": 1.0},
        "You are altruistic, cooperative, empathetic, generous and selfless.",
    ),
    "selfish": (
        -35.0,
        {"conformity": 0.0, "accept_threshold": 0.2, "p_selfish": 0.85, "p_generous": 0.0},
        "You are self-centred, selfish, uncooperative and machiavellian.",
    ),
}


def svo_description(angle: float) -> str:
    """A player-facing description of an SVO angle (our wording of the paper's SVO preamble)."""
    return (
        "Your personality is described by your Social Value Orientation (SVO): how much you "
        "weigh other people's outcomes against your own, expressed as an angle. Above 57.15 "
        "degrees is altruistic, 22.45 to 57.15 prosocial, -12.04 to 22.45 individualistic and "
        f"below -12.04 competitive. Your SVO angle is {angle:g} degrees ({svo_category(angle)})."
    )


def svo_persona(angle: float) -> Persona:
    return Persona(
        svo_angle=float(angle),
        extra={"description": svo_description(angle), "svo_category": svo_category(angle)},
    )


def cultural_persona(group: str) -> Persona:
    if group not in CULTURAL_PRESETS:
        raise ValueError(f"unknown cultural group {group!r}; known: {', '.join(CULTURAL_GROUPS)}")
    _, _, text = CULTURAL_PRESETS[group]
    return Persona(cultural_group=group, extra={"description": text})


def trait_persona(name: str) -> Persona:
    if name not in TRAIT_PRESETS:
        raise ValueError(f"unknown trait set {name!r}; known: {', '.join(TRAIT_PRESETS)}")
    _, _, text = TRAIT_PRESETS[name]
    return Persona(
        traits=TRAIT_SETS[name],
        extra={"description": text, "trait_set": name},
    )


def bot_persona() -> Persona:
    return Persona(
        extra={"policy": "reference_bot", "description": "the online game's idle-player bot"}
    )


def preset_personas(
    preset: str,
    *,
    svo_angles: Sequence[float] = (-15, 0, 15, 30, 60),
    cultural_groups: Sequence[str] = CULTURAL_GROUPS + ("random",),
    traits: Sequence[str] = ("cooperative", "selfish", "cooperative", "selfish", "random"),
    rng: np.random.Generator | None = None,
) -> list[Persona]:
    """Five personas, one per seat, for a preset; ``"random"`` entries draw from ``rng``."""
    rng = rng if rng is not None else np.random.default_rng(0)
    if preset == "svo":
        return [svo_persona(a) for a in svo_angles]
    if preset == "cultural":
        return [
            cultural_persona(CULTURAL_GROUPS[int(rng.integers(4))] if g == "random" else g)
            for g in cultural_groups
        ]
    if preset == "traits":
        names = sorted(TRAIT_PRESETS)
        return [trait_persona(names[int(rng.integers(2))] if t == "random" else t) for t in traits]
    if preset == "reference_bot":
        return [bot_persona() for _ in range(5)]
    raise ValueError(f"unknown preset {preset!r}")


def persona_label(persona: Persona) -> str:
    """Short label grouping results by persona: ``svo-15``, a cultural group, a trait set, ``bot``."""
    if persona.svo_angle is not None:
        return f"svo{persona.svo_angle:g}"
    if persona.cultural_group:
        return persona.cultural_group
    if persona.extra.get("trait_set"):
        return str(persona.extra["trait_set"])
    if persona.extra.get("policy") == "reference_bot":
        return "bot"
    return persona.label()


def params_for(persona: Persona) -> PlayerParams:
    """The rule parameters a persona implies (an explicit ``extra["params"]`` dict overrides)."""
    if persona.svo_angle is not None:
        params = svo_params(persona.svo_angle)
    elif persona.cultural_group in CULTURAL_PRESETS:
        angle, overrides, _ = CULTURAL_PRESETS[persona.cultural_group]
        params = replace(svo_params(angle), **overrides)
    elif persona.extra.get("trait_set") in TRAIT_PRESETS:
        angle, overrides, _ = TRAIT_PRESETS[persona.extra["trait_set"]]
        params = replace(svo_params(angle), **overrides)
    elif persona.disposition == "altruistic":
        params = svo_params(60.0)
    elif persona.disposition == "selfish":
        params = svo_params(-15.0)
    else:
        params = svo_params(0.0)
    extra = persona.extra.get("params")
    if extra:
        params = replace(params, **extra)
    return params


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

    # -- planning ----------------------------------------------------------
    def health_plan(self, decision: Decision) -> int:
        obs, pp = decision.observation, self.params
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


class PortOfMarsRuleNarrator(RulePolicy):
    """Writes the planning meeting without an LLM: needs, offers and health pledges.

    The pledges split the group's projected shortfall (to keep the next round at
    one event if possible, else out of the three-event zone, else alive) by each
    player's willingness (``health_share``), on top of what each would give in a
    calm round.
    """

    name = "rule_narrator"

    def meeting(self, decision: Decision) -> dict[str, Any]:
        obs = decision.observation
        players = obs["players"]
        params = [params_for(Persona(**p["persona"])) for p in players]
        hc = max(1, obs["port_health_coin_cost"])
        base = [pp.health_base * p["coins"] for pp, p in zip(params, players, strict=True)]
        projected = obs["port_health"] + sum(base) / hc - obs["wear_per_round"]
        # a meeting stretches everyone a little beyond their usual ceiling (the commitment effect)
        ceiling = [
            min(p["coins"], (pp.health_cap + MEETING_STRETCH) * p["coins"])
            for pp, p in zip(params, players, strict=True)
        ]
        usual = sum(max(b, c) for b, c in zip(base, ceiling, strict=True))
        # the most ambitious level the group can reach with what its members usually give
        # (one event, else out of the three-event zone); else plain survival with everything
        target = 10.0
        for level in (obs["two_events_below"], obs["three_events_below"]):
            if projected + (usual - sum(base)) / hc >= level:
                target = float(level)
                break
        shortfall = max(0.0, target - projected)
        weights = [pp.health_share for pp in params]
        # what each says it can give: its usual ceiling, or everything when survival is at stake
        coins = ceiling if target > 10 else [float(p["coins"]) for p in players]
        pledge = [min(b, c) for b, c in zip(base, coins, strict=True)]
        # split the shortfall by willingness; what a full purse cannot take goes to the others
        need = shortfall * hc
        active = [i for i in range(len(players)) if pledge[i] < coins[i]]
        while need > 1e-9 and active:
            total_w = sum(weights[i] for i in active) or 1.0
            for i in active:
                give = min(need * weights[i] / total_w, coins[i] - pledge[i])
                pledge[i] += give
            need = shortfall * hc - (
                sum(pledge) - sum(min(b, c) for b, c in zip(base, coins, strict=True))
            )
            active = [i for i in active if pledge[i] < coins[i] - 1e-9]
        rounded = [
            int(min(p["coins"], math.ceil(x - 1e-9))) for x, p in zip(pledge, players, strict=True)
        ]
        pledges: dict[str, int] = {p["role"]: n for p, n in zip(players, rounded, strict=True)}
        lines = [
            f"Port health is {obs['port_health']} and will fall by {obs['wear_per_round']} "
            f"at the start of next round."
        ]
        summaries: dict[str, str] = {}
        for p in players:
            pledge_p = pledges[p["role"]]
            needs = (
                ", ".join(f"{n} {r.capitalize()}" for r, n in sorted(p["needs"].items()))
                or "nothing"
            )
            lines.append(
                f"{p['role']}: I can put {pledge_p} coins into port health. "
                f"For my next accomplishment I still need {needs}."
            )
        for p in players:
            summaries[p["role"]] = (
                f"The group aims to keep port health at {target:g} or more after the next wear. "
                f"You said you would put {pledges[p['role']]} coins into port health."
            )
        offers = {}
        for p in players:
            can_make = p["specialty"] in p["can_buy"] and p["coins"] - pledges[p["role"]] >= 4
            offers[p["role"]] = sorted(set(p["spare"]) | ({p["specialty"]} if can_make else set()))
        needs = {p["role"]: sorted(r for r in p["needs"] if r not in p["can_buy"]) for p in players}
        for p in players:
            if offers[p["role"]]:
                lines.append(
                    f"{p['role']}: I can trade "
                    + ", ".join(r.capitalize() for r in offers[p["role"]])
                    + "."
                )
        return {
            "conversation": "\n".join(lines),
            "summaries": summaries,
            "pledges": pledges,
            "offers": offers,
            "needs": needs,
        }


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
#: who writes the meeting when no LLM does
MEETING_WRITERS: dict[str, Any] = {"rule": lambda **_: PortOfMarsRuleNarrator()}
