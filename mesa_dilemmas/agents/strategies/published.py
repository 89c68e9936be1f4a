"""Strategy files in the published formats of paper 002's authors, loaded as they are.

The authors publish their LLM-written strategies as Python classes for their own
engine, one file per game and model (``strategies/<game>/<model>.py``) with the
natural-language descriptions beside it (``<model>_descriptions.py``:
``description_<ATTITUDE>_<i> = '''...'''`` for class ``Strategy_<ATTITUDE>_<i>``).
Two call formats exist; a file's format is read from what it imports (and, per
class, from the signature of ``__call__``):

* **paper era** (commit ``896462c``): ``__call__(self, state, history)`` --
  ``state.round_number`` (rounds completed), ``state.current_stock`` in a
  game with a stock (``CommonPoolState``); ``history`` is ``None`` in the first
  round, else ``my_actions`` (bool, rounds), ``my_payoffs``,
  ``opponent_actions`` (bool, rounds x n-1), ``opponent_payoffs``;
* **current** (the repository's HEAD): ``__call__(self, history)``, or
  ``__call__(self, history, current_stock)`` in a game with a stock; ``history``
  is never ``None``: ``my_actions``, ``my_payoffs``, ``opponent_cooperators``
  (count per round) and ``round_number``.

Semantics reproduced from the authors' engine: ``Action.C``/``Action.D`` have
the values 1/0 (``bool(Action.C)`` is True, ``sum`` of actions counts C); the
history is a new, mutable object every round whose arrays are read-only; an
answer that is not an ``Action`` or an exception is an error, answered with the
fallback of the strategy's attitude (C for collective attitudes, D for selfish
ones); after ``MAX_ERRORS`` errors in a match the next error is raised (the
authors' engine stops there; ours flags the strategy, which plays the
sandbox's default from then on).

The attitude of a class comes from its name: ``Strategy_<ATTITUDE>_<i>``, with
the authors' eight attitudes mapped to their two base ones: collective
(``COLLECTIVE``, ``PROSOCIAL``, ``ALTRUISTIC``, ``BENEVOLENT``) and exploitative
(``EXPLOITATIVE``, and the current files' ``SELFISH``, ``SELFINTERESTED``,
``OPPORTUNISTIC``, ``INDIVIDUALISTIC``).

Randomness: a published strategy draws from the global ``random`` and
``np.random``.  Each instance owns both states (seeded from the framework's
per-seat seed); a class whose source mentions ``random`` runs each call with its
own states swapped in, so a strategy that reseeds changes only its own stream.

The ``emergent_llm`` modules are stand-ins registered in the sandbox worker that
imports such a file (the authors' package is not needed).
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import inspect
import json
import os
import random as _random
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from mesa_dilemmas.agents.strategies.base import GameDescription, Strategy, _seed_int
from mesa_dilemmas.agents.strategies.history import PlayerHistory as OurHistory

SHIM = "emergent_llm"


def published_games() -> frozenset[str]:
    """Folder names that declare a game: the authors keep one folder of strategy files per game
    (``strategies/<game>/<model>.py``), named as the games are registered here (entry point
    group ``mesa_dilemmas.games``; read by name, no game is imported)."""
    from importlib.metadata import entry_points

    return frozenset(ep.name for ep in entry_points(group="mesa_dilemmas.games"))


#: errors a published strategy may make per match before the next one is raised
MAX_ERRORS = 2

COLLECTIVE_ATTITUDES = frozenset({"COLLECTIVE", "PROSOCIAL", "ALTRUISTIC", "BENEVOLENT"})
EXPLOITATIVE_ATTITUDES = frozenset(
    {"EXPLOITATIVE", "SELFISH", "SELFINTERESTED", "OPPORTUNISTIC", "INDIVIDUALISTIC"}
)
_CLASS_NAME = re.compile(r"^Strategy_([A-Z]+)_(\w+)$")


def attitude_of(class_name: str) -> str | None:
    """``Strategy_COLLECTIVE_7`` -> ``"collective"``; the selfish attitudes -> ``"exploitative"``."""
    m = _CLASS_NAME.match(class_name)
    if m is None:
        return None
    if m.group(1) in COLLECTIVE_ATTITUDES:
        return "collective"
    if m.group(1) in EXPLOITATIVE_ATTITUDES:
        return "exploitative"
    return m.group(1).lower()


class Action(enum.Enum):
    """C or D with the authors' values (D = 0, C = 1)."""

    D = 0
    C = 1

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def __bool__(self) -> bool:
        return bool(self.value)

    def flip(self) -> Action:
        return Action(1 - self.value)

    def __add__(self, other: Any) -> Any:
        if isinstance(other, (int, float)):
            return self.value + other
        return NotImplemented

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, (int, float)):
            return other + self.value
        return NotImplemented

    @classmethod
    def to_bool_array(cls, actions: list[Action]) -> np.ndarray:
        return np.array([a == cls.C for a in actions], dtype=np.bool_)

    @classmethod
    def from_bool_array(cls, bool_array: np.ndarray) -> Any:
        flat = [cls.C if v else cls.D for v in bool_array.flat]
        if bool_array.ndim == 1:
            return flat
        return np.array(flat, dtype=object).reshape(bool_array.shape).tolist()


