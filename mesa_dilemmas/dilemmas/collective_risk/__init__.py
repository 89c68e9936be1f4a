"""The n-player Collective Risk dilemma of paper 002 (binary cooperate / defect against a risk threshold).

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.collective_risk import CollectiveRiskModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.collective_risk.model import CollectiveRiskModel

__all__ = ["CollectiveRiskModel"]


def __getattr__(name: str) -> Any:
    if name == "CollectiveRiskModel":
        from mesa_dilemmas.dilemmas.collective_risk.model import CollectiveRiskModel

        return CollectiveRiskModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
