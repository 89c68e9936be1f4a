"""An n-player Stag Hunt, registered with mesa-dilemmas by entry point.

Its public import path, as every game has one: ``from stag_hunt import StagHuntModel`` (loaded
on first use, so listing the command line's commands does not import Mesa).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mesa_dilemmas.dilemmas.registry import lazy_model

if TYPE_CHECKING:
    from stag_hunt.model import StagHuntModel

__all__ = ["StagHuntModel"]
__getattr__ = lazy_model(__name__, "StagHuntModel")
