"""One test per Port of Mars event type (24 ids), each checking the event's real mechanics."""

from __future__ import annotations

from typing import Any

import pytest

from mesa_dilemmas.agents import Decision, RulePolicy
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES, ROLES, event_cards
from mesa_dilemmas.dilemmas.port_of_mars.events import RESOLVERS
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel


class Chooser(RulePolicy):
    """Answers event decisions from a table keyed by (kind, stage/event); fallback otherwise."""

    name = "chooser"

    def __init__(self, answers: dict[str, Any] | None = None, invest_health: int = 0) -> None:
        self.answers = answers or {}
        self.invest_health = invest_health

    def _pick(self, d: Decision) -> Any:
        ev = d.observation.get("event", {})
        for key in (f"{d.kind}:{ev.get('stage')}", f"{d.kind}:{ev.get('id')}", d.kind):
            if key in self.answers:
                value = self.answers[key]
                return value(d) if callable(value) else value
        return d.fallback

    vote = event_choice = keep_resources = _pick

    def health_plan(self, d: Decision) -> int:
        return 0

    def goal_plan(self, d: Decision) -> str:
        return d.fallback

    def invest(self, d: Decision) -> dict[str, int]:
        return {"port_health": min(self.invest_health, d.observation["coins"])}

    def trade_offer(self, d: Decision) -> list:
        value = self.answers.get("port_of_mars.trade_offer", [])
        return value(d) if callable(value) else value

    def trade_accept(self, d: Decision) -> str:
        return "no"

    def purchase(self, d: Decision) -> list:
        return []

    def discard(self, d: Decision) -> list:
        return []


def model_with(
    answers: list[dict[str, Any]] | dict[str, Any] | None = None, **kw: Any
) -> PortOfMarsModel:
    kw.setdefault("roles", list(ROLES))
    kw.setdefault("meeting", False)
    kw.setdefault("rng", 3)
    m = PortOfMarsModel(**kw)
    if not isinstance(answers, list):
        answers = [answers or {}] * 5
    m.set_policies([Chooser(a) for a in answers])
    m.time = 2
    m.phase_new_round()  # round 2 state: 75 health after wear, 10 coins each
    return m


def reveal(m: PortOfMarsModel, eid: str, deferred: bool = True) -> None:
    """Reveal one event as the events phase would, then apply the deferred effects."""
    from mesa_dilemmas.dilemmas.port_of_mars.events import resolve_deferred, resolve_event

    card = event_cards()[eid]
    m.events_round.append(card)
    resolve_event(m, card)
    if deferred:
        resolve_deferred(m)


def snapshot(m: PortOfMarsModel) -> tuple:
    return (
        m.health,
        [dict(p.resources) for p in m.seats],
        [p.coins for p in m.seats],
        [[c.id for c in p.hand] for p in m.seats],
        m.effects,
    )


def test_every_event_id_has_a_resolver_and_the_deck_has_35_cards():
    assert set(RESOLVERS) == set(event_cards())
    assert len(RESOLVERS) == 24


def test_audit_reveals_everyones_private_state():
    m = model_with()
    assert "audit" not in m.observe(0)
    reveal(m, "audit")
    audit = m.observe(0)["audit"]
    assert set(audit) == set(ROLES)
    assert {"resources", "accomplishments", "port_health_coins_this_round"} <= set(
        audit["Researcher"]
    )


def test_bonding_through_adversity_gives_each_player_a_chosen_unit():
    m = model_with({"port_of_mars.event_choice:bondingThroughAdversity": "science"})
    reveal(m, "bondingThroughAdversity")
    assert all(p.resources["science"] == 1 for p in m.seats)
    assert sum(sum(p.resources.values()) for p in m.seats) == 5


def test_breakdown_of_trust_keeps_at_most_two_units_of_the_players_choice():
    m = model_with({"port_of_mars.keep_resources": {"legacy": 2}})
    for p in m.seats:
        p.resources.update({"culture": 3, "legacy": 4, "science": 1})
    m.player(4).resources = dict.fromkeys(RESOURCES, 0) | {"finance": 2}  # two units: keeps all
    reveal(m, "breakdownOfTrust")
    for p in list(m.seats)[:4]:
        assert p.resources == {
            "culture": 0,
            "finance": 0,
            "government": 0,
            "legacy": 2,
            "science": 0,
        }
    assert m.player(4).resources["finance"] == 2


