"""What a branch of a C/D game changes beside ``model.p`` (see ``mesa-dilemmas branch``).

The rules (payoffs, the stock's regrowth) are built from the parameters when a match starts;
a branch that changes a parameter mid-match rebuilds them from the new ``model.p`` and shows
the new description to the players who read it each round (language models).  Coded
strategies were told the game when the match started and keep that description.  The size of
the group, the length of the match and who plays are fixed for a match.
"""

from __future__ import annotations

from typing import Any

#: parameters a match reads only when it starts (a branch refuses to change them)
FIXED_PARAMS = ("n_players", "rounds", "strategies", "players")


def after_params(model: Any, changed: dict[str, Any]) -> None:
    """Rebuild the rules from ``model.p`` (its new values) for the rest of the match."""
    from mesa_dilemmas.dilemmas.binary.game import BinaryObservation

    rules = model.rules_of(model.p)
    model.rules = rules
    model.description = rules.description()
    model._observations = [BinaryObservation(model.description, v) for v in model.views]
