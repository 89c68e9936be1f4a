"""An n-player Stag Hunt, registered with mesa-dilemmas by entry point.

Its public import path, as every game has one: ``from stag_hunt import StagHuntModel``.
"""

from stag_hunt.model import StagHuntModel

__all__ = ["StagHuntModel"]
