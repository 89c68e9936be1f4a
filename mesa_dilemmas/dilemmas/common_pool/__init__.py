"""The n-player Common Pool Resource game of paper 002 (binary cooperate / defect on a shared, regrowing stock).

The game's public import path, as Mesa's examples have one::

    from mesa_dilemmas.dilemmas.common_pool import CommonPoolModel

The model is imported on first use of the name (the command line and the registry stay quick).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.common_pool.model import CommonPoolModel

__all__ = ["CommonPoolModel"]


def __getattr__(name: str) -> Any:
    if name == "CommonPoolModel":
        from mesa_dilemmas.dilemmas.common_pool.model import CommonPoolModel

        return CommonPoolModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
