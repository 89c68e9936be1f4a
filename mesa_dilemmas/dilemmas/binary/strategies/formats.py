"""Strategy formats: the kinds of strategy file the loader reads, found by entry point.

A *format* is one interface strategy code may be written in: ours (``native``:
:class:`~mesa_dilemmas.dilemmas.binary.strategies.base.Strategy` subclasses) or another one, such as the
file format of paper 002's authors (``published``: :mod:`.published`).  Each is a
:class:`StrategyFormat` registered under the entry point group ``mesa_dilemmas.strategy_formats``
(the entry's name is the format's :attr:`~StrategyFormat.name`), as an installed package
registers more::

    [project.entry-points."mesa_dilemmas.strategy_formats"]
    my_format = "my_pkg.strategies:FORMAT"

The loader (:mod:`.loader`) asks the formats **in order of** ``(priority, name)``, lowest
first (``native`` is 0, ``published`` 100):

* before importing any strategy file, every format's ``prepare()`` runs (shim modules the
  file may import: a file's format is only known once it is imported);
* a module's strategy classes are those of the first format whose ``classes(module)`` finds
  any; that format is the *interface* of the module's entries (``StrategyEntry.interface``
  is its name) and gives their ``attitude(cls)`` when neither the manifest nor the class
  names one;
* a single file that names no ``SOURCE`` / ``GAMES`` gets ``file_source(path)`` and
  ``folder_games(path.parent)`` of its format;
* descriptions beside a file: the first non-empty ``descriptions(path)`` of any format
  (whatever the format of the file's classes);
* the games a folder of strategy files (no manifest) was written for: the first non-empty
  ``folder_games(folder)`` of any format;
* in a sandbox worker, an entry's class from a file is played through its format's
  ``adapt(cls)`` (a :class:`Strategy` subclass that plays it; native: the class itself).

Nothing here names a game; a format that needs the registered games reads them from the
``mesa_dilemmas.games`` entry points by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from mesa_dilemmas.dilemmas.binary.strategies.base import Strategy

GROUP = "mesa_dilemmas.strategy_formats"
#: the name of our own interface (an entry of unknown interface is treated as one of it)
NATIVE = "native"


def _nothing() -> None:
    return None


def _none(_: Any) -> None:
    return None


def _no_games(_: Path) -> tuple[str, ...]:
    return ()


def _no_descriptions(_: Path) -> dict[str, str]:
    return {}


def _itself(cls: type) -> type[Strategy]:
    return cls


@dataclass(frozen=True)
class StrategyFormat:
    """One kind of strategy code the loader reads (every hook but ``classes`` is optional)."""

    #: the interface name its entries carry (``StrategyEntry.interface``); the entry point's name
    name: str
    #: the strategy classes a module defines in this format ([] = not this format)
    classes: Callable[[ModuleType], list[type]]
    #: formats are asked lowest first (ties: by name)
    priority: int = 100
    #: run before any strategy file is imported (register shim modules it may import)
    prepare: Callable[[], None] = _nothing
    #: the attitude of a class of this format when neither manifest nor class names one
    attitude: Callable[[type], str | None] = _none
    #: the source (who wrote it) of a single file that names none, from its path
    file_source: Callable[[Path], str | None] = _none
    #: the games a folder of strategy files was written for (() = not known)
    folder_games: Callable[[Path], tuple[str, ...]] = _no_games
    #: descriptions beside a file, by class name ({} = none)
    descriptions: Callable[[Path], dict[str, str]] = _no_descriptions
    #: the :class:`Strategy` subclass a sandbox worker plays for one of its classes
    adapt: Callable[[type], type[Strategy]] = _itself


def native_classes(module: ModuleType) -> list[type]:
    """:class:`Strategy` subclasses defined in ``module`` with an ``act`` of their own."""
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Strategy)
        and obj.__module__ == module.__name__
        and "act" in vars(obj)
    ]


#: our own interface: :class:`Strategy` subclasses, played as they are
NATIVE_FORMAT = StrategyFormat(name=NATIVE, classes=native_classes, priority=0)


def _registered() -> list[EntryPoint]:
    """The entry points of :data:`GROUP`."""
    return list(entry_points(group=GROUP))


@cache
def strategy_formats() -> tuple[StrategyFormat, ...]:
    """Every registered format, loaded, in the order the loader asks them: ``(priority, name)``."""
    found: dict[str, StrategyFormat] = {}
    for ep in _registered():
        fmt = ep.load()
        if fmt.name != ep.name:
            raise ValueError(
                f"strategy format entry point {ep.name!r} ({ep.value}) is a format named "
                f"{fmt.name!r}; the two names must agree"
            )
        found.setdefault(ep.name, fmt)
    if not found:
        raise RuntimeError(
            f"no strategy format is registered (entry point group {GROUP}): the package's "
            "metadata is missing; install it (pip install -e .) so its entry points are found"
        )
    return tuple(sorted(found.values(), key=lambda f: (f.priority, f.name)))


def format_named(name: Any) -> StrategyFormat | None:
    """The registered format called ``name`` (None: no such format)."""
    if not isinstance(name, str):
        return None
    return next((f for f in strategy_formats() if f.name == name), None)


def prepare_all() -> None:
    """Every format's preparation, before a strategy file is imported."""
    for fmt in strategy_formats():
        fmt.prepare()


def module_classes(module: ModuleType) -> tuple[StrategyFormat | None, list[type]]:
    """The format of a module and its strategy classes: the first format that finds any."""
    for fmt in strategy_formats():
        found = fmt.classes(module)
        if found:
            return fmt, found
    return None, []


def descriptions_beside(path: Path) -> dict[str, str]:
    """Descriptions beside the file ``path``: the first format that finds any."""
    for fmt in strategy_formats():
        found = fmt.descriptions(path)
        if found:
            return found
    return {}


def games_of_folder(folder: Path) -> tuple[str, ...]:
    """The games a folder of strategy files names: the first format that knows any."""
    for fmt in strategy_formats():
        found = fmt.folder_games(folder)
        if found:
            return tuple(found)
    return ()
