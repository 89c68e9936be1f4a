"""The package's layout, checked: no import cycle between files, and no file outside a game's own
package names that game (the layering itself is `lint-imports`, run by scripts/test.sh)."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path

import grimp

import mesa_dilemmas

PACKAGE = Path(mesa_dilemmas.__file__).parent


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_files():
    """Every import counts, also those inside functions (grimp reads them all); imports made
    only for type checking (`if TYPE_CHECKING:`) are not imports at run time and do not count."""
    g = grimp.build_graph(
        "mesa_dilemmas", include_external_packages=False, exclude_type_checking_imports=True
    )
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    cycles = strongly_connected(graph)
    assert not cycles, "import cycles between files:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def own_games() -> dict[str, Path]:
    """This package's registered games and the folder of each."""
    out = {}
    for ep in entry_points(group="mesa_dilemmas.games"):
        module = ep.value.partition(":")[0]
        if module.startswith("mesa_dilemmas.dilemmas."):
            out[ep.name] = PACKAGE / "dilemmas" / module.split(".")[2]
    return out


def names_of(game: str) -> re.Pattern[str]:
    """``public_goods`` and ``Public Goods`` (also as a word inside a path or a dotted name)."""
    words = game.split("_")
    spaced = r"[ _-]".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![A-Za-z]){spaced}(?![A-Za-z])", re.IGNORECASE)


def test_no_file_outside_a_games_package_names_the_game():
    games = own_games()
    assert {"fishery", "port_of_mars", "public_goods"} <= set(games)
    found = []
    for path in sorted(PACKAGE.rglob("*")):
        if (
            path.suffix not in {".py", ".toml", ".json", ".txt", ".md"}
            or "__pycache__" in path.parts
        ):
            continue
        text = path.read_text(encoding="utf-8")
        for game, folder in games.items():
            if folder in path.parents:
                continue
            for lineno, line in enumerate(text.splitlines(), 1):
                if names_of(game).search(line):
                    found.append(
                        f"{path.relative_to(PACKAGE.parent)}:{lineno}: {game}: {line.strip()[:90]}"
                    )
    assert not found, f"{len(found)} lines name a game outside its package:\n" + "\n".join(
        found[:60]
    )


def test_no_file_outside_the_llm_layer_builds_an_llm_policy():
    """Who plays is a population: LLM seats are built by the ``llm`` policy kind inside
    ``llm/``, never by a game, a page or a runner of its own (the shape: what is imported from
    the LLM layer, not a list of names)."""
    builders = {"make_policy", "LLMPolicy"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "llm":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "mesa_dilemmas.llm"
            ):
                names = {a.name for a in node.names}
                if node.module == "mesa_dilemmas.llm.policy" or names & builders:
                    found.append(f"{rel}:{node.lineno}")
            elif isinstance(node, ast.Attribute) and node.attr in builders:
                found.append(f"{rel}:{node.lineno}")
    assert found == []


# -- families: a folder under dilemmas/ that registered games import (the C/D games' binary/) ---

#: a module path in a string: ``pkg.module``, ``pkg.module:attr`` or ``module:Attr``
MODULE_PATH = re.compile(
    r"[A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?|:[A-Za-z_][\w.]*)"
)


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an import statement names (``from a import b``: ``a`` and ``a.b``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def families() -> dict[str, set[str]]:
    """Family folder name -> the registered games whose package imports it: a folder under
    ``dilemmas/`` (a package, not a registered game's) that registered games import."""
    games = own_games()
    game_folders = {folder.name for folder in games.values()}
    found: dict[str, set[str]] = {}
    for game, folder in games.items():
        for path in folder.rglob("*.py"):
            for _, module in imported_modules(ast.parse(path.read_text())):
                parts = module.split(".")
                if parts[:2] != ["mesa_dilemmas", "dilemmas"] or len(parts) < 3:
                    continue
                name = parts[2]
                if name not in game_folders and (PACKAGE / "dilemmas" / name).is_dir():
                    found.setdefault(name, set()).add(game)
    return found


def family_words() -> set[str]:
    """What shared code must not name: every family's folder and its experiments (the modules
    registered in ``mesa_dilemmas.experiments`` from a family's folder)."""
    words = set(families())
    for ep in entry_points(group="mesa_dilemmas.experiments"):
        parts = ep.value.partition(":")[0].split(".")
        if parts[:2] == ["mesa_dilemmas", "dilemmas"] and len(parts) > 2 and parts[2] in words:
            words |= {ep.name, parts[-1]}
    return words


def names_a_family(source: str, words: set[str]) -> list[str]:
    """Import statements and module-path strings of ``source`` that name one of ``words`` as a
    part of the path (``mesa_dilemmas.dilemmas.binary.game``, ``"self_play:Class"``)."""
    tree = ast.parse(source)
    found = imported_modules(tree)
    found += [
        (node.lineno, node.value.strip())
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and MODULE_PATH.fullmatch(node.value.strip())
    ]
    out = []
    for lineno, path in found:
        parts = set(re.split(r"[.:]", path))
        if parts & words:
            out.append(f"{lineno}: {path}")
    return sorted(set(out))


def shared_files() -> list[Path]:
    """The package's files outside every registered game's and every family's folder."""
    own = [*own_games().values(), *(PACKAGE / "dilemmas" / f for f in families())]
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in p.parts and not any(f in p.parents for f in own)
    ]


