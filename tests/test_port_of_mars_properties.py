"""Property-based tests: random legal play never breaks a Port of Mars invariant."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mesa_dilemmas.agents.random_policy import RandomLegalPolicy
from mesa_dilemmas.dilemmas.base import build_model
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES, accomplishment_cards
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel


def check_invariants(m: PortOfMarsModel, phase: str, before: dict[str, Any]) -> None:
    assert 0 <= m.health <= 100, f"port health {m.health} after {phase}"
    for p in m.seats:
        assert all(p.resources[r] >= 0 for r in RESOURCES), f"{p.role} negative after {phase}"
        assert p.coins >= 0, f"{p.role} spent more coins than it had in {phase}"
        ids = sorted(c.id for c in [*p.deck.cards, *p.hand, *p.purchased])
        assert ids == sorted(c.id for c in accomplishment_cards()[p.role]), (
            f"{p.role} deck not conserved"
        )
        assert len(p.hand) <= 3
        assert p.points == sum(c.points for c in p.purchased)
    deck = m.event_deck
    assert Counter(deck.pile) + Counter(deck.drawn) == Counter(deck.cards), (
        "event deck not conserved"
    )
    if phase == "trading":
        totals = {r: sum(p.resources[r] for p in m.seats) for r in RESOURCES}
        assert totals == before["totals"], "a trade created or destroyed resources"
    if phase == "investment":
        for p, coins in zip(m.seats, before["coins"], strict=True):
            spent = coins - p.coins
            assert 0 <= spent <= coins
            assert p.health_coins_round <= spent


def instrument(m: PortOfMarsModel) -> None:
    """Wrap every phase so the invariants are checked after each one."""
    for phase in m.PHASES:
        original = getattr(m, f"phase_{phase}")

        def wrapped(original=original, phase=phase) -> None:
            before = {
                "totals": {r: sum(p.resources[r] for p in m.seats) for r in RESOURCES},
                "coins": [p.coins for p in m.seats],
            }
            original()
            check_invariants(m, phase, before)

        setattr(m, f"phase_{phase}", wrapped)


game_params = st.fixed_dictionaries(
    {
        "rng": st.integers(0, 2**31 - 1),
        "n_rounds": st.integers(1, 12),
        "events_in_first_round": st.booleans(),
        "life_as_usual_copies": st.integers(0, 12),
        "settle_final_round": st.booleans(),
        "role_table": st.sampled_from(["online", "paper"]),
        "max_offers": st.integers(0, 3),
        "trade_rounds": st.integers(0, 2),
        "meeting": st.booleans(),
        "preset": st.sampled_from(["svo", "cultural", "traits", "reference_bot"]),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=game_params, players=st.sampled_from(["random", "rule", "mixed"]))
def test_random_legal_play_keeps_every_invariant(params: dict[str, Any], players: str) -> None:
    narrator = (
        RandomLegalPolicy(seed=params["rng"]) if players == "random" and params["meeting"] else None
    )
    m = PortOfMarsModel(narrator=narrator, **params)
    if players != "rule":
        policies = [
            RandomLegalPolicy() if players == "random" or seat % 2 == 0 else agent.policy
            for seat, agent in enumerate(m.seats)
        ]
        m.set_policies(policies)
    instrument(m)
    while m.running:
        m.step()
    assert m.game_over
    if m.collapsed:
        assert m.winners == [] and m.health == 0
        assert all(m.final_points(p) == 0 for p in m.seats)
        assert m.final_metrics()["survived"] is False
    else:
        assert m.round == params["n_rounds"] and m.health > 0
        best = max(p.points for p in m.seats)
        assert m.winners == [p.seat for p in m.seats if p.points == best]
    for offer in m.trades:
        assert offer.status in ("accepted", "rejected", "failed")
        assert any(offer.give.values()) or any(offer.receive.values())
    assert sum(m.event_counts.values()) == m.events_drawn_total


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), players=st.sampled_from(["random", "rule"]))
def test_same_seed_same_game(seed: int, players: str) -> None:
    def play() -> str:
        params = {"policy_factory": players, "meeting": players == "rule"}
        m = build_model(PortOfMarsModel, params, seed)
        while m.running:
            m.step()
        return m.final_metrics()["players_json"] + str(m.health_history)

    assert play() == play()
