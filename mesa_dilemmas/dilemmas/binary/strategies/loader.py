"""Strategy sets: files on disk, loadable by name.

A *strategy set* is what one source (an LLM, a person, the reference library)
wrote for one attitude: a list of strategies, each with its natural-language
description, its code and metadata.  On disk it is either

* a **directory** holding ``strategy_set.toml`` and any number of ``*.py``
  modules::

      name = "gpt-5-mini_exploitative_my_game"
      source = "gpt-5-mini"            # who wrote the strategies
      attitude = "exploitative"        # "collective" | "exploitative" | free text
      games = ["my_game"]              # games the set was written for ([] = any)
      description = "..."
      modules = ["strategies.py"]      # default: every *.py except __init__.py

      [generation]                     # optional, free-form: how the set was made
      model = "openai:gpt-5-mini"      # (written by ``strategies generate``)

      [[strategies]]                   # optional, repeatable
      ref = "tft(0.5)"                 # a reference strategy by spec, or
      class = "Strategy017"            # a class from the modules
      module = "s017.py"               # optional: the module of ``class`` (same names in
                                       # several modules)
      name = "..."                     # optional overrides
      description = "..."
      params = { q = 0.7 }
      deterministic = true             # optional: known from the checks (memoisable)
      anonymous = true                 # optional: ... and blind to who sits where
      tries = 2                        # optional record of the writing: implementations
      failures = ["..."]               # tried, and why the rejected ones failed

      [[rejected]]                     # optional: strategies whose code never passed
      name = "..."                     # (kept for the record, never loaded)

  Without ``class`` entries every :class:`Strategy` subclass defined in the
  modules is included, in definition order; ``ref`` entries are added to them.

* a **single module** ``something.py`` whose :class:`Strategy` subclasses form
  the set, with module constants ``NAME``, ``SOURCE``, ``ATTITUDE``, ``GAMES``,
  ``DESCRIPTION`` for the set's metadata.

Each class may set ``name``, ``description`` (else its docstring),
``attitude``, ``source`` and ``games``; unset ones inherit the set's values.
Strategy code from files is **untrusted**: a set whose files hold code is
read inside a sandbox worker (:mod:`mesa_dilemmas.sandbox`)
and the run gets only plain metadata back; its entries carry the module path
and class name (``trusted=False``, ``cls=None``) and are only ever
instantiated in a worker.  A set that is only a manifest of reference
strategies is read in-process.  Files in other formats -- such as the published
format of paper 002's authors (:mod:`mesa_dilemmas.dilemmas.binary.strategies.published`) -- load
the same way: each format is a :class:`~mesa_dilemmas.dilemmas.binary.strategies.formats.StrategyFormat`
registered under the entry point group ``mesa_dilemmas.strategy_formats``
(:mod:`mesa_dilemmas.dilemmas.binary.strategies.formats` says which hook is asked when).
Sets are looked up by name among the bundled sets (``sets/`` next to this
file) and the directories listed in ``MESA_DILEMMAS_STRATEGY_PATH``
(``os.pathsep``-separated), or given by path.  The LLM pipeline that writes
sets only has to emit this layout.
"""

from __future__ import annotations

import dataclasses
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

from mesa_dilemmas.dilemmas.binary.strategies import formats
from mesa_dilemmas.dilemmas.binary.strategies.base import GameDescription, Strategy
from mesa_dilemmas.dilemmas.binary.strategies.reference import reference_label, reference_params
from mesa_dilemmas.sandbox import register_handler

#: every sandbox worker serves "describe": a strategy set read inside the worker
register_handler("describe", "mesa_dilemmas.dilemmas.binary.strategies.loader:describe_handler")

MANIFEST = "strategy_set.toml"
ENV_PATH = "MESA_DILEMMAS_STRATEGY_PATH"
BUNDLED_DIR = Path(__file__).parent / "sets"


