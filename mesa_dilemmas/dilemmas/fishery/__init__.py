"""The fishery of paper 003: a shared lake with punishment, payoff-biased imitation and propose->vote norms.

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.fishery import FisheryModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

__all__ = ["FisheryModel"]


def __getattr__(name: str) -> Any:
    if name == "FisheryModel":
        from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

        return FisheryModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
