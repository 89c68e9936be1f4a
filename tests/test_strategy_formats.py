"""Strategy formats are found by entry point: the two built-in ones, and a third-party one that
loads and plays through the loader's own path (the sandbox worker's side, run in-process)."""

from __future__ import annotations

import inspect
import textwrap
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

import pytest

from mesa_dilemmas.dilemmas.binary.strategies import formats, published
from mesa_dilemmas.dilemmas.binary.strategies.base import GameDescription, Strategy
from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore, PlayerHistory
from mesa_dilemmas.dilemmas.binary.strategies.loader import (
    entry_class,
    set_description,
    set_from_description,
)


def test_the_built_in_formats_come_from_the_entry_point_group() -> None:
    names = {ep.name for ep in entry_points(group=formats.GROUP)}
    assert {"native", "published"} <= names
    found = formats.strategy_formats()
    assert found[0] is formats.NATIVE_FORMAT  # asked first: priority 0
    assert formats.format_named("published") is published.FORMAT
    order = [f.name for f in found]
    assert order.index("native") < order.index("published")
    assert formats.format_named("no such format") is None and formats.format_named(None) is None


# -- a third-party format: classes with a ``decide(self, history)`` method -----------------------


def _toy_classes(module: ModuleType) -> list[type]:
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and obj.__module__ == module.__name__ and "decide" in vars(obj)
    ]


def _toy_adapt(cls: type) -> type[Strategy]:
    class Toy(Strategy):
        def __init__(self, game: GameDescription) -> None:
            super().__init__(game)
            self.inner = cls()

        def act(self, history: PlayerHistory) -> str:
            return "C" if self.inner.decide(list(history.my_actions)) else "D"

    Toy.__name__ = Toy.__qualname__ = f"Toy_{cls.__name__}"
    return Toy


TOY = formats.StrategyFormat(
    name="toy",
    classes=_toy_classes,
    priority=50,  # before the published format (100), after the native one (0)
    attitude=lambda cls: "collective" if cls.__name__.startswith("Nice") else None,
    file_source=lambda path: f"toy:{path.stem}",
    adapt=_toy_adapt,
)

TOY_FILE = '''
class NiceOne:
    """Always cooperates."""

    def decide(self, history):
        return True


class Mean:
    def decide(self, history):
        return len(history) > 100


class Both:
    """Has a published-style __call__ too: the toy format, asked first, reads it."""

    def __call__(self, history):
        return None

    def decide(self, history):
        return len(history) % 2 == 0
'''


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch):
    registered = formats._registered()
    toy = EntryPoint(name="toy", value=f"{__name__}:TOY", group=formats.GROUP)
    monkeypatch.setattr(formats, "_registered", lambda: [*registered, toy])
    formats.strategy_formats.cache_clear()
    yield
    monkeypatch.undo()
    formats.strategy_formats.cache_clear()


def _toy_file(tmp_path: Path) -> Path:
    path = tmp_path / "toys.py"
    path.write_text(textwrap.dedent(TOY_FILE))
    return path


def test_without_the_format_only_what_another_format_reads_loads(tmp_path: Path) -> None:
    described = set_description(_toy_file(tmp_path))
    assert [(e["name"], e["interface"]) for e in described["entries"]] == [("Both", "published")]


def test_a_registered_third_party_format_loads_and_plays(tmp_path: Path, toy_registered) -> None:
    assert [f.name for f in formats.strategy_formats()][:3] == ["native", "toy", "published"]
    path = _toy_file(tmp_path)

    # the worker's side of loading, then the run's side that rebuilds the set from it
    described = set_description(path)
    s = set_from_description(described, path)
    assert [e.name for e in s] == ["NiceOne", "Mean", "Both"]
    assert all(e.interface == "toy" and not e.trusted for e in s)
    assert [e.attitude for e in s] == ["collective", None, None]
    assert {e.source for e in s} == {"toy:toys"}
    assert s.get("NiceOne").description == "Always cooperates."

    # a worker plays an entry through its format's adapter
    game = GameDescription("toy_game", 2, 3)
    store = HistoryStore(1, 2, 3)
    moves = {}
    for entry in s:
        cls, params = entry_class(entry.ref())
        assert issubclass(cls, Strategy) and cls.__name__ == f"Toy_{entry.name}"
        moves[entry.name] = cls.create(game, (1, (0,)), params).act(store.player(0, 0))
    assert moves == {"NiceOne": "C", "Mean": "D", "Both": "C"}


def test_an_unknown_interface_from_a_worker_is_read_as_native(tmp_path: Path) -> None:
    path = _toy_file(tmp_path)
    item = {"name": "NiceOne", "module": str(path.resolve()), "class": "NiceOne"}
    s = set_from_description({"entries": [{**item, "interface": "toy"}]}, path.resolve())
    assert s.get("NiceOne").interface == "native"  # "toy" is not registered here


def test_a_set_written_before_the_family_moved_still_loads(tmp_path: Path) -> None:
    """Generated strategy files import the base class from where the writing prompt said at the
    time (``mesa_dilemmas.agents.strategies`` before the C/D family had one home): a paid-for
    set on disk loads and plays as it did."""
    path = tmp_path / "written_earlier.py"
    path.write_text(
        textwrap.dedent(
            '''
            from mesa_dilemmas.agents.strategies import Strategy


            class Opener(Strategy):
                """Cooperates in the first round, then defects."""

                def __init__(self, game):
                    super().__init__(game)

                def act(self, history):
                    return "C" if history.is_first_round else "D"
            '''
        )
    )
    described = set_description(path)
    (entry,) = set_from_description(described, path)
    assert entry.name == "Opener" and entry.interface == "native"
    cls, params = entry_class(entry.ref())
    game = GameDescription("public_goods", 2, 3)
    assert cls.create(game, (1, (0,)), params).act(HistoryStore(1, 2, 3).player(0, 0)) == "C"