@dataclass(frozen=True)
class StrategyEntry:
    """One strategy of a set: a class, its parameters and its metadata.

    Trusted entries (reference strategies, classes handed over in Python) have
    ``cls``; untrusted ones (code from files) have ``module`` + ``class_name``
    instead and run only in the sandbox.
    """

    name: str
    cls: type[Strategy] | None
    params: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    attitude: str | None = None
    source: str | None = None
    games: tuple[str, ...] = ()
    set_name: str | None = None
    spec: str | None = None
    #: file of the class (untrusted entries)
    module: str | None = None
    #: class name in ``module``
    class_name: str | None = None
    #: the name of the entry's strategy format (:mod:`.formats`): "native" (our Strategy
    #: interface), "published" (paper 002's authors' interface) or a registered one
    interface: str = formats.NATIVE
    #: known from the checks: same answers under any seed, no random draws (None: not known);
    #: such a strategy's answers may be memoised by history
    deterministic: bool | None = None
    #: known from the checks: a deterministic strategy whose answers do not change when the
    #: other players trade seats (it reads only its own row and aggregates); memoised more widely
    anonymous: bool | None = None

    @property
    def trusted(self) -> bool:
        """Whether the code may run in the run's own process (a class object was handed over)."""
        return self.cls is not None

    def create(
        self, game: GameDescription, seed: tuple[int, tuple[int, ...]] | None = None
    ) -> Strategy:
        """A fresh instance for one match (``seed`` = (entropy, spawn key) of its generator)."""
        if self.cls is None:
            raise RuntimeError(
                f"strategy {self.name!r} is untrusted code from {self.module}; it runs only in the sandbox"
            )
        return self.cls.create(game, seed, self.params)

    def ref(self) -> dict[str, Any]:
        """How a sandbox worker rebuilds this entry (plain data)."""
        if self.spec is not None:
            return {"spec": self.spec, "params": dict(self.params)}
        if self.cls is not None:
            return {
                "cls": f"{self.cls.__module__}:{self.cls.__qualname__}",
                "params": dict(self.params),
            }
        return {
            "module": self.module,
            "class": self.class_name,
            "interface": self.interface,
            "params": dict(self.params),
        }

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
    """A named, ordered collection of strategies with the set's metadata.

    ``problems`` lists what could not be loaded (a module that failed to
    import, a class that could not be read); the rest of the set still loads.
    """

    name: str
    entries: list[StrategyEntry]
    source: str | None = None
    attitude: str | None = None
    games: tuple[str, ...] = ()
    description: str = ""
    path: Path | None = None
    problems: list[str] = field(default_factory=list)

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
            "load_problems": list(self.problems),
        }


# -- loading -------------------------------------------------------------


#: the module paths strategy files written before the C/D family had one home import from
#: (``from mesa_dilemmas.agents.strategies import Strategy``, as the writing prompt then said):
#: such files -- generated sets that were paid for -- still load, through these names only
WRITTEN_BEFORE_THE_MOVE = {
    "mesa_dilemmas.agents.strategies": "mesa_dilemmas.dilemmas.binary.strategies",
    "mesa_dilemmas.agents.strategies.base": "mesa_dilemmas.dilemmas.binary.strategies.base",
    "mesa_dilemmas.agents.strategies.history": "mesa_dilemmas.dilemmas.binary.strategies.history",
    "mesa_dilemmas.agents.strategies.reference": "mesa_dilemmas.dilemmas.binary.strategies.reference",
}


def _earlier_import_paths() -> None:
    for old, new in WRITTEN_BEFORE_THE_MOVE.items():
        if old not in sys.modules:
            sys.modules[old] = importlib.import_module(new)


def _import_path(path: Path) -> ModuleType:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"mesa_dilemmas._strategy_sets.m{digest}_{path.stem}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    formats.prepare_all()
    _earlier_import_paths()
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


#: a module's strategy format and classes (no format: no classes)
_Found = tuple[formats.StrategyFormat | None, list[type]]


