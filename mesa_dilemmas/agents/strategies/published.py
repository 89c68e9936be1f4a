"""Strategy files in the published format of paper 002's authors, loaded as they are.

The authors publish their LLM-written strategies as Python classes for their
own engine.  The paper describes that interface only in words (a class built
from a game description, called each round with the player's history and, in
a game with a resource stock, the current stock, answering C or D); the interface
assumed here, and provided to such files, is:

.. code-block:: python

    from emergent_llm.players import BaseStrategy
    from emergent_llm.games import PublicGoodsDescription        # or CollectiveRiskDescription,
    from emergent_llm.common import Action, C, D, PlayerHistory, GameState  # CommonPoolDescription

    class Strategy_COLLECTIVE_7(BaseStrategy):
        def __init__(self, game_description: PublicGoodsDescription):
            self.game_description = game_description

        def __call__(self, state: GameState, history: None | PlayerHistory) -> Action:
            if history is None:             # first round
                return Action.C
            ...

* ``game_description``: ``n_players``, ``n_rounds`` and the game's parameters,
  as the fields of the description class the game's rules name
  (``BinaryGame.PUBLISHED_AS``, one of :data:`DESCRIPTIONS`): ``k``; ``k`` and
  ``m`` (reward and threshold); ``capacity`` -- filled from the game's own
  parameters of those names;
* ``state``: ``round_number`` (rounds completed) and, in a game with a resource
  stock, ``current_stock``;
* ``history``: ``None`` in the first round, else ``my_actions`` (bool,
  rounds played), ``my_payoffs``, ``opponent_actions`` (bool, rounds x n-1),
  ``opponent_payoffs`` (rounds x n-1) -- numpy arrays, True = cooperated;
* the answer: ``Action.C`` / ``Action.D`` (or the strings ``"C"``/``"D"``).

The ``emergent_llm`` modules are stand-ins registered in the sandbox worker
that imports such a file (the authors' package is not needed).  A file's
classes are found by shape: classes defined in the file with a ``__call__``
method.  Their natural-language descriptions come from the class docstrings or
from a descriptions file beside the code: ``<file stem>.descriptions.json``,
``<file stem>_descriptions.json`` or ``descriptions.json``, holding either an
object ``{class name: description}`` or a list of objects with ``name`` (or
``class``/``strategy``) and ``description``.  Global ``random`` / ``np.random``
are fine: the sandbox seeds them per batch of matches.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from mesa_dilemmas.agents.strategies.base import GameDescription, Strategy
from mesa_dilemmas.agents.strategies.history import PlayerHistory as OurHistory

SHIM = "emergent_llm"


class Action(enum.Enum):
    """C or D, as the published files use it."""

    C = "C"
    D = "D"

    def __str__(self) -> str:
        return self.value


class BaseStrategy:
    """What published strategies derive from."""

    def __init__(self, game_description: Any) -> None:
        self.game_description = game_description


@dataclass(frozen=True)
class GameState:
    round_number: int
    current_stock: float | None = None


@dataclass(frozen=True)
class PlayerHistory:
    my_actions: np.ndarray
    my_payoffs: np.ndarray
    opponent_actions: np.ndarray
    opponent_payoffs: np.ndarray


@dataclass(frozen=True)
class GameDescriptionBase:
    n_players: int
    n_rounds: int


@dataclass(frozen=True)
class PublicGoodsDescription(GameDescriptionBase):
    k: float = 2.0


@dataclass(frozen=True)
class CollectiveRiskDescription(GameDescriptionBase):
    k: float = 2.0
    m: int = 2


@dataclass(frozen=True)
class CommonPoolDescription(GameDescriptionBase):
    capacity: float = 20.0


#: the published interface's game descriptions by class name (a game's rules name one)
DESCRIPTIONS: dict[str, type[GameDescriptionBase]] = {
    cls.__name__: cls
    for cls in (PublicGoodsDescription, CollectiveRiskDescription, CommonPoolDescription)
}


def install_shims() -> None:
    """Register the ``emergent_llm`` stand-in modules (in a sandbox worker, before imports)."""
    if SHIM in sys.modules:
        return
    names = {
        "Action": Action,
        "C": Action.C,
        "D": Action.D,
        "BaseStrategy": BaseStrategy,
        "GameState": GameState,
        "PlayerHistory": PlayerHistory,
        "GameDescription": GameDescriptionBase,
        **DESCRIPTIONS,
    }
    for mod_name in (SHIM, *(f"{SHIM}.{m}" for m in ("players", "games", "common"))):
        module = ModuleType(mod_name)
        module.__dict__.update(names)
        module.__path__ = []  # a package, so `from emergent_llm.games import ...` resolves
        sys.modules[mod_name] = module


def published_classes(module: ModuleType) -> list[type]:
    """Classes defined in ``module`` that look like published strategies (have ``__call__``)."""
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and not issubclass(obj, Strategy)
        and "__call__" in vars(obj)
    ]


def describe_game(game: GameDescription) -> GameDescriptionBase:
    """Our game description -> the published interface's: the class the game names
    (``game.published_as``), its fields filled from the game's parameters of the same names
    (the field's default where the game has none)."""
    cls = DESCRIPTIONS.get(game.published_as, GameDescriptionBase)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in ("n_players", "n_rounds"):
            continue
        value = getattr(game, f.name, None)
        if value is None:
            value = game.extra.get(f.name)
        values[f.name] = f.default if value is None else type(f.default)(value)
    return cls(game.n_players, game.n_rounds, **values)


class PublishedStrategy(Strategy):
    """Our interface around one published class (built by :func:`adapt`)."""

    inner: type = BaseStrategy

    def __init__(self, game: GameDescription) -> None:
        super().__init__(game)
        self.player = self.inner(describe_game(game))

    def act(self, history: OurHistory) -> str:
        t = history.round_number
        state = GameState(t, history.stock)
        if t == 0:
            past = None
        else:
            me = history.me
            actions, payoffs = history.actions, history.payoffs
            past = PlayerHistory(
                my_actions=history.my_actions,
                my_payoffs=history.my_payoffs,
                opponent_actions=np.delete(actions, me, axis=1),
                opponent_payoffs=np.delete(payoffs, me, axis=1),
            )
        answer = self.player(state, past)
        if isinstance(answer, Action):
            return answer.value
        return answer if isinstance(answer, str) else str(answer)


def adapt(cls: type) -> type[Strategy]:
    """A :class:`Strategy` subclass that plays published class ``cls``."""
    return type(
        f"Published_{cls.__name__}",
        (PublishedStrategy,),
        {"inner": cls, "name": cls.__name__, "__module__": __name__},
    )


def read_descriptions(code: Path) -> dict[str, str]:
    """Descriptions beside a published file, by class name (empty if there is no such file)."""
    for candidate in (
        code.with_name(f"{code.stem}.descriptions.json"),
        code.with_name(f"{code.stem}_descriptions.json"),
        code.with_name("descriptions.json"),
    ):
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text())
            except (OSError, ValueError) as exc:
                raise ValueError(f"{candidate}: not valid JSON: {exc}") from None
            if isinstance(data, dict):
                return {str(k): str(v) for k, v in data.items()}
            out = {}
            for item in data if isinstance(data, list) else []:
                if isinstance(item, dict):
                    key = item.get("name") or item.get("class") or item.get("strategy")
                    if key is not None and "description" in item:
                        out[str(key)] = str(item["description"])
            return out
    return {}
