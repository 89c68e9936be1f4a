"""The claims register: every separately stated finding of a paper, one row each, with how this
project tests it (or why it cannot), read from ``claims_register.toml`` files.

A register file holds one paper's findings::

    paper = "003"

    [[claim]]
    id = "003-fig2-compliance"          # unique, stable
    where = "Sec. 4.1, Fig. 2"          # where the paper states it
    says = "..."                        # what it says, in our words (never the paper's sentence)
    range = "beta = 10 and 14"          # the range, sizes or conditions it is stated over
    names = ["rule-based ABM"]          # the models or conditions the paper names for it
    kind = "judged"                     # judged | llm | untestable | not_run
    claims = ["shock_compliance"]       # judged: keys of registered Claim objects
    test = "..."                        # how we test it, or what test would apply
    scenario = "my_game/llm_runs"       # llm: the bundled scenario that tests it
    models = ["openai:gpt-4o"]          # llm: the paper's own models for it (provider:model)
    overrides = ["params.llm={model}"]  # llm: how a model is put in the scenario (the default)
    reason = "..."                      # untestable / not_run: why (required)
    note = "..."                        # any row: a remark printed with it

Kinds: **judged** (rule or strategy players judge it here: ``claims`` names the keys of the
registered :class:`~mesa_dilemmas.analysis.verdicts.Claim` objects that test it, a key's
verdict in a run of ``reproduce --strategies`` is ``KEY@GG/MODEL``, see :func:`published_key`);
**llm** (needs LLM players: the bundled scenario and the paper's own models, so the report can
price a dry run on each); **untestable** (not testable here, with the reason); **not_run**
(testable, but no judge yet: ``test`` says what experiment would judge it).

Where registers are found: beside each module registered in the entry point group
``mesa_dilemmas.claims`` -- the path its ``REGISTER`` names (a path or a list of paths, relative
to the module's folder), else a ``claims_register.toml`` beside the module itself and beside any
module of the same top-level package that it imports functions or classes from (so games that
share a family library, whose claims modules import their helpers from it, share the register
kept beside that library).  An installed game's register is found the same way, with no edit
here.
"""

from __future__ import annotations

import inspect
import re
import sys
import tomllib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mesa_dilemmas.analysis.verdicts import Claim, Verdict

#: the file a claims module's register is kept in, beside the module
FILE_NAME = "claims_register.toml"
#: the entry point group of the claims modules (``mesa_dilemmas.dilemmas.registry.CLAIMS``)
CLAIMS_GROUP = "mesa_dilemmas.claims"

Kind = Literal["judged", "llm", "untestable", "not_run"]
KINDS: tuple[Kind, ...] = ("judged", "llm", "untestable", "not_run")
#: how the report words each kind
KIND_WORDS: dict[str, str] = {
    "judged": "judged here",
    "llm": "need LLMs",
    "untestable": "not testable here",
    "not_run": "not run here",
}
_SPEC = re.compile(r"^[a-z]+:\S+$")


class RegisterError(ValueError):
    """A register that cannot be read: one line naming the file, the row and the field."""


class Row(BaseModel):
    """One finding of a paper and how it is tested here."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    where: str = Field(min_length=1)
    says: str = Field(min_length=1)
    range: str = Field(min_length=1)
    names: list[str] = Field(default_factory=list)
    kind: Kind
    claims: list[str] = Field(default_factory=list)
    test: str = ""
    scenario: str = ""
    models: list[str] = Field(default_factory=list)
    overrides: list[str] = Field(default_factory=lambda: ["params.llm={model}"])
    reason: str = ""
    note: str = ""

    @model_validator(mode="after")
    def _what_each_kind_needs(self) -> Row:
        if self.kind == "judged":
            if not self.claims:
                raise ValueError("claims: a judged row names at least one registered claim key")
            if not self.test:
                raise ValueError("test: a judged row says how the claim is tested")
        elif self.claims:
            raise ValueError(
                f"claims: only a judged row names claim keys (this one is {self.kind})"
            )
        if self.kind == "llm":
            if not self.scenario:
                raise ValueError("scenario: an llm row names the bundled scenario that tests it")
            if not self.models:
                raise ValueError("models: an llm row names at least one of the paper's models")
            bad = [m for m in self.models if not _SPEC.match(m)]
            if bad:
                raise ValueError(f"models: {bad[0]!r} is not provider:model")
            if not any("{model}" in o for o in self.overrides):
                raise ValueError("overrides: none of them puts {model} in the scenario")
            if not self.test:
                raise ValueError("test: an llm row says how the scenario's run would judge it")
        elif self.scenario or self.models:
            raise ValueError(
                f"{'scenario' if self.scenario else 'models'}: only an llm row names them "
                f"(this one is {self.kind})"
            )
        if self.kind in ("untestable", "not_run") and not self.reason:
            raise ValueError(f"reason: a {self.kind} row says why")
        if self.kind == "not_run" and not self.test:
            raise ValueError("test: a not_run row says what experiment would judge it")
        return self

    def estimate_overrides(self, model: str) -> list[str]:
        """The ``--set`` overrides that put ``model`` in the row's scenario."""
        return [o.replace("{model}", model) for o in self.overrides]


