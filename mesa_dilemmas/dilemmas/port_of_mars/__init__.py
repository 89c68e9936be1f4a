"""Port of Mars (paper 001): five players keep a Mars habitat alive while they race for points.

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.port_of_mars import PortOfMarsModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from typing import TYPE_CHECKING

from mesa_dilemmas.dilemmas.registry import lazy_model

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

__all__ = ["PortOfMarsModel"]
__getattr__ = lazy_model(__name__, "PortOfMarsModel")
