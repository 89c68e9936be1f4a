"""Port of Mars: every phase, a hand-checked game, determinism, leadership, metrics."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mesa_dilemmas.agents import Decision, InvalidAnswer, RulePolicy
from mesa_dilemmas.dilemmas.port_of_mars.cards import (
    RESOURCES,
    ROLES,
    accomplishment_cards,
    event_cards,
)
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

FIXED_ROLES = list(
    ROLES
)  # seat i plays ROLES[i]: Curator, Entrepreneur, Pioneer, Politician, Researcher


class Scripted(RulePolicy):
    """A scripted player: fixed answers per round, everything else the decision's fallback."""

    name = "scripted"

    def __init__(
        self,
        health: int = 0,
        invest: dict[int, dict[str, int]] | None = None,
        offers: dict[int, list[dict[str, Any]]] | None = None,
        buy: dict[int, list[str]] | None = None,
        accept: str = "yes",
        discard: list[str] | None = None,
    ) -> None:
        self.h = health
        self.inv = invest or {}
        self.off = offers or {}
        self.buy = buy or {}
        self.acc = accept
        self.disc = discard or []
        self.seen: list[str] = []

    def decide(self, decision: Decision) -> Any:
        self.seen.append(decision.kind)
        return super().decide(decision)

    def health_plan(self, d: Decision) -> int:
        return min(self.h, d.observation["coins"])

    def goal_plan(self, d: Decision) -> str:
        return d.fallback

    def invest(self, d: Decision) -> dict[str, int]:
        return self.inv.get(d.step, {"port_health": min(self.h, d.observation["coins"])})

    def trade_offer(self, d: Decision) -> list[dict[str, Any]]:
        return self.off.get(d.step, [])

    def trade_accept(self, d: Decision) -> str:
        return self.acc

    def purchase(self, d: Decision) -> list[str]:
        names = self.buy.get(d.step, [])
        return [n for n in names if n in d.spec.item.options]

    def discard(self, d: Decision) -> list[str]:
        return [n for n in self.disc if n in d.spec.item.options]

    def vote(self, d: Decision) -> str:
        return d.fallback

    def event_choice(self, d: Decision) -> str:
        return d.fallback

    def keep_resources(self, d: Decision) -> dict[str, int]:
        return d.fallback


def scripted_model(policies: list[Scripted] | None = None, **kw: Any) -> PortOfMarsModel:
    kw.setdefault("roles", FIXED_ROLES)
    kw.setdefault("meeting", False)
    kw.setdefault("rng", 7)
    m = PortOfMarsModel(**kw)
    m.set_policies(policies or [Scripted() for _ in range(5)])
    return m


def rig_hand(m: PortOfMarsModel, seat: int, names: list[str]) -> None:
    """Put the named cards of the seat's deck in its hand (the old hand goes under the deck)."""
    p = m.player(seat)
    m.return_hand(p)
    for name in names:
        card = next(c for c in p.deck.cards if c.name == name)
        p.deck.cards.remove(card)
        p.hand.append(card)


def rig_events(m: PortOfMarsModel, order: list[str]) -> None:
    """Make the event deck draw ``order`` first (the rest of the deck stays underneath)."""
    pile = list(m.event_deck.pile)
    for eid in order:
        pile.remove(eid)
    m.event_deck.pile = pile + list(reversed(order))


def card_names(role: str) -> dict[int, str]:
    return {c.id: c.name for c in accomplishment_cards()[role]}


# -- data --------------------------------------------------------------------


def test_card_data_matches_the_reference_counts():
    assert sum(c.copies for c in event_cards().values()) == 35
    assert len(event_cards()) == 24
    cards = accomplishment_cards()
    assert sorted(cards) == sorted(ROLES)
    assert all(len(v) == 14 for v in cards.values())
    dirty = [c for v in cards.values() for c in v if c.dirty]
    assert sorted({(c.health_cost, c.points) for c in dirty}) == [(6, 3), (13, 6)]
    assert len(dirty) == 10


def test_roles_are_shuffled_unless_fixed():
    seen = {tuple(PortOfMarsModel(rng=s, meeting=False).roles) for s in range(6)}
    assert len(seen) > 1
    assert all(sorted(r) == sorted(ROLES) for r in seen)
    assert scripted_model().roles == FIXED_ROLES
    with pytest.raises(ValueError):
        PortOfMarsModel(roles=["Curator"] * 5)


# -- phases ------------------------------------------------------------------


