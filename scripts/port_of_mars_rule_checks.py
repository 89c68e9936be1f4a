"""The two rule-player findings of docs/port_of_mars.md, measured (about a minute on 2 cores).

    python scripts/port_of_mars_rule_checks.py [games]

For the SVO group with and without the meeting: % dirty (purchase phases with a harmful
accomplishment taken / with one in hand), wins, accomplishments per game and points in
surviving games per angle -- with the rule as it is, and with pledges removed from the
projection the dirty rule uses (``--no-pledges``), to test whether pledges cause the rise.
"""

from __future__ import annotations

import sys

import numpy as np

from mesa_dilemmas.dilemmas.port_of_mars import players
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel


def ignore_pledges_in_dirty_rule() -> None:
    expected = players.PortOfMarsRulePolicy.others_expected

    def dirty_ok(self, obs, card, booked):  # the rule's dirty_ok with pledges removed
        pp = self.params
        own = obs.get("port_health_coins_this_round", 0)
        others = expected(self, {**obs, "meeting_pledges": None})
        after = players.next_wear_projection(obs, own, others) - booked - card["port_health_cost"]
        if after < pp.dirty_floor:
            return False
        return bool(self.rng.random() < players._sigmoid(pp.dirty_bias + 0.04 * (after - 40.0)))

    players.PortOfMarsRulePolicy.dirty_ok = dirty_ok


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    games = int(args[0]) if args else 200
    if "--no-pledges" in sys.argv:
        ignore_pledges_in_dirty_rule()
    for meeting in (True, False):
        taken: dict[str, int] = {}
        opps: dict[str, int] = {}
        wins: dict[str, int] = {}
        cards: dict[str, int] = {}
        points: dict[str, list[int]] = {}
        survived = 0
        for i in range(games):
            m = PortOfMarsModel(rng=2044 + i, meeting=meeting)
            while m.running:
                m.step()
            survived += m.survived
            for p in m.seats:
                taken[p.label] = taken.get(p.label, 0) + p.dirty_taken
                opps[p.label] = opps.get(p.label, 0) + p.dirty_opportunities
                wins[p.label] = wins.get(p.label, 0) + (p.seat in m.winners)
                cards[p.label] = cards.get(p.label, 0) + p.cards_bought
                if m.survived:
                    points.setdefault(p.label, []).append(p.points)
        print(f"meeting={meeting}: survival {survived / games:.0%}")
        for label in sorted(taken, key=lambda s: float(s[3:])):
            print(
                f"  {label:7s} dirty {100 * taken[label] / max(1, opps[label]):5.1f}%"
                f"  wins {100 * wins[label] / games:5.1f}%  cards/game {cards[label] / games:4.2f}"
                f"  points (surviving) {np.mean(points.get(label, [0])):5.2f}"
            )


if __name__ == "__main__":
    main()