class BaseStrategy:
    """What published strategies derive from."""

    def __init__(self, game_description: Any) -> None:
        self.game_description = game_description


@dataclass(frozen=True)
class GameState:
    round_number: int


@dataclass(frozen=True)
class CommonPoolState(GameState):
    current_stock: float


class PlayerHistory:
    """The authors' history: a plain mutable object (one per round); arrays read-only.

    Paper era: ``my_actions, my_payoffs, opponent_actions, opponent_payoffs``;
    current: ``my_actions, my_payoffs, opponent_cooperators`` and ``round_number``.
    """

    def __init__(self, my_actions: Any, my_payoffs: Any, *args: Any, **kwargs: Any) -> None:
        self.my_actions = my_actions
        self.my_payoffs = my_payoffs
        if len(args) == 2 or "opponent_payoffs" in kwargs:
            self.opponent_actions = args[0] if args else kwargs["opponent_actions"]
            self.opponent_payoffs = args[1] if args else kwargs["opponent_payoffs"]
        elif args or "opponent_cooperators" in kwargs:
            self.opponent_cooperators = args[0] if args else kwargs["opponent_cooperators"]
            self.round_number = len(my_actions)


@dataclass(frozen=True)
class GameDescriptionBase:
    n_players: int
    n_rounds: int


@dataclass(frozen=True)
class PublicGoodsDescription(GameDescriptionBase):
    k: float = 2.0


@dataclass(frozen=True)
class CollectiveRiskDescription(GameDescriptionBase):
    m: int = 2  # the authors' field order: m, then k
    k: float = 2.0


@dataclass(frozen=True)
class CommonPoolDescription(GameDescriptionBase):
    capacity: int = 20

    @classmethod
    def has_stock(cls) -> bool:
        return True


#: the published interface's game descriptions by class name (a game's rules name one)
DESCRIPTIONS: dict[str, type[GameDescriptionBase]] = {
    cls.__name__: cls
    for cls in (PublicGoodsDescription, CollectiveRiskDescription, CommonPoolDescription)
}


class _Attitude(enum.StrEnum):
    COLLECTIVE = "collective"
    PROSOCIAL = "prosocial"
    ALTRUISTIC = "altruistic"
    BENEVOLENT = "benevolent"
    EXPLOITATIVE = "exploitative"
    SELFISH = "selfish"
    SELFINTERESTED = "self-interested"
    OPPORTUNISTIC = "opportunistic"
    INDIVIDUALISTIC = "individualistic"


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
        "CommonPoolState": CommonPoolState,
        "PlayerHistory": PlayerHistory,
        "GameDescription": GameDescriptionBase,
        "Attitude": _Attitude,
        "COLLECTIVE": _Attitude.COLLECTIVE,
        "EXPLOITATIVE": _Attitude.EXPLOITATIVE,
        "SELFISH": _Attitude.SELFISH,
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


def call_format(cls: type) -> str:
    """``"paper"`` (``state, history``) or ``"current"`` (``history[, current_stock]``)."""
    try:
        params = list(inspect.signature(vars(cls)["__call__"]).parameters)[1:]
    except (KeyError, TypeError, ValueError):
        params = []
    if params and params[0] == "state":
        return "paper"
    if params and params[0] in ("history", "player_history", "hist"):
        return "current"
    module = sys.modules.get(cls.__module__)
    if module is not None and ("GameState" in vars(module) or "CommonPoolState" in vars(module)):
        return "paper"
    return "current" if len(params) != 2 or "stock" in params[1] else "paper"


def _uses_random(cls: type) -> bool:
    """Whether the class's source mentions ``random`` (its calls then run with its own random
    state swapped in).  The source of a top-level class is cut from its file's syntax tree,
    parsed once per file: ``inspect.getsource`` would parse a 2 MB file of a thousand classes
    again for every class (about a second each)."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if path and "." not in cls.__qualname__:
        try:
            found = _class_sources(path, os.stat(path).st_mtime_ns).get(cls.__qualname__)
        except OSError:
            found = None
        if found is not None:
            return "random" in found
    try:
        src = inspect.getsource(cls)
    except (OSError, TypeError):
        return True
    return "random" in src


@functools.lru_cache(maxsize=8)
def _class_sources(path: str, mtime_ns: int) -> dict[str, str]:
    """The source text of every top-level class of a file (``mtime_ns`` keys the cache)."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        tree = ast.parse(text)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out[node.name] = "".join(lines[first - 1 : node.end_lineno])
    return out


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