def test_new_round_phase_resets_coins_refills_hands_and_wears_the_port():
    m = scripted_model()
    p = m.player(0)
    p.coins = 0
    p.hand.pop()
    m.time = 2
    m.phase_new_round()
    assert m.health == 75
    assert m.health_after_wear == 75
    assert all(q.coins == 10 for q in m.seats)
    assert len(p.hand) == 3


def test_events_phase_draws_by_the_65_35_thresholds_and_not_in_round_one():
    m = scripted_model()
    m.step()
    assert m.n_events == 0 and m.events_round == []
    for health, expected in ((100, 1), (65, 1), (64, 2), (35, 2), (34, 3)):
        m = scripted_model()
        rig_events(m, ["lifeAsUsual", "lifeAsUsual", "lifeAsUsual"])
        m.time = 2
        m.health = health
        m.phase_events()
        assert m.n_events == expected
        assert len(m.events_round) == expected


def test_events_in_first_round_option():
    m = scripted_model(events_in_first_round=True)
    m.step()
    assert m.n_events == 1


def test_meeting_is_two_writer_calls_and_next_round_carries_notes_not_transcript():
    class Narrator(RulePolicy):
        calls: list[Decision] = []

        def meeting(self, d: Decision) -> dict[str, Any]:
            self.calls.append(d)
            return {"conversation": "Curator: let us all give 6.", "pledges": {r: 6 for r in ROLES}}

        def meeting_summaries(self, d: Decision) -> dict[str, Any]:
            self.calls.append(d)
            return {
                r: ("You promised 6." if r == "Curator" else "You said nothing.")
                for r in d.observation["roles"]
            }

    narrator = Narrator()
    m = scripted_model(meeting=True, narrator=narrator)
    m.time = 1
    m.phase_new_round()
    m.phase_meeting()
    kinds = [d.kind for d in narrator.calls]
    assert kinds == ["port_of_mars.meeting", "port_of_mars.meeting_summaries"]
    assert all(d.agent is None for d in narrator.calls)
    seen = narrator.calls[0].observation
    assert "players" in seen and "accomplishments" not in seen and "resources" not in seen
    # the writer's prompt text names roles and personalities, never a hand
    brief = seen["meeting_brief"]
    assert "SVO angle" in brief and all(r in brief for r in ROLES)
    assert not any(c.name in brief for p in m.seats for c in p.hand)
    assert narrator.calls[1].observation["conversation"] == "Curator: let us all give 6."
    curator = m.roles.index("Curator")
    obs = m.observe(curator)
    assert obs["meeting_summary"] == "You promised 6."
    assert obs["meeting_pledges"]["Researcher"] == 6
    assert m.observe((curator + 1) % 5)["meeting_summary"] == "You said nothing."
    m.phase_end_round()
    assert m.last_round["meeting_summaries"]["Curator"] == "You promised 6."
    assert "meeting" not in m.last_round  # the transcript is not carried forward
    assert m.meetings_held == 1 and m.meeting_fallbacks == 0


def test_pledges_are_bounded_by_each_players_coins():
    from mesa_dilemmas.dilemmas.port_of_mars.meeting import meeting_spec

    m = scripted_model(meeting=True)
    m.time = 1
    m.phase_new_round()
    spec = meeting_spec(m)
    assert {sub.high for sub in spec.fields["pledges"].fields.values()} == {10}
    assert spec.fields["conversation"].max_chars <= 4000


def test_meeting_off_and_default_rule_narrator():
    m = scripted_model(meeting=False)
    m.step()
    assert not m.meeting_held and m.observe(0)["meeting_summary"] is None
    m = scripted_model(meeting=True)
    m.step()
    assert m.meeting_held and m.meeting_conversation
    assert set(m.pledges) == set(ROLES)


def test_planning_phase_records_health_plan_and_goal():
    pols = [Scripted(health=h) for h in (0, 3, 5, 7, 10)]
    m = scripted_model(pols)
    m.time = 1
    m.phase_new_round()
    m.phase_planning()
    assert [p.health_plan for p in m.seats] == [0, 3, 5, 7, 10]
    assert all(p.goal == p.hand[0].name for p in m.seats)
    assert m.observe(0)["goal"] == m.player(0).goal


