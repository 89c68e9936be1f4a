"""The Public Goods page of the dashboard."""

from __future__ import annotations

from typing import Any

from mesa_dilemmas.dilemmas.binary.page import binary_page
from mesa_dilemmas.dilemmas.public_goods.model import PublicGoodsModel
from mesa_dilemmas.viz.dashboard import controls as c


def controls() -> dict[str, Any]:
    """The game's own parameters on its page (rounds and the strategy counts are shared)."""
    cls = PublicGoodsModel
    return {"k": c.slider(cls, "k", low=1.1, high=8.0, step=0.1, label="multiplier k (1 < k < n)")}


PAGE = binary_page(
    "public_goods",
    "Public Goods",
    "Contribute to a pot multiplied by k and shared by all: cooperation pays the group, defection pays the defector.",
    controls,
    extra_strategies=(),
    order=20,
)
