"""Port of Mars (paper 001): five players keep a Mars habitat alive while they race for points.

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.port_of_mars import PortOfMarsModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

__all__ = ["PortOfMarsModel"]


def __getattr__(name: str) -> Any:
    if name == "PortOfMarsModel":
        from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

        return PortOfMarsModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