@dataclass(frozen=True)
class Register:
    """One paper's register, as read from ``path``."""

    paper: str
    path: Path
    rows: tuple[Row, ...]
    title: str = ""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _row_error(path: Path, number: int, raw: Any, exc: ValidationError) -> RegisterError:
    err = exc.errors()[0]
    rid = raw.get("id") if isinstance(raw, dict) else None
    field = ".".join(str(p) for p in err.get("loc", ()))
    msg = _one_line(err.get("msg", "invalid")).removeprefix("Value error, ")
    if not field and ":" in msg:  # a rule over several fields names its field first
        field, _, msg = msg.partition(":")
        msg = msg.strip()
    if err.get("type") == "extra_forbidden":
        msg = "unknown field (allowed: " + ", ".join(Row.model_fields) + ")"
    where = f"claim {number}" + (f" ({rid})" if isinstance(rid, str) and rid else "")
    return RegisterError(f"{path}: {where}: {field or 'row'}: {msg}")


def load_register(path: str | Path) -> Register:
    """Read and check one register file; a malformed one raises :class:`RegisterError`."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RegisterError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise RegisterError(f"{path}: not valid TOML: {_one_line(exc)}") from None
    unknown = sorted(set(data) - {"paper", "title", "claim"})
    if unknown:
        raise RegisterError(
            f"{path}: {unknown[0]}: unknown top-level key (allowed: paper, title, claim)"
        )
    paper = data.get("paper")
    if not isinstance(paper, str) or not paper.strip():
        raise RegisterError(f'{path}: paper: missing or not a string (e.g. paper = "003")')
    title = data.get("title", "")
    if not isinstance(title, str):
        raise RegisterError(f"{path}: title: not a string")
    raw_rows = data.get("claim", [])
    if not isinstance(raw_rows, list) or not all(isinstance(r, dict) for r in raw_rows):
        raise RegisterError(f"{path}: claim: must be an array of tables ([[claim]])")
    if not raw_rows:
        raise RegisterError(f"{path}: claim: the register has no rows")
    rows: list[Row] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(raw_rows, 1):
        try:
            row = Row.model_validate(raw)
        except ValidationError as exc:
            raise _row_error(path, number, raw, exc) from None
        if row.id in seen:
            raise RegisterError(
                f"{path}: claim {number} ({row.id}): id: already used by claim {seen[row.id]}"
            )
        seen[row.id] = number
        rows.append(row)
    return Register(paper.strip(), path, tuple(rows), title)


# -- where registers are ----------------------------------------------------------------------


def claims_modules() -> list[ModuleType]:
    """Every module registered in ``mesa_dilemmas.claims``, loaded, in the order of their names
    (what ``mesa_dilemmas.dilemmas.registry.load_extensions(CLAIMS)`` gives)."""
    eps = sorted(entry_points(group=CLAIMS_GROUP), key=lambda ep: ep.name)
    return [ep.load() for ep in eps]


def _imported_from(module: ModuleType) -> list[ModuleType]:
    """The modules of the same top-level package whose functions or classes ``module`` imports."""
    top = module.__name__.partition(".")[0]
    found: dict[str, ModuleType] = {}
    for value in vars(module).values():
        if not (inspect.isfunction(value) or inspect.isclass(value)):
            continue
        name = getattr(value, "__module__", None)
        if not name or name == module.__name__ or name.partition(".")[0] != top:
            continue
        source = sys.modules.get(name)
        if source is not None and getattr(source, "__file__", None):
            found.setdefault(name, source)
    return [found[n] for n in sorted(found)]


def register_paths(modules: Iterable[ModuleType], *, strict: bool = False) -> list[Path]:
    """The register files of ``modules`` (claims modules), each once: a module's ``REGISTER``
    if it sets one, else ``claims_register.toml`` beside it and beside the modules it imports
    from (see the module docstring).  A ``REGISTER`` naming a file that does not exist (a
    register not written yet) is left out, or with ``strict`` is a :class:`RegisterError`
    (:func:`missing_registers` lists them)."""
    out: dict[Path, None] = {}
    for module in modules:
        file = getattr(module, "__file__", None)
        if not file:
            continue
        here = Path(file).resolve().parent
        explicit = getattr(module, "REGISTER", None)
        if explicit is not None:
            named = [explicit] if isinstance(explicit, str | Path) else list(explicit)
            for p in named:
                path = (here / Path(p)).resolve()
                if path.is_file():
                    out.setdefault(path, None)
                elif strict:
                    raise RegisterError(
                        f"{module.__name__}: REGISTER: {p} is not a file (looked for {path})"
                    )
            continue
        for source in (module, *_imported_from(module)):
            candidate = Path(source.__file__).resolve().parent / FILE_NAME
            if candidate.is_file():
                out.setdefault(candidate, None)
    return list(out)


def missing_registers(modules: Iterable[ModuleType]) -> list[str]:
    """``module: path`` for each ``REGISTER`` that names a file that does not exist."""
    out = []
    for module in modules:
        explicit = getattr(module, "REGISTER", None)
        file = getattr(module, "__file__", None)
        if explicit is None or not file:
            continue
        for p in [explicit] if isinstance(explicit, str | Path) else list(explicit):
            path = (Path(file).resolve().parent / Path(p)).resolve()
            if not path.is_file():
                out.append(f"{module.__name__}: {path}")
    return out


def load_registers(
    modules: Iterable[ModuleType] | None = None, *, strict: bool = False
) -> list[Register]:
    """Every register of the claims modules (default: every registered one), by paper; an id
    used twice anywhere is a :class:`RegisterError` (``strict``: see :func:`register_paths`)."""
    paths = register_paths(claims_modules() if modules is None else modules, strict=strict)
    registers = sorted((load_register(p) for p in paths), key=lambda r: (r.paper, str(r.path)))
    owner: dict[str, Path] = {}
    for reg in registers:
        for row in reg.rows:
            if row.id in owner:
                raise RegisterError(f"{reg.path}: {row.id}: id: already used in {owner[row.id]}")
            owner[row.id] = reg.path
    return registers


# -- what the report needs ----------------------------------------------------------------------


def published_key(key: str, game: str, model: str | None = None) -> str:
    """The verdict key of a claim ``reproduce --strategies`` judges on the authors' published
    sets: ``KEY@GG/MODEL`` for a self-play claim of one model (GG: :func:`game_initials` of the
    game, MODEL: the authors' file stem, e.g. ``welfare_rises@xy/model-a``), ``KEY@GG`` for a
    claim of the whole game (its cultural evolution, key ``evolution``)."""
    initials = game_initials(game)
    return f"{key}@{initials}" if model is None else f"{key}@{initials}/{model}"


def game_initials(game: str) -> str:
    """A game's short name in verdict keys: the initials of its registered name's words."""
    return "".join(word[:1] for word in game.split("_") if word)


def base_key(key: str) -> str:
    """A verdict key without its qualifier: the registered claim's key."""
    return key.partition("@")[0]


def rows(registers: Iterable[Register], paper: str | None = None) -> list[tuple[str, Row]]:
    """(paper, row) for every row, optionally of one paper."""
    return [(r.paper, row) for r in registers if paper in (None, r.paper) for row in r.rows]


def counts(registers: Iterable[Register]) -> dict[str, dict[str, int]]:
    """Rows per paper and kind (every kind listed, zeros too), papers in order."""
    out: dict[str, dict[str, int]] = {}
    for paper, row in rows(registers):
        out.setdefault(paper, dict.fromkeys(KINDS, 0))[row.kind] += 1
    return dict(sorted(out.items()))


def intro_line(registers: Iterable[Register]) -> str:
    """One sentence counting each kind per paper."""
    found = counts(registers)
    total = sum(sum(c.values()) for c in found.values())
    parts = [
        f"paper {paper}: " + ", ".join(f"{c[k]} {KIND_WORDS[k]}" for k in KINDS)
        for paper, c in found.items()
    ]
    return f"The claims register holds {total} findings ({'; '.join(parts)})."


def problems(registers: Iterable[Register], known_keys: Collection[str]) -> list[str]:
    """Judged rows that name a key no registered claim has (the qualifier of a published key
    is not checked: it names a model or a game of a run)."""
    out = []
    for reg in registers:
        for row in reg.rows:
            for key in row.claims:
                if base_key(key) not in known_keys:
                    out.append(f"{reg.path}: {row.id}: claims: {key!r} is no registered claim key")
    return out


@dataclass(frozen=True)
class PricedRun:
    """One dry run the report prices: an LLM row's scenario on one of its models."""

    scenario: str
    model: str
    overrides: tuple[str, ...]


def priced_runs(registers: Iterable[Register]) -> list[PricedRun]:
    """Every (scenario, model) an llm row names, once, in register order."""
    out: dict[tuple[str, str], PricedRun] = {}
    for _, row in rows(registers):
        if row.kind != "llm":
            continue
        for model in row.models:
            out.setdefault(
                (row.scenario, model),
                PricedRun(row.scenario, model, tuple(row.estimate_overrides(model))),
            )
    return list(out.values())


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|") or "-"


def _judged_cell(
    row: Row, verdicts: Mapping[str, Verdict], claims: Mapping[str, Claim] | None
) -> str:
    parts = []
    for key in row.claims:
        claim = (claims or {}).get(base_key(key))
        encoded = tuple(claim.by_construction) if claim is not None else ()
        verdict = verdicts.get(key)
        if verdict is None:
            parts.append(f"`{key}`: not run in this mode")
        elif encoded or verdict.status == "by construction":
            said = f" (encoded by {', '.join(encoded)})" if encoded else ""
            own = verdict.judged or (verdict.status if verdict.status != "by construction" else "")
            own = f"; the judge alone: {own}" if own else ""
            parts.append(f"`{key}`: **by construction**{said}, never counted as reproduced{own}")
        else:
            parts.append(f"`{key}`: **{verdict.status}** ({_one_line(verdict.ours)})")
    if row.note:
        parts.append(f"note: {row.note}")
    return "; ".join(parts)


def _llm_cell(row: Row, prices: Mapping[tuple[str, str], str]) -> str:
    parts = [
        f"{model}: {prices.get((row.scenario, model)) or 'not priced in this mode'}"
        for model in row.models
    ]
    if row.note:
        parts.append(f"note: {row.note}")
    return f"`{row.scenario}`; " + "; ".join(parts)


def render_register(
    registers: Sequence[Register],
    verdicts: Mapping[str, Verdict],
    prices: Mapping[tuple[str, str], str],
    claims: Mapping[str, Claim] | None = None,
    missing: Sequence[str] = (),
) -> list[str]:
    """The whole register as markdown lines: an intro counting each kind per paper, a table of
    the counts, then per paper one table row per finding.  ``verdicts``: the verdicts the report
    computed, by claim key (a published run's as :func:`published_key`); ``prices``: what one
    dry run of each llm row's scenario costs on each model, by (scenario, model); ``claims``:
    the registered claims by key, to name what encodes a claim decided by construction;
    ``missing``: registers a claims module names but that are not written yet
    (:func:`missing_registers`), listed after the intro."""
    found = counts(registers)
    lines = [
        "## The claims register",
        "",
        intro_line(registers),
        "Each finding the paper states separately is one row: where it says it, what it says (in",
        "our words), the range and the models or conditions it names, and how it is tested here.",
        *(["", "Not written yet: " + "; ".join(missing) + "."] if missing else []),
        "",
        "| paper | " + " | ".join(KIND_WORDS[k] for k in KINDS) + " | all |",
        "|---|" + "---|" * (len(KINDS) + 1),
    ]
    for paper, c in found.items():
        lines.append(
            f"| {paper} | " + " | ".join(str(c[k]) for k in KINDS) + f" | {sum(c.values())} |"
        )
    lines.append("")
    for paper in found:
        titles = {r.title for r in registers if r.paper == paper and r.title}
        lines += [
            f"### Paper {paper} register" + (f": {sorted(titles)[0]}" if titles else ""),
            "",
            "| id | where | the paper says | over | names | kind | how we test it "
            "| verdict, price or reason |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for _, row in rows(registers, paper):
            if row.kind == "judged":
                outcome = _judged_cell(row, verdicts, claims)
            elif row.kind == "llm":
                outcome = _llm_cell(row, prices)
            else:
                outcome = row.reason + (f" (note: {row.note})" if row.note else "")
            cells = [
                row.id,
                row.where,
                row.says,
                row.range,
                ", ".join(row.names),
                KIND_WORDS[row.kind],
                row.test,
                outcome,
            ]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    return lines
