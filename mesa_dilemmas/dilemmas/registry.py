"""The open registry of games and of every place a game plugs into.

A game is a Mesa model class, named in a scenario by a registered name (``game = "my_game"``)
or by its import path (``game = "my_pkg.stag_hunt:StagHuntModel"``). Names come from entry
points, and so does everything a game brings besides its model; this package registers its own
games in ``pyproject.toml`` exactly as an installed package registers more:

====================================  ==============================================================
group                                 value
====================================  ==============================================================
``mesa_dilemmas.games``               the Mesa model class
``mesa_dilemmas.pages``               a dashboard page (``GamePage``, or ``ComparePage``)
``mesa_dilemmas.figures``             a figure: ``fn(run_dir, runs, steps, scenario) -> [paths]``
``mesa_dilemmas.analyses``            ``register(subparsers)`` for ``mesa-dilemmas analyse NAME``
``mesa_dilemmas.commands``            ``register(subparsers)`` for ``mesa-dilemmas NAME``
``mesa_dilemmas.claims``              a module with ``EXPERIMENTS`` and ``CLAIMS`` for ``reproduce``
``mesa_dilemmas.policies``            a policy factory a ``[population]`` table names
``mesa_dilemmas.experiments``         a module of experiments a scenario names by the module's
                                      registered name (``experiment = "NAME:Class"``)
``mesa_dilemmas.reproduce_sources``   another input ``reproduce`` judges claims on: a
                                      ``ReproduceSource`` (its own option, e.g. ``--strategies``)
====================================  ==============================================================

Bundled scenarios are the ``scenarios/*.toml`` files beside a registered game's model module.
Nothing outside a game's own package names the game, and nothing outside a family's package
(a folder under ``dilemmas/`` its games share, such as the C/D games' ``binary``) names the
family or its experiments.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.plugins import load_object

if TYPE_CHECKING:  # Mesa is imported when a game is loaded, not to list names (a fast CLI)
    import mesa


def lazy_model(package: str, name: str) -> Any:
    """A game package's module ``__getattr__`` giving its model class ``name`` from its
    ``model`` module on first use, so ``from my_game import MyGameModel`` works (the game's
    public import path) and importing the package stays cheap::

        __all__ = ["MyGameModel"]
        __getattr__ = lazy_model(__name__, "MyGameModel")
    """
    from importlib import import_module

    def __getattr__(attr: str) -> Any:  # noqa: N807 - a module's __getattr__
        if attr == name:
            return getattr(import_module(f"{package}.model"), name)
        raise AttributeError(f"module {package!r} has no attribute {attr!r}")

    return __getattr__


ENTRY_POINT_GROUP = "mesa_dilemmas.games"
PAGES = "mesa_dilemmas.pages"
FIGURES = "mesa_dilemmas.figures"
ANALYSES = "mesa_dilemmas.analyses"
COMMANDS = "mesa_dilemmas.commands"
CLAIMS = "mesa_dilemmas.claims"
EXPERIMENTS = "mesa_dilemmas.experiments"
REPRODUCE_SOURCES = "mesa_dilemmas.reproduce_sources"


class UnknownGame(KeyError):
    """A game name that is neither registered nor an importable ``module:Class``."""

    def __str__(self) -> str:
        return str(self.args[0])


@cache
def extensions(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group`` by name, sorted (loaded only when used)."""
    return dict(sorted((ep.name, ep) for ep in entry_points(group=group)))


def experiment_path(name: str) -> str:
    """A scenario's ``experiment`` with a registered module name (``"self_play:Class"``, entry
    point group ``mesa_dilemmas.experiments``: name -> module) spelled out as the module's
    path; any other name as it is."""
    if not isinstance(name, str):
        return name
    module, sep, attr = name.partition(":")
    entry = extensions(EXPERIMENTS).get(module)
    return name if entry is None else f"{entry.value}{sep}{attr}"


def load_extensions(group: str) -> dict[str, Any]:
    """Every object registered in ``group``, loaded: name -> object."""
    return {name: ep.load() for name, ep in extensions(group).items()}


@cache
def games() -> dict[str, str]:
    """Every registered game: name -> ``"module:ModelClass"`` (imported only when used)."""
    found = {name: ep.value for name, ep in extensions(ENTRY_POINT_GROUP).items()}
    if not found:
        raise UnknownGame(
            "no game is registered: the package's metadata is missing; install it "
            "(pip install -e .) so its entry points are found"
        )
    return found


def is_game_path(name: str) -> bool:
    return ":" in name


def game_model(name: str) -> type[mesa.Model]:
    """The model class of a registered game name or of a ``"package.module:Class"`` path."""
    path = games().get(name)
    if path is None:
        if not is_game_path(name):
            raise UnknownGame(
                f"unknown game {name!r}; allowed: {', '.join(games())} or 'package.module:ModelClass'"
            )
        path = name
    try:
        cls = load_object(path)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UnknownGame(f"cannot load game {name!r}: {exc}") from None
    import mesa

    if not (isinstance(cls, type) and issubclass(cls, mesa.Model)):
        raise UnknownGame(f"game {name!r} is not a mesa.Model subclass")
    return cls


def game_name(model_cls: type[mesa.Model]) -> str:
    """The short name a game reports in results (its ``GAME``, else the class name)."""
    return getattr(model_cls, "GAME", "") or model_cls.__name__


def games_like(base: type) -> list[str]:
    """The registered games whose model is a subclass of ``base`` (e.g. every C/D game)."""
    out = []
    for name in games():
        try:
            cls = game_model(name)
        except UnknownGame:
            continue
        if issubclass(cls, base):
            out.append(name)
    return out