def _import_classes(file: Path, problems: list[str] | None) -> _Found:
    """The format and strategy classes of one file; with ``problems`` given, a failing import is
    noted, not raised."""
    if problems is None:
        return formats.module_classes(_import_path(file))
    try:
        return formats.module_classes(_import_path(file))
    except BaseException as exc:  # noqa: BLE001 - runs in a sandbox worker: every failure is a finding
        problems.append(f"{file.name}: import failed: {type(exc).__name__}: {exc}"[:500])
        return None, []


def _entry_from_class(
    cls: type,
    fmt: formats.StrategyFormat,
    set_meta: Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
) -> StrategyEntry:
    o = dict(overrides or {})
    doc = inspect.getdoc(cls) or ""
    return StrategyEntry(
        name=o.get("name") or getattr(cls, "name", None) or cls.__name__,
        cls=cls,  # type: ignore[arg-type]  # a class of another format in a worker
        params=dict(o.get("params") or {}),
        description=o.get("description") or getattr(cls, "description", None) or doc,
        attitude=o.get("attitude")
        or getattr(cls, "attitude", None)
        or fmt.attitude(cls)
        or set_meta.get("attitude"),
        source=o.get("source") or getattr(cls, "source", None) or set_meta.get("source"),
        games=tuple(o.get("games") or getattr(cls, "games", ()) or set_meta.get("games") or ()),
        set_name=set_meta.get("name"),
        interface=fmt.name,
    )


def _check_unique(name: str, entries: Sequence[StrategyEntry]) -> None:
    seen: set[str] = set()
    for e in entries:
        if e.name in seen:
            raise ValueError(f"strategy set {name!r}: duplicate strategy name {e.name!r}")
        seen.add(e.name)


#: the largest manifest, descriptions file or source file this process reads itself (bytes)
MAX_FILE_BYTES = 8 << 20


def read_limited(path: Path, what: str, limit: int = MAX_FILE_BYTES) -> str:
    """A text file the run reads itself (not in a worker), refused in one line if larger than
    ``limit`` bytes."""
    size = path.stat().st_size
    if size > limit:
        raise ValueError(f"{path}: {what} of {size} bytes is larger than the limit of {limit}")
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read(limit + 1)[:limit]


