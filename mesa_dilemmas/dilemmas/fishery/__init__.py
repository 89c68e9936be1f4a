"""The fishery of paper 003: a shared lake with punishment, payoff-biased imitation and propose->vote norms.

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.fishery import FisheryModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from typing import TYPE_CHECKING

from mesa_dilemmas.dilemmas.registry import lazy_model

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

__all__ = ["FisheryModel"]
__getattr__ = lazy_model(__name__, "FisheryModel")