def test_investment_phase_credits_resources_now_and_port_health_at_round_end():
    inv = {1: {"port_health": 4, "culture": 3}}  # 4 + 3*2 = 10 coins for the Curator
    pols = [Scripted(invest=inv)] + [Scripted() for _ in range(4)]
    m = scripted_model(pols)
    m.time = 1
    for phase in ("new_round", "events", "meeting", "planning", "investment"):
        getattr(m, f"phase_{phase}")()
    cur = m.player(0)
    assert cur.resources["culture"] == 3 and cur.coins == 0
    assert cur.health_coins_round == 4
    assert m.health == 75  # not yet credited
    for phase in ("trading", "purchase", "discard", "end_round"):
        getattr(m, f"phase_{phase}")()
    assert m.health == 79


def test_investment_over_budget_or_unavailable_resource_is_rejected():
    over = {1: {"port_health": 5, "culture": 3}}  # 11 coins
    m = scripted_model([Scripted(invest=over)] + [Scripted() for _ in range(4)])
    with pytest.raises(InvalidAnswer):
        m.step()
    sci = {1: {"science": 1}}  # the Curator cannot buy Science
    m = scripted_model([Scripted(invest=sci)] + [Scripted() for _ in range(4)])
    with pytest.raises(InvalidAnswer):
        m.step()


def test_trading_phase_executes_accepted_trades_atomically():
    inv = {
        1: {"culture": 5},  # Curator: 5 Culture
    }
    res_inv = {1: {"science": 5}}  # Researcher: 5 Science
    offer = [{"to": "Researcher", "give": {"culture": 2}, "receive": {"science": 1}}]
    pols = [Scripted(invest=inv, offers={1: offer})] + [Scripted() for _ in range(3)]
    pols.append(Scripted(invest=res_inv, accept="yes"))
    m = scripted_model(pols)
    m.step()
    cur, res = m.player(0), m.player(4)
    assert cur.resources["culture"] == 3 and cur.resources["science"] == 1
    assert res.resources["culture"] == 2 and res.resources["science"] == 4
    assert m.trades[0].status == "accepted" and m.trades[0].kind == "generous"
    assert cur.trades_proposed["generous"] == 1 and cur.trades_accepted["generous"] == 1


def test_rejected_and_unpayable_trades_change_nothing():
    offer = [{"to": "Researcher", "give": {"culture": 1}, "receive": {"science": 2}}]
    pols = [Scripted(invest={1: {"culture": 5}}, offers={1: offer})] + [
        Scripted() for _ in range(4)
    ]
    pols[4] = Scripted(accept="no", invest={1: {"science": 5}})
    m = scripted_model(pols)
    m.step()
    assert m.trades[0].status == "rejected" and m.trades[0].kind == "selfish"
    assert m.player(0).resources["culture"] == 5 and m.player(4).resources["science"] == 5
    assert m.player(4).trades_received_rejected == 1
    # the Researcher accepts but holds no Science: the trade fails, nothing moves
    pols = [Scripted(invest={1: {"culture": 5}}, offers={1: offer})] + [
        Scripted() for _ in range(4)
    ]
    m = scripted_model(pols)
    m.step()
    assert m.trades[0].status == "failed"
    assert m.player(0).resources["culture"] == 5


def test_offers_must_be_held_and_not_empty():
    too_much = [{"to": "Researcher", "give": {"culture": 1}, "receive": {}}]  # holds no Culture
    m = scripted_model([Scripted(offers={1: too_much})] + [Scripted() for _ in range(4)])
    with pytest.raises(InvalidAnswer):
        m.step()
    empty = [{"to": "Researcher", "give": {}, "receive": {}}]
    m = scripted_model([Scripted(offers={1: empty})] + [Scripted() for _ in range(4)])
    with pytest.raises(InvalidAnswer):
        m.step()
    selfie = [{"to": "Curator", "give": {}, "receive": {"science": 1}}]
    m = scripted_model([Scripted(offers={1: selfie})] + [Scripted() for _ in range(4)])
    with pytest.raises(InvalidAnswer):
        m.step()


def test_purchase_phase_pays_resources_adds_points_and_books_dirty_costs():
    names = card_names("Curator")
    snn, sculpture = (
        names[85],
        names[95],
    )  # SNN: 2 Culture + 2 Finance, 4 points; 13-health dirty, 6 points
    inv = {1: {"culture": 2, "finance": 2}}  # 4 + 6 = 10 coins
    pols = [Scripted(invest=inv, buy={1: [snn, sculpture]})] + [Scripted() for _ in range(4)]
    m = scripted_model(pols)
    rig_hand(m, 0, [snn, sculpture, names[81]])
    m.step()
    cur = m.player(0)
    assert cur.points == 10
    assert all(cur.resources[r] == 0 for r in RESOURCES)
    assert [c.name for c in cur.purchased] == [snn, sculpture]
    assert cur.dirty_taken == 1 and cur.dirty_opportunities == 1
    assert m.health == 75 - 13
    # a seat with a dirty card it does not take still had the opportunity
    pols = [Scripted(buy={})] + [Scripted() for _ in range(4)]
    m = scripted_model(pols)
    rig_hand(m, 0, [sculpture])
    m.step()
    assert m.player(0).dirty_opportunities == 1 and m.player(0).dirty_taken == 0