_EMPTY_B = np.zeros(0, dtype=np.bool_)
_EMPTY_F = np.zeros(0, dtype=np.float64)
_EMPTY_I = np.zeros(0, dtype=np.int_)
for _a in (_EMPTY_B, _EMPTY_F, _EMPTY_I):
    _a.flags.writeable = False


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class PublishedStrategy(Strategy):
    """Our interface around one published class (built by :func:`adapt`)."""

    inner: type = BaseStrategy
    fmt: str = "current"
    fallback: str = "D"
    swap_random: bool = True

    def __init__(self, game: GameDescription) -> None:
        super().__init__(game)
        self._stock = game.published_as == "CommonPoolDescription"
        self._desc = describe_game(game)
        self.errors = 0
        if self.swap_random:
            seed = _seed_int(self._seed)
            if seed is None:
                seed = _random.SystemRandom().getrandbits(64)
            self._py_state = self._py_start = _random.Random(seed).getstate()
            words = np.random.SeedSequence(seed).generate_state(4)
            self._np_state = self._np_start = np.random.RandomState(words).get_state()
            self.player = self._swapped(self.inner, self._desc)
        else:
            self.player = self.inner(self._desc)

    @property
    def used_rng(self) -> bool:
        """Whether this instance drew on (or reseeded) its global generators or its own."""
        if super().used_rng:
            return True
        if not self.swap_random:
            return False
        return (
            self._py_state != self._py_start
            or not np.array_equal(self._np_state[1], self._np_start[1])
            or self._np_state[2:] != self._np_start[2:]
        )

    def _swapped(self, fn: Any, *args: Any) -> Any:
        outer_py, outer_np = _random.getstate(), np.random.get_state()
        _random.setstate(self._py_state)
        np.random.set_state(self._np_state)
        try:
            return fn(*args)
        finally:
            self._py_state, self._np_state = _random.getstate(), np.random.get_state()
            _random.setstate(outer_py)
            np.random.set_state(outer_np)

    def _history(self, history: OurHistory) -> Any:
        t = history.round_number
        if self.fmt == "paper":
            if t == 0:
                return None
            me = history.me
            actions, payoffs = history.actions, history.payoffs
            mask = np.ones(actions.shape[1], dtype=bool)
            mask[me] = False
            return PlayerHistory(
                _ro(actions[:, me]),
                _ro(payoffs[:, me]),
                _ro(actions[:, mask]),
                _ro(payoffs[:, mask]),
            )
        if t == 0:
            return PlayerHistory(_EMPTY_B, _EMPTY_F, _EMPTY_I)
        my = np.array(history.my_actions, dtype=np.bool_)
        return PlayerHistory(
            _ro(my),
            _ro(np.array(history.my_payoffs, dtype=np.float64)),
            _ro(np.asarray(history.opponent_cooperators, dtype=np.int_).copy()),
        )

    def _current_stock(self, history: OurHistory) -> Any:
        # as the authors' engine: the capacity (an int) in round 0, then a numpy float
        if history.round_number == 0:
            return self._desc.capacity  # type: ignore[attr-defined]
        return np.float64(history.stock)

    def _call(self, history: OurHistory) -> Any:
        past = self._history(history)
        if self.fmt == "paper":
            t = history.round_number
            if self._stock:
                return self.player(CommonPoolState(t, self._current_stock(history)), past)
            return self.player(GameState(t), past)
        if self._stock:
            return self.player(past, self._current_stock(history))
        return self.player(past)

    def act(self, history: OurHistory) -> str:
        try:
            call = self._call
            answer = self._swapped(call, history) if self.swap_random else call(history)
            if not isinstance(answer, Action):
                raise TypeError(f"Strategy returned {type(answer).__name__} instead of Action")
        except Exception:
            self.errors += 1
            if self.errors > MAX_ERRORS:
                raise
            return self.fallback
        return "C" if answer is Action.C else "D"


def adapt(cls: type) -> type[Strategy]:
    """A :class:`Strategy` subclass that plays published class ``cls``."""
    attitude = attitude_of(cls.__name__)
    return type(
        f"Published_{cls.__name__}",
        (PublishedStrategy,),
        {
            "inner": cls,
            "name": cls.__name__,
            "fmt": call_format(cls),
            "fallback": "C" if attitude == "collective" else "D",
            "swap_random": _uses_random(cls),
            "__module__": __name__,
        },
    )


def _python_descriptions(path: Path) -> dict[str, str]:
    """``description_<X>_<i> = '''...'''`` assignments (read, never run) -> ``{Strategy_<X>_<i>: text}``."""
    try:
        with warnings.catch_warnings():  # the texts' backslashes ("\\*"): not our concern
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable descriptions file: {exc}") from None
    out = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            name = node.targets[0].id
            if name.startswith("description_"):
                out["Strategy_" + name[len("description_") :]] = node.value.value.strip()
    return out


def read_descriptions(code: Path) -> dict[str, str]:
    """Descriptions beside a published file, by class name (empty if there is no such file)."""
    py = code.with_name(f"{code.stem}_descriptions.py")
    if py.is_file() and not code.stem.endswith("_descriptions"):
        return _python_descriptions(py)
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
