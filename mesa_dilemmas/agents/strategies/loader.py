"""Strategy sets: files on disk, loadable by name.

A *strategy set* is what one source (an LLM, a person, the reference library)
wrote for one attitude: a list of strategies, each with its natural-language
description, its code and metadata.  On disk it is either

* a **directory** holding ``strategy_set.toml`` and any number of ``*.py``
  modules::

      name = "gpt-5-mini_exploitative_public_goods"
      source = "gpt-5-mini"            # who wrote the strategies
      attitude = "exploitative"        # "collective" | "exploitative" | free text
      games = ["public_goods"]         # games the set was written for ([] = any)
      description = "..."
      modules = ["strategies.py"]      # default: every *.py except __init__.py

      [[strategies]]                   # optional, repeatable
      ref = "tft(0.5)"                 # a reference strategy by spec, or
      class = "Strategy017"            # a class from the modules
      name = "..."                     # optional overrides
      description = "..."
      params = { q = 0.7 }

  Without ``class`` entries every :class:`Strategy` subclass defined in the
  modules is included, in definition order; ``ref`` entries are added to them.

* a **single module** ``something.py`` whose :class:`Strategy` subclasses form
  the set, with module constants ``NAME``, ``SOURCE``, ``ATTITUDE``, ``GAMES``,
  ``DESCRIPTION`` for the set's metadata.

Each class may set ``name``, ``description`` (else its docstring),
``attitude``, ``source`` and ``games``; unset ones inherit the set's values.
Sets are looked up by name among the bundled sets (``sets/`` next to this
file) and the directories listed in ``MESA_DILEMMAS_STRATEGY_PATH``
(``os.pathsep``-separated), or given by path.  The LLM pipeline that writes
sets only has to emit this layout.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from mesa_dilemmas.agents.strategies.base import GameDescription, Strategy
from mesa_dilemmas.agents.strategies.reference import reference_label, reference_params

MANIFEST = "strategy_set.toml"
ENV_PATH = "MESA_DILEMMAS_STRATEGY_PATH"
BUNDLED_DIR = Path(__file__).parent / "sets"


@dataclass(frozen=True)
class StrategyEntry:
    """One strategy of a set: a class, its parameters and its metadata."""

    name: str
    cls: type[Strategy]
    params: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    attitude: str | None = None
    source: str | None = None
    games: tuple[str, ...] = ()
    set_name: str | None = None
    spec: str | None = None

    def create(
        self, game: GameDescription, seed: tuple[int, tuple[int, ...]] | None = None
    ) -> Strategy:
        """A fresh instance for one match (``seed`` = (entropy, spawn key) of its generator)."""
        return self.cls.create(game, seed, self.params)

    @property
    def label(self) -> str:
        """Short display label (the paper's for reference strategies)."""
        return reference_label(self.spec) if self.spec else self.name

    @classmethod
    def reference(cls, spec: str, **meta: Any) -> StrategyEntry:
        """An entry for a reference strategy spec such as ``"cc(2)"``."""
        strategy_cls, params = reference_params(spec)
        return cls(
            name=meta.pop("name", None) or spec.replace(" ", ""),
            cls=strategy_cls,
            params=params,
            description=meta.pop("description", None) or (strategy_cls.description or ""),
            source=meta.pop("source", None) or "reference",
            spec=spec.replace(" ", ""),
            **meta,
        )


@dataclass
class StrategySet:
    """A named, ordered collection of strategies with the set's metadata."""

    name: str
    entries: list[StrategyEntry]
    source: str | None = None
    attitude: str | None = None
    games: tuple[str, ...] = ()
    description: str = ""
    path: Path | None = None

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[StrategyEntry]:
        return iter(self.entries)

    def __getitem__(self, index: int) -> StrategyEntry:
        return self.entries[index]

    def get(self, name: str) -> StrategyEntry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(f"strategy set {self.name!r} has no strategy {name!r}")

    def check_game(self, game: str) -> None:
        """Raise if the set declares games and ``game`` is not one of them."""
        if self.games and game not in self.games:
            raise ValueError(
                f"strategy set {self.name!r} was written for {', '.join(self.games)}, not {game!r}"
            )

    def metadata(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "attitude": self.attitude,
            "games": list(self.games),
            "description": self.description,
            "size": len(self.entries),
            "path": None if self.path is None else str(self.path),
        }


# -- loading -------------------------------------------------------------


def _import_path(path: Path) -> ModuleType:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"mesa_dilemmas._strategy_sets.m{digest}_{path.stem}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import strategy module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[module_name]
        raise
    return module


def _module_classes(module: ModuleType) -> list[type[Strategy]]:
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Strategy)
        and obj.__module__ == module.__name__
        and "act" in vars(obj)
    ]


