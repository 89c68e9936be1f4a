"""The n-player Public Goods game of paper 002 (binary cooperate / defect).

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.public_goods import PublicGoodsModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from typing import TYPE_CHECKING

from mesa_dilemmas.dilemmas.registry import lazy_model

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.public_goods.model import PublicGoodsModel

__all__ = ["PublicGoodsModel"]
__getattr__ = lazy_model(__name__, "PublicGoodsModel")
