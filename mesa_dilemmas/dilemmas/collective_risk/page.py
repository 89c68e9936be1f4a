"""The Collective Risk page of the dashboard."""

from __future__ import annotations

from typing import Any

from mesa_dilemmas.dilemmas.binary.page import MAX_PER_STRATEGY, binary_page
from mesa_dilemmas.dilemmas.collective_risk.model import CollectiveRiskModel
from mesa_dilemmas.viz.dashboard import controls as c


def controls() -> dict[str, Any]:
    """The game's own parameters on its page (rounds and the strategy counts are shared)."""
    cls = CollectiveRiskModel
    return {
        "k": c.slider(cls, "k", low=0.1, high=8.0, step=0.1, label="benefit k"),
        "m": c.int_slider("threshold m (0: half the group)", 0, 0, 4 * MAX_PER_STRATEGY),
    }


PAGE = binary_page(
    "collective_risk",
    "Collective Risk",
    "Everyone gains k only if at least m players contribute this round.",
    controls,
    extra_strategies=("threshold",),
    order=30,
)