def _entry_from_class(
    cls: type[Strategy], set_meta: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> StrategyEntry:
    o = dict(overrides or {})
    doc = inspect.getdoc(cls) or ""
    return StrategyEntry(
        name=o.get("name") or cls.name or cls.__name__,
        cls=cls,
        params=dict(o.get("params") or {}),
        description=o.get("description") or cls.description or doc,
        attitude=o.get("attitude") or cls.attitude or set_meta.get("attitude"),
        source=o.get("source") or cls.source or set_meta.get("source"),
        games=tuple(o.get("games") or cls.games or set_meta.get("games") or ()),
        set_name=set_meta.get("name"),
    )


def _check_unique(name: str, entries: Sequence[StrategyEntry]) -> None:
    seen: set[str] = set()
    for e in entries:
        if e.name in seen:
            raise ValueError(f"strategy set {name!r}: duplicate strategy name {e.name!r}")
        seen.add(e.name)


def _load_directory(path: Path) -> StrategySet:
    manifest_path = path / MANIFEST
    try:
        meta = tomllib.loads(manifest_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{manifest_path}: not valid TOML: {exc}") from None
    allowed = {"name", "source", "attitude", "games", "description", "modules", "strategies"}
    unknown = set(meta) - allowed
    if unknown:
        raise ValueError(
            f"{manifest_path}: unknown key {sorted(unknown)[0]!r}; allowed: {', '.join(sorted(allowed))}"
        )
    meta.setdefault("name", path.name)
    meta["games"] = tuple(meta.get("games", ()))
    module_files = (
        [path / m for m in meta["modules"]]
        if "modules" in meta
        else sorted(p for p in path.glob("*.py") if p.name != "__init__.py")
    )
    classes: dict[str, type[Strategy]] = {}
    for file in module_files:
        for cls in _module_classes(_import_path(file)):
            classes.setdefault(cls.__name__, cls)
    listed = meta.get("strategies", [])
    entries: list[StrategyEntry] = []
    if not any("class" in item for item in listed):
        entries.extend(_entry_from_class(cls, meta) for cls in classes.values())
    for i, item in enumerate(listed):
        extra = set(item) - {
            "ref",
            "class",
            "name",
            "description",
            "params",
            "attitude",
            "source",
            "games",
        }
        if extra or ("ref" in item) == ("class" in item):
            raise ValueError(
                f"{manifest_path}: strategies[{i}] needs exactly one of 'ref' or 'class' (and name/description/params)"
            )
        if "ref" in item:
            entry = StrategyEntry.reference(
                item["ref"],
                name=item.get("name"),
                description=item.get("description"),
                attitude=item.get("attitude", meta.get("attitude")),
                source=item.get("source", meta.get("source")),
                games=tuple(item.get("games", meta["games"])),
                set_name=meta["name"],
            )
            if item.get("params"):
                entry = StrategyEntry(
                    **{**entry.__dict__, "params": {**entry.params, **item["params"]}}
                )
        else:
            if item["class"] not in classes:
                raise ValueError(
                    f"{manifest_path}: strategies[{i}]: no class {item['class']!r} in the set's modules"
                )
            entry = _entry_from_class(classes[item["class"]], meta, item)
        entries.append(entry)
    _check_unique(meta["name"], entries)
    return StrategySet(
        name=meta["name"],
        entries=entries,
        source=meta.get("source"),
        attitude=meta.get("attitude"),
        games=meta["games"],
        description=meta.get("description", ""),
        path=path,
    )


def _load_module(path: Path) -> StrategySet:
    module = _import_path(path)
    meta = {
        "name": getattr(module, "NAME", path.stem),
        "source": getattr(module, "SOURCE", None),
        "attitude": getattr(module, "ATTITUDE", None),
        "games": tuple(getattr(module, "GAMES", ())),
    }
    entries = [_entry_from_class(cls, meta) for cls in _module_classes(module)]
    _check_unique(meta["name"], entries)
    return StrategySet(
        name=meta["name"],
        entries=entries,
        source=meta["source"],
        attitude=meta["attitude"],
        games=meta["games"],
        description=getattr(module, "DESCRIPTION", inspect.getdoc(module) or ""),
        path=path,
    )


def search_path() -> list[Path]:
    """Where set names are looked up: bundled sets, then ``$MESA_DILEMMAS_STRATEGY_PATH``."""
    extra = [Path(p) for p in os.environ.get(ENV_PATH, "").split(os.pathsep) if p]
    return [BUNDLED_DIR, *extra]


def available_sets() -> dict[str, Path]:
    """Set name -> location, for every set found on the search path."""
    out: dict[str, Path] = {}
    for root in search_path():
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if (child / MANIFEST).is_file():
                out.setdefault(child.name, child)
            elif child.suffix == ".py" and child.name != "__init__.py":
                out.setdefault(child.stem, child)
    return out


def resolve_set_path(ref: str | Path) -> Path:
    """A set reference (name or path) -> the directory or module it denotes."""
    path = Path(ref)
    if path.is_dir() and (path / MANIFEST).is_file():
        return path.resolve()
    if path.is_file() and path.suffix == ".py":
        return path.resolve()
    found = available_sets().get(str(ref))
    if found is None:
        known = ", ".join(available_sets()) or "none"
        raise ValueError(
            f"strategy set {str(ref)!r}: no such set name or path; known sets: {known}"
        )
    return found.resolve()


@lru_cache(maxsize=64)
def _load_cached(path: Path) -> StrategySet:
    return _load_directory(path) if path.is_dir() else _load_module(path)


def load_strategy_set(ref: str | Path) -> StrategySet:
    """Load a strategy set by name or path (cached per process)."""
    return _load_cached(resolve_set_path(ref))


def resolve_strategy(spec: str) -> StrategyEntry:
    """``"set_name:strategy_name"`` -> that entry of that set; ``"cc(2)"`` -> a reference entry."""
    set_ref, sep, name = spec.rpartition(":")
    if sep and set_ref:
        return load_strategy_set(set_ref).get(name)
    return StrategyEntry.reference(spec)