def test_discard_phase_returns_cards_under_the_deck():
    names = card_names("Curator")
    pols = [Scripted(discard=[names[81]])] + [Scripted() for _ in range(4)]
    m = scripted_model(pols)
    rig_hand(m, 0, [names[81], names[82], names[85]])
    m.step()
    p = m.player(0)
    assert [c.name for c in p.hand] == [names[82], names[85]]
    assert p.deck.cards[-1].name == names[81]
    m.step()  # refilled to 3 from the top
    assert len(p.hand) == 3


def test_end_round_phase_collapse_means_no_winner_and_zero_final_points():
    m = scripted_model([Scripted(health=0) for _ in range(5)], rng=3)
    m.player(2).points = 5
    while m.running:
        m.step()
    assert m.collapsed and not m.survived
    assert m.winners == [] and m.final_metrics()["n_winners"] == 0
    assert all(m.final_points(p) == 0 for p in m.seats)
    assert m.final_metrics()["final_points_mean"] == 0.0
    assert m.health == 0 and m.collapse_round == m.round


def test_last_round_ends_in_survival_and_ties_all_win():
    m = scripted_model([Scripted(health=10) for _ in range(5)], n_rounds=2)
    m.player(1).points = 4
    m.player(3).points = 4
    while m.running:
        m.step()
    assert m.round == 2 and m.survived and not m.collapsed
    assert m.winners == [1, 3]
    assert m.final_metrics()["winners"] == "Entrepreneur|Politician"


def test_random_number_of_rounds_is_hidden_and_in_range():
    counts = {
        PortOfMarsModel(rng=s, random_rounds=True, meeting=False).n_rounds_total for s in range(40)
    }
    assert counts <= set(range(8, 13)) and len(counts) > 2
    obs = PortOfMarsModel(rng=1, random_rounds=True, meeting=False).observe(0)
    assert not any("rounds" in k for k in obs)


def test_final_round_settlement_option():
    names = card_names("Researcher")
    dirty = names[15]  # 13 port health, 6 points
    settle = scripted_model(
        [Scripted(health=4) for _ in range(4)] + [Scripted(health=4, buy={1: [dirty]})], n_rounds=1
    )
    rig_hand(settle, 4, [dirty])
    settle.step()
    assert settle.health == 75 + 20 - 13
    skip = scripted_model(
        [Scripted(health=4) for _ in range(4)] + [Scripted(health=4, buy={1: [dirty]})],
        n_rounds=1,
        settle_final_round=False,
    )
    rig_hand(skip, 4, [dirty])
    skip.step()
    assert skip.health == 75 and skip.survived


# -- the hand-checked game ---------------------------------------------------


