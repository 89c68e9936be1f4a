"""The n-player Common Pool Resource game of paper 002 (binary cooperate / defect on a shared, regrowing stock).

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.common_pool import CommonPoolModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from typing import TYPE_CHECKING

from mesa_dilemmas.dilemmas.registry import lazy_model

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.common_pool.model import CommonPoolModel

__all__ = ["CommonPoolModel"]
__getattr__ = lazy_model(__name__, "CommonPoolModel")
