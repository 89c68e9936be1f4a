"""The Stag Hunt's own dashboard page, registered by entry point (``mesa_dilemmas.pages``).

It starts from the generic page of the game's parameter schema (its controls labelled with the
parameters' descriptions) and says what the game and its numbers are in its own words; a game can equally build a :class:`GamePage` from scratch (see the built-in games).
"""

from __future__ import annotations

from dataclasses import replace

from mesa_dilemmas.viz.dashboard.generic import page_for

#: what the game's reporters are, in words (the page's metrics, charts and captions say these,
#: not ``stag_share``)
WORDS = {
    "stag_share": "share of hunters who went for the stag",
    "mean_payoff": "mean payoff per hunter",
    "caught": "stags caught so far",
}

PAGE = replace(
    page_for("stag_hunt", words=WORDS),
    title="Stag Hunt (example game)",
    summary=(
        "Hunters choose the stag, which feeds only if enough of them go for it, or a hare, "
        "which is safe. Trust rises after a catch and falls after a failed hunt."
    ),
    order=90,
)
