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
``np.random``.  Each instance owns both generators (seeded from the framework's
per-seat seed, built when it first draws); a class whose source mentions ``random``
runs each call with the module functions its code names pointing at its own
generators (or, if it took those functions at import time, with its states copied
into the global generators and back: :func:`random_plan`), so a strategy that
reseeds changes only its own stream.

Speed: the history objects of a round are built for all seats of a batch at once
(:class:`_Round`: a few numpy copies per round, then per call a new object and three
row views), so a call costs about a microsecond beyond the strategy's own code.

The ``emergent_llm`` modules are stand-ins registered in the sandbox worker that
imports such a file (the authors' package is not needed).

The loader reads these files through :data:`FORMAT`, registered as the strategy format
``published`` (entry point group ``mesa_dilemmas.strategy_formats``, :mod:`.formats`).
"""

from __future__ import annotations

import ast
import contextlib
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
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies.base import GameDescription, Strategy, _seed_int
from mesa_dilemmas.dilemmas.binary.strategies.formats import StrategyFormat
from mesa_dilemmas.dilemmas.binary.strategies.history import PlayerHistory as OurHistory

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


class _OpponentPayoffs:
    """``opponent_payoffs`` of a paper-era history built by our engine, on first use (few
    strategies read it, and it is the largest array): the values, dtype and shape the authors'
    engine gives, read-only; then an ordinary attribute of the object."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        try:
            source, j = obj._lazy
        except AttributeError:
            raise AttributeError(
                "'PlayerHistory' object has no attribute 'opponent_payoffs'"
            ) from None
        value = obj.__dict__["opponent_payoffs"] = source.opponent_payoffs(j)
        return value


class PlayerHistory:
    """The authors' history: a plain mutable object (one per round); arrays read-only.

    Paper era: ``my_actions, my_payoffs, opponent_actions, opponent_payoffs``;
    current: ``my_actions, my_payoffs, opponent_cooperators`` and ``round_number``.
    """

    __slots__ = ("__dict__", "__weakref__", "_lazy")
    opponent_payoffs = _OpponentPayoffs()

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


def _class_source(cls: type) -> str | None:
    """The source of a class: for a top-level class cut from its file's syntax tree, parsed
    once per file (``inspect.getsource`` would parse a 2 MB file of a thousand classes again
    for every class, about a second each); None when there is no source."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if path and "." not in cls.__qualname__:
        try:
            found = _class_sources(path, os.stat(path).st_mtime_ns).get(cls.__qualname__)
        except OSError:
            found = None
        if found is not None:
            return found
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):
        return None


def _uses_random(cls: type) -> bool:
    """Whether the class's source mentions ``random`` (its calls then run with its own random
    state swapped in); True when the source cannot be read."""
    src = _class_source(cls)
    return src is None or "random" in src


@functools.lru_cache(maxsize=8)
def _class_sources(path: str, mtime_ns: int) -> dict[str, str]:
    """The source text of every top-level class of a file, and the text outside them
    (``mtime_ns`` keys the cache)."""
    from mesa_dilemmas.dilemmas.binary.strategies.loader import read_limited

    text = read_limited(Path(path), "source file")
    lines = text.splitlines(keepends=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text)
    except (RecursionError, MemoryError):
        raise ValueError(f"{path}: the source is too deeply nested to parse") from None
    out = {}
    outside = list(lines)  # the file's text outside its classes, under _OUTSIDE
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out[node.name] = "".join(lines[first - 1 : node.end_lineno])
            outside[first - 1 : node.end_lineno] = [""] * (node.end_lineno - first + 1)
    out[_OUTSIDE] = "".join(outside)
    return out


#: the key of a file's text outside its classes in :func:`_class_sources` (no class's name)
_OUTSIDE = "<outside classes>"


def describe_game(game: GameDescription) -> GameDescriptionBase:
    """Our game description -> the published interface's: the class the game names
    (``game.published_as``), its fields filled from the game's parameters of the same names
    (the field's default where the game has none).  One (frozen) object for all the players
    of a batch, as the authors' engine gives one to all the players of a game."""
    last = _described[0]
    if last is not None and last[0] is game:
        return last[1]
    out = _describe_game(game)
    _described[0] = (game, out)
    return out


#: the last description made, with our description it was made from
_described: list[Any] = [None]


def _describe_game(game: GameDescription) -> GameDescriptionBase:
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


# shared by every first-round history: views of read-only arrays (they cannot be made writeable)
_EMPTY_B = np.zeros(0, dtype=np.bool_)
_EMPTY_F = np.zeros(0, dtype=np.float64)
_EMPTY_I = np.zeros(0, dtype=np.int_)
for _a in (_EMPTY_B, _EMPTY_F, _EMPTY_I):
    _a.flags.writeable = False
_EMPTY_B, _EMPTY_F, _EMPTY_I = _EMPTY_B[:], _EMPTY_F[:], _EMPTY_I[:]


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _ro_all(a: np.ndarray) -> np.ndarray:
    """``a`` and every array it views read-only: views of it cannot be made writeable."""
    b: Any = a
    while isinstance(b, np.ndarray):
        b.flags.writeable = False
        b = b.base
    return a


_new = object.__new__


@functools.lru_cache(maxsize=16)
def _others(n: int) -> np.ndarray:
    """(n, n-1): row i lists the seats other than i, in order."""
    return np.array([[j for j in range(n) if j != i] for i in range(n)], dtype=np.intp).reshape(
        n, n - 1
    )


class _Round:
    """The history of every match of a store after ``t`` rounds as the authors' engine hands
    it out, built once for all seats (in a few numpy operations) and indexed per seat.

    Each seat gets views (rows) of arrays built here, read-only down to the arrays that own
    the data: a strategy cannot make them writeable, so no seat can change what another seat
    sees (through ``.base`` it can read the whole round's history, as through the views the
    authors' engine hands out).  The round's game state (paper era) or stock (current) is one object for every seat of a
    match, as in the authors' engine.  ``key`` is the store's ``last_opp`` list, a new object
    whenever the store records, seeks or is rewritten: a ``_Round`` never serves another
    history.
    """

    __slots__ = ("key", "t", "_ap", "current", "paper", "stocks", "states", "__weakref__")

    def __init__(self, store: Any) -> None:
        self.key = store.last_opp
        self.t = t = store.round
        self._ap: tuple[np.ndarray, np.ndarray] | None = None
        self.current: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.paper: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.stocks = None if store.stock is None else list(store.stock[:, t])  # numpy floats
        self.states: list[Any] = [None] * store.batch

    def _arrays(self, store: Any) -> tuple[np.ndarray, np.ndarray]:
        """(batch, n, t) copies of actions and payoffs: seat j's own row is ``[m, i]``."""
        if self._ap is None:
            t = self.t
            a = _ro_all(store.actions[:, :, :t].copy())
            p = _ro_all(store.payoffs[:, :, :t].copy())
            self._ap = (a, p)
        return self._ap

    def build_current(self, store: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows by flat seat: own actions, own payoffs, opponents' cooperators (``np.int_``)."""
        a, p = self._arrays(store)
        rows = a.shape[0] * a.shape[1]
        o = _ro_all(store.opp_coop[:, :, : self.t].astype(np.int_).reshape(rows, self.t))
        self.current = (a.reshape(rows, self.t), p.reshape(rows, self.t), o)
        return self.current

    def build_paper(self, store: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows by flat seat: own actions, own payoffs, (t, n-1) opponents' actions."""
        a, p = self._arrays(store)
        b, n, t = a.shape
        # (b, n, t, n-1): seat i's opponents' columns, in seat order with i's removed
        oa = _ro_all(np.ascontiguousarray(a[:, _others(n)].transpose(0, 1, 3, 2)))
        self.paper = (a.reshape(b * n, t), p.reshape(b * n, t), oa.reshape(b * n, t, n - 1))
        return self.paper

    def opponent_payoffs(self, j: int) -> np.ndarray:
        """(t, n-1) opponents' payoffs of flat seat ``j`` (built when a strategy reads it)."""
        _, p = self._ap  # type: ignore[misc]  # built with the round's other arrays
        m, i = divmod(j, p.shape[1])
        return _ro_all(np.ascontiguousarray(p[m, _others(p.shape[1])[i]].T))[:]  # a view

    def state(self, match: int, with_stock: bool) -> Any:
        """The paper era's game state of ``match`` this round (one object for all its seats)."""
        state = self.states[match]
        if state is None:
            t = self.t
            state = CommonPoolState(t, self.stocks[match]) if with_stock else GameState(t)  # type: ignore[index]
            self.states[match] = state
        return state


#: the current ``_Round`` of each live store: id -> (weak reference to the store, round).  One
#: per store, so a round is built once however the calls of several stores interleave (a
#: replay on a private copy of a match between two seats of the batch); an entry goes with its
#: store (nothing is kept alive, nothing added to the store)
_rounds: dict[int, tuple[Any, _Round]] = {}


#: the last round asked for: (its key, a weak reference to it) -- the seats of a round are
#: asked one after another, so this answers most calls without the lookup above
_last: list[Any] = [None, None]


def _round_of(store: Any) -> _Round:
    last = _last
    if last[0] is store.last_opp:
        r = last[1]()
        if r is not None:
            return r
    key = id(store)
    got = _rounds.get(key)
    if got is not None and got[0]() is store and got[1].key is store.last_opp:
        r = got[1]
    else:
        r = _Round(store)
        _rounds[key] = (weakref.ref(store, functools.partial(_forget, key)), r)
    last[0], last[1] = r.key, weakref.ref(r)
    return r


def _forget(key: int, ref: Any) -> None:
    got = _rounds.get(key)
    if got is not None and got[0] is ref:
        del _rounds[key]


# -- per-instance global random state ----------------------------------------------------------
#
# A published strategy draws from the global ``random`` and ``np.random`` functions, which are
# bound methods of two hidden generators (``random._inst``, ``np.random.mtrand._rand``).  Each
# instance owns two generators of its own (built when it first draws); during its calls the
# module functions its code names are replaced by its own generators' methods (a few dict
# entries, about a microsecond), and put back after.  A class that took the functions
# elsewhere (``from random import random`` at module level, a class attribute), or reaches the
# hidden generators another way (scipy's ``random_state=None``), gets the full swap instead:
# its states are copied into the hidden generators and back (about 100 µs a call).

_PY_GLOBAL = _random.__dict__
_NP_GLOBAL = np.random.__dict__
_PY_NAMES = frozenset(
    k for k, v in vars(_random).items() if getattr(v, "__self__", None) is _random._inst
)
_NP_BOUND = frozenset(
    k for k, v in vars(np.random).items() if getattr(v, "__self__", None) is np.random.mtrand._rand
)
#: numpy.random's module functions that act on the hidden generator -> our generator's method
_NP_FUNCS = {
    name: target
    for name, target in (
        ("seed", "seed"),
        ("ranf", "random_sample"),
        ("sample", "random_sample"),
        ("get_bit_generator", None),
    )
    if name in _NP_GLOBAL
}
_NP_NAMES = _NP_BOUND | frozenset(_NP_FUNCS)
#: names that reach the hidden generators other than through the module functions
_STRICT_TOKENS = frozenset(
    {"scipy", "random_state", "mtrand", "_rand", "_inst", "set_bit_generator", "__dict__"}
)
_TOKEN = re.compile(r"[A-Za-z_]\w*")

#: the instance whose call is running (the stubs below draw from its generators)
_running: list[Any] = [None]


def _py_stub(name: str) -> Any:
    def stub(*args: Any, **kwargs: Any) -> Any:
        inst = _running[0]
        rng = _random._inst if inst is None else inst._materialise_py()
        return getattr(rng, name)(*args, **kwargs)

    stub.__name__ = stub.__qualname__ = name
    return stub


def _np_stub(name: str) -> Any:
    def stub(*args: Any, **kwargs: Any) -> Any:
        inst = _running[0]
        if inst is None:
            return _NP_ORIGINAL[name](*args, **kwargs)
        inst._materialise_np()
        return _NP_GLOBAL[name](*args, **kwargs)  # now the instance's own method

    stub.__name__ = stub.__qualname__ = name
    return stub


_NP_ORIGINAL = {k: _NP_GLOBAL[k] for k in _NP_NAMES}
_PY_STUBS = {k: _py_stub(k) for k in _PY_NAMES}
_NP_STUBS = {k: _np_stub(k) for k in _NP_NAMES}


def _np_methods(rs: np.random.RandomState, names: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for name in names:
        if name in _NP_FUNCS:
            target = _NP_FUNCS[name]
            if target is None:  # get_bit_generator

                def getter(rs: Any = rs) -> Any:
                    return rs._bit_generator

                out[name] = getter
            else:
                out[name] = getattr(rs, target)
        else:
            out[name] = getattr(rs, name)
    return out


def _captured(value: Any) -> bool:
    """Whether ``value`` is one of the global generators' functions, taken at import time."""
    try:
        owner = getattr(value, "__self__", None)
    except Exception:  # noqa: BLE001 - an object with a hostile __getattr__: not one of them
        return False
    if owner is _random._inst or owner is np.random.mtrand._rand:
        return True
    return any(value is f for f in _NP_ORIGINAL.values())


def _takes_global_functions(value: Any) -> bool:
    return _captured(value) or any(
        _captured(d) for d in (getattr(value, "__defaults__", None) or ())
    )


def random_plan(cls: type) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """How ``cls``'s calls get their own random state: ``("", (), ())`` when its source never
    mentions ``random`` nor a global generator's function taken at import time;
    ``("fast", python names, numpy names)`` to swap those module functions during its calls;
    ``("strict", (), ())`` to swap the generators' whole states (a class that took the
    functions at import time, reaches the hidden generators otherwise, or has no source)."""
    src = _class_source(cls)
    if src is None:
        return "strict", (), ()
    module = sys.modules.get(cls.__module__)
    names = set(_TOKEN.findall(src))
    scopes = [vars(k) for k in cls.__mro__ if k is not object]
    if module is not None:
        scopes.append({k: v for k, v in vars(module).items() if k in names})
    if any(_takes_global_functions(v) for scope in scopes for v in list(scope.values())):
        return "strict", (), ()
    if "random" not in src:
        return "", (), ()
    around = ""  # the file outside its classes: helpers and imports the class may use
    path = getattr(module, "__file__", None)
    if path and "." not in cls.__qualname__:
        with contextlib.suppress(OSError):
            around = _class_sources(path, os.stat(path).st_mtime_ns).get(_OUTSIDE, "")
    tokens = names | set(_TOKEN.findall(around))
    if tokens & _STRICT_TOKENS:
        return "strict", (), ()
    return "fast", tuple(sorted(tokens & _PY_NAMES)), tuple(sorted(tokens & _NP_NAMES))


class PublishedStrategy(Strategy):
    """Our interface around one published class (built by :func:`adapt`)."""

    inner: type = BaseStrategy
    fmt: str = "current"
    fallback: str = "D"
    #: "" (no random state of its own), "fast" or "strict": see :func:`random_plan`
    swap_random: str = "strict"
    _py_names: tuple[str, ...] = ()
    _np_names: tuple[str, ...] = ()
    _py_stubs: dict[str, Any] = {}
    _np_stubs: dict[str, Any] = {}

    def __init__(self, game: GameDescription) -> None:
        super().__init__(game)
        self._stock = game.published_as == "CommonPoolDescription"
        self._desc = describe_game(game)
        self.errors = 0
        if self._stock:
            self._capacity = self._desc.capacity  # type: ignore[attr-defined]
        self._py: _random.Random | None = None
        self._np: np.random.RandomState | None = None
        if self.swap_random:
            seed = _seed_int(self._seed)
            if seed is None:
                seed = _random.SystemRandom().getrandbits(64)
            self._rng_seed = seed
            # what goes into the module functions during its calls: stubs until it draws
            self._py_in, self._np_in = self._py_stubs, self._np_stubs
            self.player = self._with_rng(self.inner, self._desc)
            self._call = functools.partial(self._with_rng, self.player)
        else:
            self.player = self._call = self.inner(self._desc)

    # -- random state ---------------------------------------------------------------------
    def _new_py(self) -> _random.Random:
        if self._py is None:
            self._py = _random.Random(self._rng_seed)
        return self._py

    def _new_np(self) -> np.random.RandomState:
        if self._np is None:
            words = np.random.SeedSequence(self._rng_seed).generate_state(4)
            self._np = np.random.RandomState(words)
        return self._np

    def _materialise_py(self) -> _random.Random:
        """Its own Python generator, now in the module functions for the rest of the call."""
        rng = self._new_py()
        self._py_in = {k: getattr(rng, k) for k in self._py_names}
        _PY_GLOBAL.update(self._py_in)
        return rng

    def _materialise_np(self) -> np.random.RandomState:
        rs = self._new_np()
        self._np_in = _np_methods(rs, self._np_names)
        _NP_GLOBAL.update(self._np_in)
        return rs

    def _with_rng(self, fn: Any, *args: Any) -> Any:
        if self.swap_random == "strict":
            return self._with_states(fn, *args)
        py, npy = _PY_GLOBAL, _NP_GLOBAL
        py_in, np_in = self._py_in, self._np_in
        py_out = {k: py[k] for k in py_in}
        np_out = {k: npy[k] for k in np_in}
        prev = _running[0]
        _running[0] = self
        py.update(py_in)
        npy.update(np_in)
        try:
            return fn(*args)
        finally:
            py.update(py_out)
            npy.update(np_out)
            _running[0] = prev

    def _with_states(self, fn: Any, *args: Any) -> Any:
        g_py, g_np = _random._inst, np.random.mtrand._rand
        outer_py, outer_np = g_py.getstate(), g_np.get_state()
        g_py.setstate(self._new_py().getstate())
        g_np.set_state(self._new_np().get_state())
        try:
            return fn(*args)
        finally:
            self._py.setstate(g_py.getstate())  # type: ignore[union-attr]
            self._np.set_state(g_np.get_state())  # type: ignore[union-attr]
            g_py.setstate(outer_py)
            g_np.set_state(outer_np)

    @property
    def used_rng(self) -> bool:
        """Whether this instance drew on (or reseeded) its global generators or its own."""
        if super().used_rng:
            return True
        if not self.swap_random:
            return False
        if (
            self._py is not None
            and self._py.getstate() != _random.Random(self._rng_seed).getstate()
        ):
            return True
        if self._np is not None:
            now = self._np.get_state()
            words = np.random.SeedSequence(self._rng_seed).generate_state(4)
            start = np.random.RandomState(words).get_state()
            return not np.array_equal(now[1], start[1]) or now[2:] != start[2:]
        return False

    # -- the history the authors' engine hands out -------------------------------------------
    def _history(self, history: OurHistory) -> Any:
        """The authors' history object for ``history`` (any object with our history's API)."""
        t = history.round_number
        if self.fmt == "paper":
            if t == 0:
                return None
            me = history.me
            actions, payoffs = history.actions, history.payoffs
            mask = np.ones(actions.shape[1], dtype=bool)
            mask[me] = False
            return PlayerHistory(
                _ro(actions[:, me].copy()),
                _ro(payoffs[:, me].copy()),
                _ro(actions[:, mask]),
                _ro(payoffs[:, mask]),
            )
        if t == 0:
            return PlayerHistory(_EMPTY_B, _EMPTY_F, _EMPTY_I)
        return PlayerHistory(
            _ro(np.array(history.my_actions, dtype=np.bool_)),
            _ro(np.array(history.my_payoffs, dtype=np.float64)),
            _ro(np.array(history.opponent_cooperators, dtype=np.int_)),
        )

    def _current_stock(self, history: OurHistory) -> Any:
        # as the authors' engine: the capacity (an int) in round 0, then a numpy float
        if history.round_number == 0:
            return self._capacity
        return np.float64(history.stock)

    def _args(self, history: OurHistory) -> tuple:
        """The arguments of the published ``__call__`` for ``history``."""
        if type(history) is not OurHistory:  # another view: built from its public API
            past = self._history(history)
            if self.fmt == "paper":
                t = history.round_number
                if self._stock:
                    return (CommonPoolState(t, self._current_stock(history)), past)
                return (GameState(t), past)
            return (past, self._current_stock(history)) if self._stock else (past,)
        store = history._store
        t = store.round
        if self.fmt == "paper":
            if t == 0:
                state = CommonPoolState(0, self._capacity) if self._stock else GameState(0)
                return (state, None)
            r = _round_of(store)
            a, p, oa = r.paper or r.build_paper(store)
            j = history._j
            past = _new(PlayerHistory)
            past.my_actions, past.my_payoffs, past.opponent_actions = a[j], p[j], oa[j]
            past._lazy = (r, j)
            return (r.state(history.match, self._stock), past)
        past = _new(PlayerHistory)
        if t == 0:
            past.my_actions, past.my_payoffs, past.opponent_cooperators = _EMPTY
            past.round_number = 0
            return (past, self._capacity) if self._stock else (past,)
        r = _round_of(store)
        a, p, o = r.current or r.build_current(store)
        j = history._j
        past.my_actions, past.my_payoffs, past.opponent_cooperators = a[j], p[j], o[j]
        past.round_number = t
        return (past, r.stocks[history.match]) if self._stock else (past,)

    def act(self, history: OurHistory) -> str:
        try:
            answer = self._call(*self._args(history))
            if answer is Action.C:
                return "C"
            if answer is Action.D:
                return "D"
            raise TypeError(f"Strategy returned {type(answer).__name__} instead of Action")
        except Exception:
            return self._error()

    def _error(self) -> str:
        self.errors += 1
        if self.errors > MAX_ERRORS:
            raise  # noqa: PLE0704 - re-raises the error being handled by the caller
        return self.fallback

    # :meth:`act` for the commonest case, unrolled (a call costs a microsecond or two in all):
    # a class that needs no random state of its own, on our history
    def _act_current(self, history: OurHistory) -> str:
        try:
            if type(history) is not OurHistory:
                answer = self._call(*self._args(history))
            else:
                store = history._store
                past = _new(PlayerHistory)
                t = store.round
                if t:
                    r = _round_of(store)
                    a, p, o = r.current or r.build_current(store)
                    j = history._j
                    past.my_actions, past.my_payoffs, past.opponent_cooperators = a[j], p[j], o[j]
                    past.round_number = t
                    if self._stock:
                        answer = self._call(past, r.stocks[history.match])
                    else:
                        answer = self._call(past)
                else:
                    past.my_actions, past.my_payoffs, past.opponent_cooperators = _EMPTY
                    past.round_number = 0
                    stock = self._capacity if self._stock else None
                    answer = self._call(past) if stock is None else self._call(past, stock)
            if answer is Action.C:
                return "C"
            if answer is Action.D:
                return "D"
            raise TypeError(f"Strategy returned {type(answer).__name__} instead of Action")
        except Exception:
            return self._error()

    def _act_paper(self, history: OurHistory) -> str:
        try:
            if type(history) is not OurHistory:
                answer = self._call(*self._args(history))
            else:
                store = history._store
                t = store.round
                if t:
                    r = _round_of(store)
                    a, p, oa = r.paper or r.build_paper(store)
                    j = history._j
                    past = _new(PlayerHistory)
                    past.my_actions, past.my_payoffs, past.opponent_actions = a[j], p[j], oa[j]
                    past._lazy = (r, j)
                    answer = self._call(r.state(history.match, self._stock), past)
                elif self._stock:
                    answer = self._call(CommonPoolState(0, self._capacity), None)
                else:
                    answer = self._call(GameState(0), None)
            if answer is Action.C:
                return "C"
            if answer is Action.D:
                return "D"
            raise TypeError(f"Strategy returned {type(answer).__name__} instead of Action")
        except Exception:
            return self._error()


_EMPTY = (_EMPTY_B, _EMPTY_F, _EMPTY_I)
_FAST_ACT = {"current": PublishedStrategy._act_current, "paper": PublishedStrategy._act_paper}


def adapt(cls: type) -> type[Strategy]:
    """A :class:`Strategy` subclass that plays published class ``cls``."""
    attitude = attitude_of(cls.__name__)
    swap, py_names, np_names = random_plan(cls)
    fmt = call_format(cls)
    return type(
        f"Published_{cls.__name__}",
        (PublishedStrategy,),
        {
            "inner": cls,
            "name": cls.__name__,
            "fmt": fmt,
            "fallback": "C" if attitude == "collective" else "D",
            "swap_random": swap,
            "_py_names": py_names,
            "_np_names": np_names,
            "_py_stubs": {k: _PY_STUBS[k] for k in py_names},
            "_np_stubs": {k: _NP_STUBS[k] for k in np_names},
            "__module__": __name__,
            "act": _FAST_ACT[fmt],
        },
    )


def _read_limited(path: Path, what: str) -> str:
    from mesa_dilemmas.dilemmas.binary.strategies.loader import read_limited

    return read_limited(path, what)


def _python_descriptions(path: Path) -> dict[str, str]:
    """``description_<X>_<i> = '''...'''`` assignments (read, never run) -> ``{Strategy_<X>_<i>: text}``."""
    try:
        with warnings.catch_warnings():  # the texts' backslashes ("\\*"): not our concern
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(_read_limited(path, "descriptions file"))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable descriptions file: {exc}") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"{path}: the descriptions file nests too deeply to parse") from None
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
                data = json.loads(_read_limited(candidate, "descriptions file"))
            except (OSError, ValueError) as exc:
                raise ValueError(f"{candidate}: not valid JSON: {exc}") from None
            except (RecursionError, MemoryError):
                raise ValueError(f"{candidate}: the JSON nests too deeply to read") from None
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


def _folder_games(folder: Path) -> tuple[str, ...]:
    """The game a folder of published files is named for (``strategies/<game>/``), if registered."""
    return (folder.name,) if folder.name in published_games() else ()


def _attitude(cls: type) -> str | None:
    return attitude_of(cls.__name__)


def _file_source(path: Path) -> str:
    """A published file is one model's strategies: ``strategies/<game>/<model>.py``."""
    return path.stem


#: the published format, as the loader reads it (asked after the native format)
FORMAT = StrategyFormat(
    name="published",
    classes=published_classes,
    priority=100,
    prepare=install_shims,
    attitude=_attitude,
    file_source=_file_source,
    folder_games=_folder_games,
    descriptions=read_descriptions,
    adapt=adapt,
)