def test_breakdown_of_trust_rejects_keeping_more_than_two():
    from mesa_dilemmas.agents import InvalidAnswer

    m = model_with({"port_of_mars.keep_resources": {"culture": 2, "legacy": 1}})
    for p in m.seats:
        p.resources.update({"culture": 3, "legacy": 4})
    with pytest.raises(InvalidAnswer):
        reveal(m, "breakdownOfTrust")


def test_changing_tides_returns_hands_and_draws_one():
    m = model_with()
    before = [[c.id for c in p.hand] for p in m.seats]
    reveal(m, "changingTides")
    for p, old in zip(m.seats, before, strict=True):
        assert len(p.hand) == 1
        assert [c.id for c in list(p.deck.cards)[-3:]] == old  # went under the deck, in order
        assert len(p.deck) + len(p.hand) == 14


def test_compulsive_philanthropy_forces_the_voted_player_to_put_all_coins_in_port_health():
    m = model_with({"port_of_mars.vote:player": "Pioneer"})
    m.effects.personal_gain_yes = []
    reveal(m, "compulsivePhilanthropy")
    assert m.effects.forced_full_health == {2}
    m.phase_planning()
    m.phase_investment()
    pio = m.player(2)
    assert pio.health_coins_round == 10 and pio.coins == 0
    assert sum(pio.resources.values()) == 0
    assert m.observe(2)["must_spend_all_on_port_health"]


def test_compulsive_philanthropy_tie_is_broken_among_the_tied_only():
    votes = ["Curator", "Curator", "Pioneer", "Pioneer", "Researcher"]
    winners = set()
    for seed in range(12):
        m = model_with([{"port_of_mars.vote:player": v} for v in votes], rng=seed)
        reveal(m, "compulsivePhilanthropy")
        winners |= m.effects.forced_full_health
    assert winners == {0, 2}


def test_crop_failure_costs_20_port_health():
    m = model_with()
    reveal(m, "cropFailure")
    assert m.health == 55


def test_difficult_conditions_doubles_the_coin_cost_of_port_health():
    m = model_with()
    m.set_policies([Chooser({}, invest_health=5) for _ in range(5)])
    reveal(m, "difficultConditions")
    assert m.health_cost() == 2 and m.observe(0)["port_health_coin_cost"] == 2
    m.phase_planning()
    m.phase_investment()
    # 5 units of port health cost 10 coins; the spec caps units at 10 // 2 = 5
    assert all(p.health_units_round == 5 and p.health_coins_round == 10 for p in m.seats)
    m.phase_end_round()
    assert m.health == 100


def test_efforts_wasted_gives_back_a_completed_accomplishment_and_its_points():
    m = model_with()
    cur = m.player(0)
    card = cur.hand.pop(0)
    cur.purchased.append(card)
    cur.points = card.points
    reveal(m, "effortsWasted")
    assert cur.points == 0 and cur.purchased == []
    assert cur.deck.cards[-1] is card
    assert m.player(1).points == 0  # players without purchases are not asked
    assert len(cur.deck) + len(cur.hand) + len(cur.purchased) == 14


def test_hero_gives_four_specialty_units():
    m = model_with(
        {"port_of_mars.vote:hero_or_pariah": "Hero", "port_of_mars.vote:hero": "Researcher"}
    )
    reveal(m, "heroOrPariah")
    assert m.player(4).resources["science"] == 4
    assert "Hero: Researcher" in m.observe(0)["event_outcomes"]


def test_pariah_loses_everything_and_hero_needs_three_votes():
    answers = [
        {"port_of_mars.vote:hero_or_pariah": "Hero", "port_of_mars.vote:pariah": "Curator"}
    ] * 2
    answers += [
        {"port_of_mars.vote:hero_or_pariah": "Pariah", "port_of_mars.vote:pariah": "Curator"}
    ] * 3
    m = model_with(answers)
    m.player(0).resources.update({"culture": 5, "science": 2})
    reveal(m, "heroOrPariah")
    assert sum(m.player(0).resources.values()) == 0


def test_hull_breach_costs_7_port_health():
    m = model_with()
    reveal(m, "hullBreach")
    assert m.health == 68


def test_interdisciplinary_opens_trade_only_resources_at_3_coins():
    m = model_with()
    assert "science" not in m.coin_costs(0)
    reveal(m, "interdisciplinary")
    costs = m.coin_costs(0)  # Curator
    assert costs == {"culture": 2, "finance": 3, "government": 3, "legacy": 3, "science": 3}


