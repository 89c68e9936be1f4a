"""The n-player Collective Risk dilemma of paper 002 (binary cooperate / defect against a risk threshold).

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.collective_risk import CollectiveRiskModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from typing import TYPE_CHECKING

from mesa_dilemmas.dilemmas.registry import lazy_model

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.collective_risk.model import CollectiveRiskModel

__all__ = ["CollectiveRiskModel"]
__getattr__ = lazy_model(__name__, "CollectiveRiskModel")
