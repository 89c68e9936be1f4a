"""Reading the harvest cap (in fish) that a text policy states: ``norms.stated_cap``.

The sentences are written for this test in the styles LLM villagers produce (paper 003, Table 4
style: effort targets, hedged ranges, conditions) and the canonical rule-villager wording."""

from __future__ import annotations

import pytest

from mesa_dilemmas.dilemmas.fishery.norms import cap_sentence, stated_cap

# (policy, the per-villager cap in fish it states, or None when it states none / is ambiguous)
POLICIES: list[tuple[str, float | None]] = [
    # plain fish caps
    ("Each villager should harvest at most 6.00 fish per day.", 6.0),
    ("Each of the 10 villagers should catch at most 6 fish.", 6.0),
    ("No villager should catch more than 5 fish per day.", 5.0),
    ("Everyone may take up to 7 fish a day.", 7.0),
    ("Limit every villager's catch to 4 fish per day.", 4.0),
    ("Each villager catches 4.5 fish daily and no more.", 4.5),
    ("Fish no more than 3 per day so the lake can recover.", 3.0),
    ("We agree on a quota of 8 fish per villager.", 8.0),
    ("Keep your catch under 5 fish every day.", 5.0),
    ("Catch fewer than 6 fish each day.", 6.0),
    ("Harvest only five fish per day.", 5.0),
    ("All 10 villagers should limit themselves to 3 fish each, for the next 5 rounds.", 3.0),
    ("Each person should catch 4-6 fish per day.", 6.0),
    ("Catch between 3 and 5 fish per day, never more.", 5.0),
    ("Each villager may catch up to 7 fish until the lake recovers to 250 fish.", 7.0),
    ("Catch at most 5 fish, so that the lake keeps at least 200 fish.", 5.0),
    ("Nobody should harvest more than 8 fish a day; anyone who does gets punished.", 8.0),
    ("Eat your 2 fish, but catch no more than 4 fish per day.", 4.0),
    ("Catch no more than 3 per day.", 3.0),
    ("Everyone: max 4 fish/day.", 4.0),
    ("Each villager should catch 5 fish; total catch must stay below 50 fish.", 5.0),
    # effort targets, not fish -> no fish cap stated
    ("We all fish at full effort 1.0 so that every household earns the same each round.", None),
    ("Lower the effort further, down to 0.6, so the lake can recover.", None),
    ("Keep efforts at 0.8 or lower to sustain positive outcomes for all 10 villagers.", None),
    ("Everyone should fish with an effort of 0.6-0.65 to let the lake regrow.", None),
    ("Keep effort at 1.0.", None),
    ("Reduce fishing effort by 20% to protect the stock.", None),
    ("Catch fish at 0.5 effort.", None),
    ("Villagers should fish at a rate of 0.5 or less.", None),
    ("Take 1/3 of what you used to.", None),
    # numbers that are not a per-villager harvest cap
    ("Each villager should eat less than 100 fish.", None),
    ("Stop fishing when the lake falls below 50 fish.", None),
    ("Keep the lake above 150 fish at all times.", None),
    ("Keep the total catch under 40 fish per day for the whole village.", None),
    ("Catch 2 fewer fish than yesterday.", None),
    ("Reduce your catch by 2 fish each day.", None),
    ("Fish sustainably and share the lake fairly.", None),
    ("No shared policy has been agreed yet.", None),
    # several different caps: ambiguous
    ("Harvest at most 3 or 4 fish per day.", None),
    ("Catch 6 fish per day, but only 3 fish per day if the lake is low.", None),
]


@pytest.mark.parametrize(("policy", "cap"), POLICIES)
def test_stated_cap_reads_the_per_villager_harvest_limit(policy, cap):
    assert stated_cap(policy) == cap


def test_the_table_is_large_and_mixed():
    assert len(POLICIES) >= 30
    assert sum(c is None for _, c in POLICIES) >= 10


@pytest.mark.parametrize("cap", [0.0, 2.5, 6.0, 13.75])
def test_the_canonical_sentence_round_trips(cap):
    assert stated_cap(cap_sentence(cap)) == pytest.approx(cap)