def test_hand_checked_three_round_game():
    """Three rounds, fixed roles, scripted players, rigged events and hands; every number by hand.

    Seats: Curator, Entrepreneur, Pioneer, Politician, Researcher.  Everyone puts 4 coins into
    port health each round (20 a round).  Events: none in round 1; Hull Breach + Life as Usual in
    round 2; Crop Failure + Markets Closed in round 3.
    """
    cur, res = card_names("Curator"), card_names("Researcher")
    pio = card_names("Pioneer")
    marsball = cur[82]  # Culture 1, Finance 1, Science 2 -> 3 points
    grant, infamous = res[14], pio[35]  # dirty: 6 health / 3 points, 13 health / 6 points
    trade = [{"to": "Researcher", "give": {"culture": 1}, "receive": {"science": 1}}]
    pols = [
        Scripted(  # Curator: culture 2 coins, finance 3
            health=4,
            invest={
                1: {"port_health": 4, "culture": 3},
                2: {"port_health": 4, "finance": 2},
                3: {"port_health": 4, "culture": 3},
            },
            offers={1: trade, 2: trade, 3: trade},
            buy={2: [marsball]},
        ),
        Scripted(health=4, invest={r: {"port_health": 4, "finance": 3} for r in (1, 2, 3)}),
        Scripted(
            health=4,
            invest={r: {"port_health": 4, "science": 2} for r in (1, 2, 3)},
            buy={2: [infamous]},
        ),
        Scripted(health=4, invest={r: {"port_health": 4, "science": 2} for r in (1, 2, 3)}),
        Scripted(
            health=4,
            invest={r: {"port_health": 4, "science": 3} for r in (1, 2, 3)},
            buy={1: [grant]},
        ),
    ]
    m = scripted_model(pols, n_rounds=3)
    rig_hand(m, 0, [marsball])
    rig_hand(m, 2, [infamous])
    rig_hand(m, 4, [grant])
    for seat, role in (
        (1, "Entrepreneur"),
        (3, "Politician"),
    ):  # three clean cards they never afford
        rig_hand(m, seat, [c.name for c in accomplishment_cards()[role][:3]])
    rig_events(m, ["hullBreach", "lifeAsUsual", "cropFailure", "marketsClosed"])
    for p in m.seats:  # keep hands at exactly these cards: empty the decks of the rigged seats
        if p.seat in (0, 2, 4):
            p.deck.cards.clear()

    # Round 1: 100 - 25 wear = 75; no events.  Curator: Culture 3, trades 1 Culture for 1 Science
    # -> Culture 2, Science 1.  Researcher: Science 3 -> 2, Culture 1; buys Grant Funk (dirty 6):
    # 3 points.  End: 75 + 20 - 6 = 89.
    m.step()
    assert m.health == 89
    assert m.player(0).resources == {
        "culture": 2,
        "finance": 0,
        "government": 0,
        "legacy": 0,
        "science": 1,
    }
    assert m.player(4).resources == {
        "culture": 1,
        "finance": 0,
        "government": 0,
        "legacy": 0,
        "science": 2,
    }
    assert [p.points for p in m.seats] == [0, 0, 0, 0, 3]
    assert m.player(4).dirty_taken == 1

    # Round 2: 89 - 25 = 64 < 65 -> two events: Hull Breach (-7) -> 57, Life as Usual.
    # Curator buys Finance 2 -> Culture 2, Finance 2, Science 1; trades -> Culture 1, Science 2;
    # buys Marsball (C1 F1 S2) -> Finance 1 left, 3 points.  Researcher: Science 2+3-1 = 4,
    # Culture 2.  Pioneer buys (In)famous (dirty 13): 6 points.  End: 57 + 20 - 13 = 64.
    m.step()
    assert [e.id for e in m.events_round] == ["hullBreach", "lifeAsUsual"]
    assert m.health == 64
    assert m.player(0).resources == {
        "culture": 0,
        "finance": 1,
        "government": 0,
        "legacy": 0,
        "science": 0,
    }
    assert m.player(4).resources == {
        "culture": 2,
        "finance": 0,
        "government": 0,
        "legacy": 0,
        "science": 4,
    }
    assert m.player(2).resources["science"] == 4
    assert [p.points for p in m.seats] == [3, 0, 6, 0, 3]

    # Round 3 (last): 64 - 25 = 39 -> two events: Crop Failure (-20) -> 19, Markets Closed (the
    # Curator's offer is never made).  End: 19 + 20 = 39 > 0: the port survives; the Pioneer wins.
    m.step()
    assert [e.id for e in m.events_round] == ["cropFailure", "marketsClosed"]
    assert m.health == 39
    assert m.player(0).resources["culture"] == 3 and m.player(4).resources["science"] == 7
    assert len(m.trades) == 2
    assert not m.running and m.survived
    assert m.winners == [2]
    assert [p.health_coins_total for p in m.seats] == [12] * 5
    final = m.final_metrics()
    assert final["health_coins_total"] == 60
    # dirty opportunities: Researcher round 1 (taken); Pioneer rounds 1 (declined) and 2 (taken)
    assert (m.player(4).dirty_taken, m.player(4).dirty_opportunities) == (1, 1)
    assert (m.player(2).dirty_taken, m.player(2).dirty_opportunities) == (1, 2)
    assert final["pct_dirty"] == pytest.approx(200 / 3)
    assert final["trades_accepted_fair"] == 2
    assert json.loads(final["players_json"])[2]["final_points"] == 6


# -- determinism, leadership, metrics, speed ----------------------------------


def _run(seed: int, **kw: Any) -> PortOfMarsModel:
    m = PortOfMarsModel(rng=seed, **kw)
    while m.running:
        m.step()
    return m


