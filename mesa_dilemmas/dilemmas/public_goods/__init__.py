"""The n-player Public Goods game of paper 002 (binary cooperate / defect).

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.public_goods import PublicGoodsModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.public_goods.model import PublicGoodsModel

__all__ = ["PublicGoodsModel"]


def __getattr__(name: str) -> Any:
    if name == "PublicGoodsModel":
        from mesa_dilemmas.dilemmas.public_goods.model import PublicGoodsModel

        return PublicGoodsModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
