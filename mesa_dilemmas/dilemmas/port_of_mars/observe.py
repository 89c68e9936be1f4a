"""What a Port of Mars player sees: the observation of a seat, and the decisions built from it.

:meth:`Observations.observe` is everything a seat may know now, as plain data in the paper's
player-facing names (coins, port health, resources, events, accomplishments); the number of
rounds is never in it.  :meth:`Observations.decision` adds the texts LLM players read
(:mod:`.text`: the briefing and the situation) for policies that read text
(``Policy.reads_text``; ``texts_for_all = True`` renders them for every seat).  Leadership
only changes what each seat is told (:meth:`Observations.leadership_info`).  A mixin of
:class:`~mesa_dilemmas.dilemmas.port_of_mars.model.PortOfMarsModel`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.dilemmas.port_of_mars import text
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.port_of_mars.cards import EventCard
    from mesa_dilemmas.dilemmas.port_of_mars.model import Player


class Observations:
    """The observation half of the Port of Mars model."""

    # -- observations -----------------------------------------------------
    def leadership_info(self, seat: int) -> dict[str, Any]:
        """What ``seat`` is told about leadership under the variant (paper Sec. 4.4)."""
        if self.leader is None:
            return {"leader": None, "you_are_leader": False}
        leader_role = self.roles[self.leader]
        is_leader = seat == self.leader
        if self.p.leadership == "vanilla":
            return {"leader": leader_role if is_leader else None, "you_are_leader": is_leader}
        if self.p.leadership == "announce":
            return {"leader": leader_role, "you_are_leader": is_leader}
        # unaware: everyone but the leader knows
        return {"leader": None if is_leader else leader_role, "you_are_leader": False}

    def public_roles(self) -> dict[str, dict[str, Any]]:
        """Every role's specialty and what it can buy (public; built once, shared read-only)."""
        cached = getattr(self, "_public_roles", None)
        if cached is not None:
            return cached
        self._public_roles: dict[str, dict[str, Any]] = {
            role: {
                "specialty": spec.specialty,
                "can_buy": list(spec.producible),
                "trade_only": list(spec.trade_only),
            }
            for role, spec in self.specs.items()
        }
        return self._public_roles

    def round_events_public(self) -> list[dict[str, Any]]:
        return self.ongoing_shown + [c.public() for c in self.events_round]

    def audit_view(self) -> dict[str, Any]:
        return {
            p.role: {
                "resources": dict(p.resources),
                "accomplishments": [c.public() for c in p.hand],
                "completed": [c.name for c in p.purchased],
                "port_health_coins_this_round": p.health_coins_round,
                "resources_bought_this_round": dict(p.bought_round),
            }
            for p in self.seats
        }

    def spare(self, p: Player) -> dict[str, int]:
        """Units held beyond what the current goal needs (what a player could trade away)."""
        card = p.hand_card(p.goal) if p.goal else None
        cost = card.cost_dict if card is not None else {}
        return {r: n - cost.get(r, 0) for r, n in p.resources.items() if n > cost.get(r, 0)}

    def goal_missing(self, p: Player) -> dict[str, int]:
        card = p.hand_card(p.goal) if p.goal else None
        return p.missing_for(card) if card is not None else {}

    def observe(self, seat: int, **extra: Any) -> dict[str, Any]:
        """Everything ``seat`` may see now, as plain data in the paper's player-facing terms."""
        p = self.player(seat)
        spec = self.role_spec(seat)
        costs = self.coin_costs(seat)
        obs: dict[str, Any] = {
            "game": "Port of Mars",
            "round": self.round,
            "role": p.role,
            "specialty": spec.specialty,
            "coin_costs": costs,
            "port_health_coin_cost": self.health_cost(),
            "trade_only": [r for r in RESOURCES if r not in costs],
            "coins": p.coins,
            "coins_per_round": self.COINS_PER_ROUND,
            "port_health": self.health,
            "port_health_after_wear": self.health_after_wear,
            "wear_per_round": self.WEAR,
            "two_events_below": self.TWO_EVENTS_BELOW,
            "three_events_below": self.THREE_EVENTS_BELOW,
            "n_events": self.n_events,
            "events": self.round_events_public(),
            "event_outcomes": list(self.effects.log),
            "markets_open": not self.effects.trade_closed,
            "points": p.points,
            "points_by_role": {q.role: q.points for q in self.seats},
            "resources": dict(p.resources),
            "accomplishments": [c.public() for c in p.hand],
            "completed": [c.name for c in p.purchased],
            "goal": p.goal,
            "goal_missing": self.goal_missing(p),
            "health_plan": p.health_plan,
            "port_health_coins_this_round": p.health_coins_round,
            "port_health_coins_last_round": (
                p.health_coins_by_round[-1] if p.health_coins_by_round else None
            ),
            "must_spend_all_on_port_health": seat in self.effects.forced_full_health,
            "roles": self.public_roles(),
            "leadership": self.leadership_info(seat),
            "meeting_held": self.meeting_held,
            "meeting_summary": self.meeting_summaries.get(p.role) if self.meeting_held else None,
            "meeting_pledges": dict(self.pledges) if self.meeting_held and self.pledges else None,
            "meeting_market": self.market if self.meeting_held else None,
            "last_round": self.last_round,
        }
        if self.effects.audit:
            obs["audit"] = self.audit_view()
        obs.update(extra)
        return obs

    def rules_numbers(self) -> dict[str, Any]:
        """The numbers the rules text quotes (``prompts/parts/rules.txt``)."""
        return {
            "max_health": self.MAX_HEALTH,
            "start_health": self.START_HEALTH,
            "wear": self.WEAR,
            "coins": self.COINS_PER_ROUND,
            "health_per_coin": 1,
            "two_events_below": self.TWO_EVENTS_BELOW,
            "three_events_below": self.THREE_EVENTS_BELOW,
            "leadership": self.p.leadership,
        }

    def player_texts(self, seat: int, obs: dict[str, Any]) -> dict[str, Any]:
        """The texts an LLM player's templates read (:mod:`.text`)."""
        hc = obs["port_health_coin_cost"]
        rules = self.rules_numbers()
        persona = self.player(seat).persona
        return {
            "rules": text.rules_text(rules),
            "identity": text.identity(obs, persona, rules),
            "briefing": text.briefing(obs, persona, rules),
            "situation": text.situation(obs),
            "common": text.common(persona, rules),
            "public": text.public_round(obs),
            "own": text.own_round(obs, persona, rules),
            "prices": text.prices_text(obs),
            "health_per_coin": "1" if hc == 1 else f"1/{hc}",
        }

    def decision(
        self,
        seat: int,
        kind: str,
        spec: Any,
        fallback: Any,
        meta: dict[str, Any] | None = None,
        shown: Any = None,
        **extra: Any,
    ) -> Decision:
        """Seat ``seat``'s decision of ``kind``: validated by ``spec``; its prompt shows
        ``shown`` (one spec for every seat of the phase, :mod:`.specs`) when given."""
        obs = self.observe(seat, **extra)
        if self.texts_for_all or getattr(self.player(seat).policy, "reads_text", False):
            obs.update(self.player_texts(seat, obs))
        return Decision(
            kind=kind,
            spec=spec,
            observation=obs,
            agent=self.player(seat),
            step=self.round,
            fallback=fallback,
            meta=meta or {},
            shown=shown,
        )

    def event_decision(
        self,
        seat: int,
        kind: str,
        spec: Any,
        *,
        fallback: Any,
        card: EventCard,
        question: str,
        **extra: Any,
    ) -> Decision:
        """A decision an event demands; the observation names the event and the question."""
        event = {"id": card.id, **card.public(), "question": question, **extra}
        return self.decision(seat, kind, spec, fallback, meta={"event": card.id}, event=event)
