"""Port of Mars metrics: per-player records, the model reporters and the per-run summary.

``players_json`` holds one record per seat (points, coins to port health, dirty accomplishments
and opportunities, trades by kind); the model reporters feed ``steps.parquet`` / ``runs.parquet``
and the batch summary (``RUN_METRICS``).  A mixin of
:class:`~mesa_dilemmas.dilemmas.port_of_mars.model.PortOfMarsModel`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from mesa_dilemmas.dilemmas.metrics import gini
from mesa_dilemmas.dilemmas.port_of_mars.cards import ROLES
from mesa_dilemmas.dilemmas.port_of_mars.trade import TRADE_KINDS

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.port_of_mars.model import Player, PortOfMarsModel


class Metrics:
    """The metrics half of the Port of Mars model."""

    # -- metrics ----------------------------------------------------------
    def final_points(self, p: Player) -> int:
        """Points as scored: 0 for everyone when the port collapsed."""
        return 0 if self.collapsed else p.points

    def player_record(self, p: Player) -> dict[str, Any]:
        persona = p.persona
        return {
            "seat": p.seat,
            "role": p.role,
            "label": p.label,
            "svo_angle": persona.svo_angle,
            "cultural_group": persona.cultural_group,
            "traits": list(persona.traits),
            "policy": p.policy_name,
            "points": p.points,
            "final_points": self.final_points(p),
            "winner": p.seat in self.winners,
            "leader": p.seat == self.leader,
            "health_coins_total": p.health_coins_total,
            "health_coins_by_round": list(p.health_coins_by_round),
            "resources": dict(p.resources),
            "resources_bought_total": p.resources_bought_total,
            "cards_bought": p.cards_bought,
            "cards_returned": p.cards_returned,
            "dirty_cards_bought": p.dirty_cards_bought,
            "dirty_health_cost": p.dirty_health_cost,
            "dirty_taken": p.dirty_taken,
            "dirty_opportunities": p.dirty_opportunities,
            "pct_dirty": (100.0 * p.dirty_taken / p.dirty_opportunities)
            if p.dirty_opportunities
            else None,
            "personal_gain_yes": p.personal_gain_yes,
            "trades_proposed": {k: p.trades_proposed[k] for k in TRADE_KINDS},
            "trades_accepted": {k: p.trades_accepted[k] for k in TRADE_KINDS},
            "trades_received": p.trades_received,
            "trades_received_accepted": p.trades_received_accepted,
            "trades_received_rejected": p.trades_received_rejected,
        }

    def _model_reporters(self) -> dict[str, Any]:
        def total(attr: str):
            return lambda m: sum(m.seats.get(attr))

        def pct_dirty(m: PortOfMarsModel) -> float:
            opps = sum(m.seats.get("dirty_opportunities"))
            return 100.0 * sum(m.seats.get("dirty_taken")) / opps if opps else float("nan")

        reporters: dict[str, Any] = {
            "round": lambda m: m.round,
            "port_health": lambda m: m.health,
            "events_drawn": lambda m: len(m.events_round),
            "events_this_round": lambda m: "|".join(e["name"] for e in m.round_events_public()),
            "events_drawn_total": lambda m: m.events_drawn_total,
            "health_coins_round": total("health_coins_round"),
            "health_coins_total": total("health_coins_total"),
            "dirty_cards_round": total("dirty_cards_round"),
            "dirty_cards_total": total("dirty_cards_bought"),
            "dirty_health_cost_total": total("dirty_health_cost"),
            "dirty_taken": total("dirty_taken"),
            "dirty_opportunities": total("dirty_opportunities"),
            "pct_dirty": pct_dirty,
            "alive": lambda m: not m.collapsed,
            "game_over": lambda m: m.game_over,
            "survived": lambda m: m.survived,
            "collapsed": lambda m: m.collapsed,
            "collapse_round": lambda m: float(m.collapse_round) if m.collapsed else float("nan"),
            "n_rounds": lambda m: m.n_rounds_total,
            "points_mean": lambda m: float(np.mean(m.seats.get("points"))),
            "final_points_mean": lambda m: float(np.mean(m.seats.map(m.final_points))),
            "gini_points": lambda m: gini(m.seats.get("points")),
            "winners": lambda m: "|".join(m.roles[s] for s in m.winners),
            "n_winners": lambda m: len(m.winners),
            "winner_labels": lambda m: "|".join(m.player(s).label for s in m.winners),
            "trades_proposed": lambda m: len(m.trades),
            "trades_accepted": lambda m: sum(o.status == "accepted" for o in m.trades),
            "trades_round": lambda m: len(m.round_offers),
            "leader_role": lambda m: "" if m.leader is None else m.roles[m.leader],
            "leader_label": lambda m: "" if m.leader is None else m.player(m.leader).label,
            "meetings_held": lambda m: m.meetings_held,
            "meeting_fallbacks": lambda m: m.meeting_fallbacks,
            "events_json": lambda m: json.dumps(dict(sorted(m.event_counts.items()))),
            "players_json": lambda m: json.dumps(m.seats.map(m.player_record)),
        }
        for kind in TRADE_KINDS:
            reporters[f"trades_proposed_{kind}"] = lambda m, k=kind: sum(
                o.kind == k for o in m.trades
            )
            reporters[f"trades_accepted_{kind}"] = lambda m, k=kind: sum(
                o.kind == k and o.status == "accepted" for o in m.trades
            )
        for role in ROLES:
            reporters[f"points_{role}"] = lambda m, r=role: m.player(m.roles.index(r)).points
            reporters[f"health_coins_{role}"] = lambda m, r=role: (
                m.player(m.roles.index(r)).health_coins_round
            )
        for seat in range(self.N_PLAYERS):
            reporters[f"seat{seat}_label"] = lambda m, s=seat: m.player(s).label
            reporters[f"seat{seat}_role"] = lambda m, s=seat: m.player(s).role
            reporters[f"seat{seat}_points"] = lambda m, s=seat: m.player(s).points
            reporters[f"seat{seat}_health_coins"] = lambda m, s=seat: m.player(s).health_coins_total
            reporters[f"seat{seat}_dirty_taken"] = lambda m, s=seat: m.player(s).dirty_taken
            reporters[f"seat{seat}_dirty_opportunities"] = lambda m, s=seat: (
                m.player(s).dirty_opportunities
            )
            reporters[f"seat{seat}_winner"] = lambda m, s=seat: s in m.winners
        if self.may_fall_back():  # language-model players: the column analyses filter on
            reporters["decision_fallbacks"] = lambda m: m.decision_fallbacks
        return reporters

    def final_metrics(self) -> dict[str, Any]:
        """The per-run summary (same values as the last DataCollector row)."""
        return {k: f(self) for k, f in self._model_reporters().items()}
