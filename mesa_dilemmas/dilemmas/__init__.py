"""The games, one Mesa ``Model`` subclass each, found through an open registry.

``game_model("<registered name>")`` or ``game_model("my_pkg.module:MyModel")``; see
:mod:`mesa_dilemmas.dilemmas.registry`.
"""

from __future__ import annotations

from mesa_dilemmas.dilemmas.registry import UnknownGame, game_model, games
from mesa_dilemmas.plugins import load_object

__all__ = ["UnknownGame", "game_model", "games", "load_object"]
