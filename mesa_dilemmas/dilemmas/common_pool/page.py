"""The Common Pool page of the dashboard."""

from __future__ import annotations

from typing import Any

from mesa_dilemmas.dilemmas.binary.page import binary_page
from mesa_dilemmas.dilemmas.common_pool.model import CommonPoolModel
from mesa_dilemmas.viz.dashboard import controls as c


def controls() -> dict[str, Any]:
    """The game's own parameters on its page (rounds and the strategy counts are shared)."""
    cls = CommonPoolModel
    return {
        "capacity": c.int_slider("capacity K (0: 4 n)", 0, 0, 400, 4),
        "growth": c.slider(cls, "growth", low=0.1, step=0.1, label="regrowth g"),
    }


PAGE = binary_page(
    "common_pool",
    "Common Pool",
    "Cooperators take S/(2n), defectors S/n of a stock that regrows logistically; one all-defect round empties it.",
    controls,
    extra_strategies=(),
    order=40,
)