def test_the_cd_games_are_a_family():
    found = families()
    assert found.get("binary") == {"public_goods", "collective_risk", "common_pool"}
    assert {"self_play", "cultural_evolution", "strategy_writing"} <= family_words()


def test_the_family_check_sees_imports_and_module_paths():
    words = {"binary", "self_play"}
    source = (
        "import mesa_dilemmas.dilemmas.binary.game\n"
        "from mesa_dilemmas.dilemmas import binary\n"
        "X = 'self_play:SelfPlayExperiment'\n"
        "Y = 'mesa_dilemmas.dilemmas.binary.rules:make_game'\n"
        "Z = 'a binary choice, self_play in prose'\n"
        "W = 'binary'\n"
        "# import mesa_dilemmas.dilemmas.binary\n"
    )
    assert [f.split(":")[0] for f in names_a_family(source, words)] == ["1", "2", "3", "4"]


def test_no_shared_file_names_a_family_or_its_experiments():
    """Shared layers (agents, llm, scenarios, analysis, viz, the sandbox, cli.py,
    reproduction.py, dilemmas/base.py, registry.py, ...) reach a family's parts -- strategies,
    experiments, report sections, commands -- by entry point, never by name: no import
    statement and no module path in a string names a family's folder or one of its
    experiments."""
    words = family_words()
    files = shared_files()
    rel = {p.relative_to(PACKAGE).as_posix() for p in files}
    assert {"cli.py", "reproduction.py", "sandbox/pool.py", "dilemmas/registry.py"} <= rel
    assert not any(r.startswith("dilemmas/binary/") for r in rel)
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{hit}"
        for path in files
        for hit in names_a_family(path.read_text(encoding="utf-8"), words)
    ]
    assert not found, "shared files name a family:\n" + "\n".join(found)


def persona_words(source: str, fields: set[str]) -> list[str]:
    """Where code (not prose) uses one of ``fields``: an attribute, a keyword argument, a
    name, or a string constant that is exactly the field's name (``persona["svo_angle"]``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        word = None
        if isinstance(node, ast.Attribute):
            word = node.attr
        elif isinstance(node, ast.keyword):
            word = node.arg
        elif isinstance(node, ast.Name):
            word = node.id
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            word = node.value
        if word in fields:
            out.append(f"{getattr(node, 'lineno', '?')}: {word}")
    return out


def test_no_shared_file_knows_a_games_persona_fields():
    """Each game's persona type (its model's ``PERSONA``) lives in its folder; the shared
    :class:`Persona` holds only what every game shares, and no shared file reads or sets a
    game's own persona fields (a disposition, an SVO angle, a cultural group, ...)."""
    from dataclasses import fields

    from mesa_dilemmas.agents.persona import Persona
    from mesa_dilemmas.dilemmas.registry import game_model

    shared = {f.name for f in fields(Persona)}
    own: dict[str, set[str]] = {}
    for game, folder in own_games().items():
        persona = game_model(game).PERSONA
        if persona is not Persona:
            assert folder in Path(sys.modules[persona.__module__].__file__).parents, game
            own[game] = {f.name for f in fields(persona)} - shared
    assert own["fishery"] == {"disposition"}
    assert own["port_of_mars"] == {"svo_angle", "cultural_group"}
    words = set().union(*own.values())
    assert persona_words("p.svo_angle\nf(disposition=1)\nx['cultural_group']\n# svo_angle\n", words)
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{hit}"
        for path in shared_files()
        for hit in persona_words(path.read_text(encoding="utf-8"), words)
    ]
    assert not found, "shared files use a game's persona fields:\n" + "\n".join(found)