def parse_manifest(path: Path) -> dict[str, Any]:
    """A manifest read by the run: bounded in size, and nesting too deep to parse is one line."""
    try:
        return tomllib.loads(read_limited(path, "manifest"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {_one_line(str(exc), 200)}") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"{path}: the manifest nests too deeply to read") from None


def _load_directory(path: Path, problems: list[str] | None = None) -> StrategySet:
    manifest_path = path / MANIFEST
    meta = parse_manifest(manifest_path)
    allowed = {
        "name",
        "source",
        "attitude",
        "games",
        "description",
        "modules",
        "strategies",
        "generation",
        "rejected",
    }
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
    classes: dict[str, tuple[type, formats.StrategyFormat]] = {}
    by_file: dict[tuple[str, str], tuple[type, formats.StrategyFormat]] = {}
    for file in module_files:
        fmt, found_classes = _import_classes(file, problems)
        for cls in found_classes:
            assert fmt is not None  # classes come with the format that found them
            classes.setdefault(cls.__name__, (cls, fmt))
            by_file[(file.name, cls.__name__)] = (cls, fmt)
    listed = meta.get("strategies", [])
    entries: list[StrategyEntry] = []
    if not any("class" in item for item in listed):
        entries.extend(_entry_from_class(cls, fmt, meta) for cls, fmt in classes.values())
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
            "module",
            "deterministic",
            "anonymous",
            "tries",
            "failures",
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
            found = (
                by_file.get((item["module"], item["class"]))
                if "module" in item
                else classes.get(item["class"])
            )
            if found is None:
                if problems is not None and "module" in item:  # its module failed to import
                    continue
                raise ValueError(
                    f"{manifest_path}: strategies[{i}]: no class {item['class']!r} in the set's modules"
                )
            entry = _entry_from_class(*found, meta, item)
        for key in ("deterministic", "anonymous"):
            if isinstance(item.get(key), bool):
                entry = StrategyEntry(**{**entry.__dict__, key: item[key]})
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
        problems=problems if problems is not None else [],
    )


def _load_module(path: Path, problems: list[str] | None = None) -> StrategySet:
    try:
        module = _import_path(path)
    except BaseException as exc:  # noqa: BLE001 - see _import_classes
        if problems is None:
            raise
        problems.append(f"{path.name}: import failed: {type(exc).__name__}: {exc}"[:500])
        module = ModuleType(path.stem)
    fmt, classes = formats.module_classes(module) if module.__dict__.get("__file__") else (None, [])
    meta = {
        "name": getattr(module, "NAME", path.stem),
        # the format may know who wrote a file that does not say (a published file is one
        # model's strategies: ``strategies/<game>/<model>.py``)
        "source": getattr(module, "SOURCE", fmt.file_source(path) if fmt else None),
        "attitude": getattr(module, "ATTITUDE", None),
        "games": tuple(
            getattr(module, "GAMES", ()) or (fmt.folder_games(path.parent) if fmt else ())
        ),
    }
    entries = [_entry_from_class(cls, fmt, meta) for cls in classes if fmt is not None]
    described = formats.descriptions_beside(path)
    if described:
        entries = [
            StrategyEntry(**{**e.__dict__, "description": described[e.name]})
            if e.name in described
            else e
            for e in entries
        ]
    _check_unique(meta["name"], entries)
    return StrategySet(
        name=meta["name"],
        entries=entries,
        source=meta["source"],
        attitude=meta["attitude"],
        games=meta["games"],
        description=getattr(module, "DESCRIPTION", None) or inspect.getdoc(module) or "",
        path=path,
        problems=problems if problems is not None else [],
    )


def _load_folder(path: Path, problems: list[str] | None = None, tick: Any = None) -> StrategySet:
    """A folder of strategy files without a manifest, such as the authors' folder of one game
    (``strategies/<game>/<model>.py`` with ``<model>_descriptions.py``): one set, each
    strategy named ``<file>/<class>`` with its file's stem as its source (the model)."""
    entries: list[StrategyEntry] = []
    for file in strategy_files(path):
        if tick is not None:  # one file is one step of the worker's progress (its time limit)
            tick()
        for e in _load_module(file, problems).entries:
            entries.append(
                dataclasses.replace(
                    e,
                    name=f"{file.stem}/{e.name}",
                    source=e.source or file.stem,
                    set_name=path.name,
                )
            )
    sources = {e.source for e in entries}
    _check_unique(path.name, entries)
    return StrategySet(
        name=path.name,
        entries=entries,
        source=next(iter(sources)) if len(sources) == 1 else None,
        games=formats.games_of_folder(path),
        description=f"the strategy files in {path}",
        path=path,
        problems=problems if problems is not None else [],
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


def strategy_files(path: Path) -> list[Path]:
    """The strategy modules of a folder without a manifest (descriptions files left out)."""
    return sorted(
        p
        for p in path.glob("*.py")
        if p.name != "__init__.py" and not p.stem.endswith("_descriptions")
    )


def game_folders(path: Path) -> dict[str, Path]:
    """Game -> folder, for a folder that holds one folder of strategy files per game (the
    authors' ``strategies/``, or a checkout of their repository that has one); else empty."""
    if not path.is_dir() or (path / MANIFEST).is_file() or strategy_files(path):
        return {}
    inner = path / "strategies"
    if inner.is_dir() and (found := game_folders(inner)):
        return found
    return {
        c.name: c
        for c in sorted(path.iterdir())
        if c.is_dir() and not c.name.startswith((".", "_")) and strategy_files(c)
    }


def split_ref(ref: str | Path) -> tuple[str | Path, list[str]]:
    """``"PATH#<game>#collective"`` -> ``("PATH", ["<game>", "collective"])``."""
    if isinstance(ref, str) and "#" in ref:
        base, *selectors = ref.split("#")
        return base, [s for s in selectors if s]
    return ref, []


def resolve_set_path(ref: str | Path) -> Path:
    """A set reference (name or path) -> the directory or module it denotes."""
    path = Path(ref)
    if path.is_dir() and (path / MANIFEST).is_file():
        return path.resolve()
    if path.is_file() and path.suffix == ".py":
        return path.resolve()
    if path.is_dir() and (strategy_files(path) or game_folders(path)):
        return path.resolve()
    found = available_sets().get(str(ref))
    if found is None and path.is_dir():
        raise ValueError(
            f"strategy set {str(ref)!r}: the folder holds no {MANIFEST}, no strategy files "
            "(*.py) and no folder of them per game"
        )
    if found is None:
        known = ", ".join(available_sets()) or "none"
        raise ValueError(
            f"strategy set {str(ref)!r}: no such set name or path; known sets: {known}"
        )
    return found.resolve()


def resolve_set_ref(ref: str | Path) -> str:
    """A set reference -> its resolved path, keeping its selectors (``PATH#collective``)."""
    base, selectors = split_ref(ref)
    return "#".join([str(resolve_set_path(base)), *selectors])


def _has_code(path: Path) -> bool:
    """Whether loading the set would execute code from its files."""
    if not path.is_dir():
        return True
    try:
        meta = parse_manifest(path / MANIFEST)
    except (OSError, ValueError):
        return True  # read in a worker, which says what is wrong with it
    if "modules" in meta:
        return bool(meta["modules"])
    return any(p.name != "__init__.py" for p in path.glob("*.py"))


@lru_cache(maxsize=64)
def _load_cached(path: Path) -> StrategySet:
    if not _has_code(path):
        return _load_directory(path)

    return describe_set(path)


def _one_line(text: str, limit: int = 600) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_strategy_set(ref: str | Path) -> StrategySet:
    """Load a strategy set by name or path (cached per process).

    Code in the set's files runs only in a sandbox worker.  A set that yields
    no strategy at all is an error that says why.  Selectors after ``#`` pick a
    game's folder (``strategies#<game>``), a model's strategies in a folder
    of several (``strategies/<game>#mistral-7b``) and an attitude
    (``...#collective``), in any order.
    """
    base, selectors = split_ref(ref)
    path = resolve_set_path(base)
    games = game_folders(path)
    if games:
        chosen = [s for s in selectors if s in games]
        if not chosen:
            first = next(iter(games))
            raise ValueError(
                f"strategy set {str(base)!r} holds one folder of strategies per game "
                f"({', '.join(games)}); choose one, e.g. '{base}#{first}' or '{games[first]}'"
            )
        path = games[chosen[0]].resolve()
        selectors = [s for s in selectors if s != chosen[0]]
    strategy_set = _load_cached(path)
    if not strategy_set.entries:
        why = "; ".join(strategy_set.problems[:3]) or (
            "no Strategy subclass with an act() method and no published-format class was found"
        )
        if len(strategy_set.problems) > 3:
            why += f" (and {len(strategy_set.problems) - 3} more problems)"
        raise ValueError(_one_line(f"strategy set {str(base)!r} ({path}) has no strategies: {why}"))
    for selector in selectors:
        strategy_set = select(strategy_set, selector, base)
    return strategy_set


def select(strategy_set: StrategySet, selector: str, ref: Any = None) -> StrategySet:
    """The entries of a model (their ``source``) or an attitude, as a set of its own."""
    sources = {e.source for e in strategy_set.entries}
    attitudes = {e.attitude for e in strategy_set.entries}
    if selector in sources and selector not in attitudes and len(sources) > 1:
        name = f"{strategy_set.name}#{selector}"
        return dataclasses.replace(
            strategy_set,
            name=name,
            source=selector,
            entries=[
                dataclasses.replace(e, set_name=name)
                for e in strategy_set.entries
                if e.source == selector
            ],
        )
    return split_by_attitude(strategy_set, selector, ref)


def split_by_attitude(strategy_set: StrategySet, attitude: str, ref: Any = None) -> StrategySet:
    """The entries of ``strategy_set`` with ``attitude`` (``PATH#collective``), as a set of its own."""
    entries = [e for e in strategy_set.entries if e.attitude == attitude]
    if not entries:
        found = sorted({str(e.attitude) for e in strategy_set.entries})
        models = sorted({str(e.source) for e in strategy_set.entries})
        raise ValueError(
            f"strategy set {str(ref or strategy_set.name)!r} has no {attitude!r} strategies "
            f"(attitudes found: {', '.join(found)}"
            + (f"; models found: {', '.join(models)})" if len(models) > 1 else ")")
        )
    name = f"{strategy_set.name}#{attitude}"
    return dataclasses.replace(
        strategy_set,
        name=name,
        attitude=attitude,
        entries=[dataclasses.replace(e, set_name=name) for e in entries],
    )


# -- the sandbox's side of loading ------------------------------------------


def set_description(path: Path, tick: Any = None) -> dict[str, Any]:
    """Load a set in *this* process (a sandbox worker) and describe it as plain data
    (``tick()``: called before each file of a folder is loaded)."""
    problems: list[str] = []
    if path.is_dir():
        s = (
            _load_directory(path, problems)
            if (path / MANIFEST).is_file()
            else _load_folder(path, problems, tick)
        )
    else:
        s = _load_module(path, problems)
    entries = []
    for e in s.entries:
        item: dict[str, Any] = {
            "name": e.name,
            "params": dict(e.params),
            "description": e.description,
            "attitude": e.attitude,
            "source": e.source,
            "games": list(e.games),
            "set_name": e.set_name,
            "spec": e.spec,
            "interface": e.interface,
            "deterministic": e.deterministic,
            "anonymous": e.anonymous,
        }
        if e.spec is None and e.cls is not None:
            item["module"] = str(Path(inspect.getfile(e.cls)).resolve())
            item["class"] = e.cls.__name__
        entries.append(item)
    meta = s.metadata()
    meta["entries"] = entries
    meta["problems"] = s.problems
    return meta


def _text(value: Any, field_name: str, limit: int = 100_000, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"sandbox answer: {field_name} is not text")
    return value[:limit]


def _interface(name: Any) -> str:
    """A worker's interface name, if it names a registered format; else native."""
    fmt = formats.format_named(name)
    return formats.NATIVE if fmt is None else fmt.name


def set_from_description(meta: dict[str, Any], path: Path) -> StrategySet:
    """The run's side: rebuild a set from a worker's description, checking every field."""
    entries: list[StrategyEntry] = []
    files = {str(path)} if path.is_file() else {str(p.resolve()) for p in path.glob("*.py")}
    for item in meta.get("entries", []):
        if not isinstance(item, dict):
            raise ValueError("sandbox answer: an entry is not an object")
        params = item.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError("sandbox answer: params is not an object")
        common = {
            "name": _text(item.get("name"), "name", 200, optional=False),
            "description": _text(item.get("description") or "", "description") or "",
            "attitude": _text(item.get("attitude"), "attitude", 200),
            "source": _text(item.get("source"), "source", 200),
            "games": tuple(_text(g, "games", 100) or "" for g in item.get("games") or ()),
            "set_name": _text(item.get("set_name"), "set_name", 200),
        }
        deterministic, anonymous = item.get("deterministic"), item.get("anonymous")
        for value, what in ((deterministic, "deterministic"), (anonymous, "anonymous")):
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"sandbox answer: {what} is not a boolean")
        if item.get("spec") is not None:
            entry = StrategyEntry.reference(str(item["spec"]), **common)
            if params:
                entry = StrategyEntry(**{**entry.__dict__, "params": {**entry.params, **params}})
        else:
            module = _text(item.get("module"), "module", 4096)
            if module not in files:
                raise ValueError(f"sandbox answer: class file {module!r} is not part of the set")
            entry = StrategyEntry(
                cls=None,
                params=params,
                module=module,
                class_name=_text(item.get("class"), "class", 200, optional=False),
                interface=_interface(item.get("interface")),
                deterministic=deterministic,
                anonymous=anonymous,
                **common,  # type: ignore[arg-type]
            )
        entries.append(entry)
    name = _text(meta.get("name"), "name", 200) or path.stem
    _check_unique(name, entries)
    return StrategySet(
        name=name,
        entries=entries,
        source=_text(meta.get("source"), "source", 200),
        attitude=_text(meta.get("attitude"), "attitude", 200),
        games=tuple(_text(g, "games", 100) or "" for g in meta.get("games") or ()),
        description=_text(meta.get("description") or "", "description") or "",
        path=path,
        problems=[_text(p, "problems", 1000) or "" for p in meta.get("problems") or []],
    )


def entry_class(ref: Mapping[str, Any]) -> tuple[type[Strategy], dict[str, Any]]:
    """In a sandbox worker: the class and parameters an entry's :meth:`StrategyEntry.ref` names."""
    params = dict(ref.get("params") or {})
    if ref.get("spec") is not None:
        cls, base = reference_params(ref["spec"])
        return cls, {**base, **params}
    if ref.get("cls") is not None:
        mod, _, qual = ref["cls"].partition(":")
        obj: Any = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
        return obj, params
    module = _import_path(Path(ref["module"]))
    cls = getattr(module, ref["class"])
    fmt = formats.format_named(ref.get("interface"))
    if fmt is not None:  # how a class of its format is played (native: as it is)
        cls = fmt.adapt(cls)
    return cls, params


def resolve_strategy(spec: str) -> StrategyEntry:
    """``"set_name:strategy_name"`` -> that entry of that set; ``"cc(2)"`` -> a reference entry."""
    set_ref, sep, name = spec.rpartition(":")
    if sep and set_ref:
        return load_strategy_set(set_ref).get(name)
    return StrategyEntry.reference(spec)


def describe_handler(header: dict, arrays: dict, ctx: object) -> tuple[dict, dict]:
    """Worker side of :func:`describe_set` (served by every sandbox worker as "describe").

    Loading a folder moves the progress page on at every file, so the limit of one call's CPU
    time holds per file, not for the whole folder."""
    from mesa_dilemmas.sandbox.worker import SLOT_SEAT

    progress = getattr(ctx, "progress", None)

    def tick() -> None:
        if progress is not None:
            progress[SLOT_SEAT] += 1

    return {"set": set_description(Path(header["path"]), tick)}, {}


def description_limit(path: Path) -> int:
    """The largest description of the set at ``path`` the run accepts (bytes): the protocol's
    default header bound, or three times the size of the Python files read plus 1 MB."""
    from mesa_dilemmas.sandbox import protocol

    root = Path(path)
    files = [root] if root.is_file() else root.rglob("*.py")
    code = sum(f.stat().st_size for f in files if f.is_file())
    return max(protocol.MAX_HEADER, 3 * code + (1 << 20))


def describe_set(path: Path) -> StrategySet:
    """Load the set at ``path`` in a sandbox worker; the run gets checked metadata back."""
    from mesa_dilemmas.sandbox import WorkerLost, get_limits, sandbox_for

    # a worker of its own: no other set's code (imported before) can change what it says
    box = sandbox_for(f"load:{path}")
    budget = max(60.0, 10 * get_limits().match_cpu)  # CPU seconds
    # the description carries every class's metadata and text: a published folder of five
    # models' files (~9 MB of code) describes itself in ~10.5 MB, past the protocol's default
    # header bound, so the bound grows with the code read (and no further)
    limit = description_limit(path)
    try:
        header, _ = box.call(
            "describe", {"path": str(path)}, budget=budget, max_bytes=limit, max_header=limit
        )
    except WorkerLost as lost:
        raise ValueError(f"strategy set {path}: loading it {lost.reason}") from None
    finally:
        box.close()
    if "error" in header:
        raise ValueError(f"strategy set {path}: {header['error']}")
    meta = header.get("set")
    if not isinstance(meta, dict):
        raise ValueError(f"strategy set {path}: the sandbox sent no description")
    return set_from_description(meta, path)