def test_same_seed_same_game_different_seed_different_game():
    a, b, c = _run(11), _run(11), _run(12)
    da = a.datacollector.get_model_vars_dataframe()
    db = b.datacollector.get_model_vars_dataframe()
    assert da.equals(db)
    assert a.final_metrics()["players_json"] == b.final_metrics()["players_json"]
    assert a.final_metrics()["players_json"] != c.final_metrics()["players_json"]


@pytest.mark.parametrize(
    ("variant", "leader_sees", "others_see"),
    [
        ("vanilla", ("Pioneer", True), (None, False)),
        ("announce", ("Pioneer", True), ("Pioneer", False)),
        ("unaware", (None, False), ("Pioneer", False)),
        ("none", (None, False), (None, False)),
    ],
)
def test_leadership_variants_only_change_what_players_are_told(variant, leader_sees, others_see):
    m = scripted_model(leadership=variant, leader_seat=2)
    lead = m.observe(2)["leadership"]
    other = m.observe(0)["leadership"]
    assert (lead["leader"], lead["you_are_leader"]) == leader_sees
    assert (other["leader"], other["you_are_leader"]) == others_see


def test_leadership_does_not_change_the_rules_for_players_who_ignore_it():
    def scripted_run(**kw: Any) -> PortOfMarsModel:
        m = scripted_model(rng=5, **kw)
        while m.running:
            m.step()
        return m

    a = scripted_run(leadership="none")
    b = scripted_run(leadership="announce", leader_seat=0)
    assert a.final_metrics()["port_health"] == b.final_metrics()["port_health"]


@pytest.mark.parametrize(
    ("variant", "leader_told", "others_told"),
    [("vanilla", True, False), ("announce", True, True), ("unaware", False, True)],
)
def test_rule_players_respond_to_what_they_are_told_about_leadership(
    variant, leader_told, others_told
):
    from mesa_dilemmas.dilemmas.port_of_mars.players import PortOfMarsRulePolicy

    m = PortOfMarsModel(rng=3, leadership=variant, leader_seat=1, meeting=True)
    m.time = 1
    m.phase_new_round()
    policy = PortOfMarsRulePolicy()
    policy.bind(m.player(1))
    plain = policy.params
    leader = policy.led(m.observe(1))
    assert (leader.health_share > plain.health_share) == leader_told
    policy.bind(m.player(0))
    plain = policy.params
    other = policy.led(m.observe(0))
    assert (other.conformity > plain.conformity) == (others_told and plain.conformity < 1)
    assert other.health_share == plain.health_share


def test_announced_leadership_changes_rule_play():
    runs = {
        v: [
            _run(s, leadership=v, leader_seat=4).final_metrics()["health_coins_total"]
            for s in range(4)
        ]
        for v in ("none", "announce")
    }
    assert runs["none"] != runs["announce"]


def test_observations_use_player_facing_names_and_hide_the_round_count():
    m = PortOfMarsModel(rng=2)
    m.step()
    obs = m.observe(0)
    for key in ("coins", "port_health", "resources", "events", "accomplishments", "round"):
        assert key in obs
    text = json.dumps(obs).lower()
    assert "time block" not in text and "system health" not in text and "influence" not in text
    assert "n_rounds" not in text and "total_rounds" not in text


def test_model_reporters_cover_the_dashboard_and_the_per_run_metrics():
    m = _run(4)
    df = m.datacollector.get_model_vars_dataframe()
    for col in (
        "port_health",
        "events_drawn",
        "health_coins_round",
        "points_Curator",
        "health_coins_Researcher",
        "dirty_cards_total",
        "trades_proposed",
        "survived",
        "collapse_round",
        "final_points_mean",
        "gini_points",
        "seat0_label",
        "players_json",
        "events_json",
    ):
        assert col in df.columns
    assert len(df) == m.round + 1  # the initial state and every round
    agents = m.datacollector.get_agent_vars_dataframe()
    assert {"player_points", "player_health_coins_total", "player_label"} <= set(agents.columns)
    assert not set(agents.columns) & set(df.columns)  # batch_run merges both into one row
    players = json.loads(df["players_json"].iloc[-1])
    assert sorted(p["label"] for p in players) == sorted(
        ["svo-15", "svo0", "svo15", "svo30", "svo60"]
    )
    assert sum(json.loads(df["events_json"].iloc[-1]).values()) == df["events_drawn_total"].iloc[-1]


def test_five_rule_players_play_a_game_well_under_a_second():
    start = time.perf_counter()
    for seed in range(5):
        _run(seed)
    assert (time.perf_counter() - start) / 5 < 0.5