def test_life_as_usual_changes_nothing():
    m = model_with()
    before = snapshot(m)
    reveal(m, "lifeAsUsual")
    assert snapshot(m) == before


def test_lost_time_takes_five_coins_not_below_zero():
    m = model_with()
    m.player(1).coins = 3
    reveal(m, "lostTime")
    assert [p.coins for p in m.seats] == [5, 0, 5, 5, 5]


def test_markets_closed_skips_the_trade_phase():
    def offer(d: Decision) -> list:
        if d.observation["role"] == "Curator":
            return []
        return [{"to": "Curator", "give": {}, "receive": {"culture": 1}}]

    m = model_with({"port_of_mars.trade_offer": offer})
    reveal(m, "marketsClosed")
    m.phase_trading()
    assert m.trades == [] and not m.observe(0)["markets_open"]
    m2 = model_with({"port_of_mars.trade_offer": offer})
    m2.phase_trading()
    assert len(m2.trades) == 4  # everyone but the Curator asks the Curator (who holds nothing)


def test_murphys_law_reveals_two_more_events_that_take_effect():
    m = model_with()
    pile = [e for e in m.event_deck.pile if e not in ("murphysLaw", "cropFailure", "hullBreach")]
    m.event_deck.pile = pile + ["hullBreach", "cropFailure", "murphysLaw"]
    m.health = 80  # one event after wear
    m.phase_events()
    assert [e.id for e in m.events_round] == ["murphysLaw", "cropFailure", "hullBreach"]
    assert m.health == 80 - 20 - 7


@pytest.mark.parametrize("role", ROLES)
def test_out_of_commission_leaves_the_role_three_coins(role):
    m = model_with({"port_of_mars.event_choice:personalGain": "yes"})
    reveal(m, "personalGain", deferred=False)
    reveal(m, f"outOfCommission{role}")  # sets (not subtracts), after Personal Gain
    seat = ROLES.index(role)
    assert m.player(seat).coins == 3
    assert all(p.coins == 16 for p in m.seats if p.seat != seat)
    assert m.events_round[-1].display_name == f"Out of Commission ({role})"


def test_personal_gain_six_coins_per_yes_and_six_port_health_each():
    answers = [
        {"port_of_mars.event_choice:personalGain": a} for a in ("yes", "no", "yes", "no", "no")
    ]
    m = model_with(answers)
    reveal(m, "personalGain")
    assert [p.coins for p in m.seats] == [16, 10, 16, 10, 10]
    assert m.health == 75 - 12


def test_sandstorm_hits_three_rounds_in_a_row():
    m = model_with()
    pile = [e for e in m.event_deck.pile if e not in ("sandstorm",)]
    m.event_deck.pile = pile + ["sandstorm"]
    m.health = 90
    m.phase_events()
    assert m.health == 80 and len(m.ongoing) == 1
    healths = []
    for r in (3, 4, 5):
        m.time = r
        m.phase_new_round()
        m.event_deck.pile = [e for e in m.event_deck.pile if e != "sandstorm"] or ["lifeAsUsual"]
        rig = ["lifeAsUsual"] * 3
        m.event_deck.pile = [e for e in m.event_deck.pile if e != "lifeAsUsual"] + rig
        m.health = 90
        m.phase_events()
        healths.append(m.health)
    assert healths == [80, 80, 90]  # rounds 2 and 3 after the draw, then it is over
    assert m.ongoing == []


def test_solar_flare_costs_5_and_silences_meeting_and_trade():
    calls = []

    class Narrator(RulePolicy):
        def meeting(self, d: Decision) -> dict:
            calls.append(d)
            return {"conversation": "hi"}

    m = model_with(meeting=True, narrator=Narrator())
    reveal(m, "solarFlare")
    assert m.health == 70
    m.phase_meeting()
    m.phase_trading()
    assert calls == [] and not m.meeting_held and m.trades == []


def test_stymied_blocks_the_specialty_even_with_interdisciplinary():
    m = model_with()
    reveal(m, "stymied")
    assert "culture" not in m.coin_costs(0)
    reveal(m, "interdisciplinary")
    assert "culture" not in m.coin_costs(0)
    assert m.coin_costs(0)["science"] == 3
