"""Scenario files: TOML, validated before anything runs.

A scenario names a game, fixed model parameters (``[params]``), swept ones
(``[grid]``, a Cartesian product), replications, a seed, an experiment and its
``[options]``, and the figures ``mesa-dilemmas figures`` draws.  Every error is
one line naming the field and what is allowed (:class:`ConfigError`).

A grid axis may also sweep an LLM setting of the LLM players, ``llm.<setting>`` (e.g.
``"llm.prompt_variant" = [0, 1, 2, 3, 4]``, or ``llm.prompt_variant = [...]`` under ``[grid]``):
it becomes a sweep over ``players``, each table with that setting in the ``llm_options`` of
every LLM group (a game's shorthands, such as ``llm_agents``/``llm``, are
expanded into that table first) -- see :func:`llm_axes_to_players` and docs/prompt_variants.md.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
import tomllib
from importlib import import_module, resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mesa_dilemmas.dilemmas.registry import FIGURES, UnknownGame, extensions, game_model, games


class ConfigError(ValueError):
    """A scenario that cannot run; the message is one line naming the field."""


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    description: str = ""
    game: str
    experiment: str = "batch"
    seed: Annotated[int, Field(ge=0)] = 0
    replications: Annotated[int, Field(ge=1, le=100_000)] = 1
    max_steps: Annotated[int, Field(ge=1, le=1_000_000)] = 100
    processes: Annotated[int, Field(ge=1, le=512)] = 1
    params: dict[str, Any] = Field(default_factory=dict)
    #: who plays (see ``mesa_dilemmas.agents.population``); the model parameter ``players``
    population: dict[str, Any] | None = None
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)
    figures: list[str] = Field(default_factory=list)
    #: LLM-layer settings (answer mode, cache, budgets, rate limits); validated by the LLM layer
    llm: dict[str, Any] = Field(default_factory=dict)
    #: where the tasks run (``backend = "local" | "ray"``, ``address``, ``workers``, ``max_retries``)
    execution: dict[str, Any] = Field(default_factory=dict)
    #: free-form notes (calibration choices etc.); copied to the outputs, never interpreted
    notes: dict[str, str] = Field(default_factory=dict)

    def grid_points(self) -> list[dict[str, Any]]:
        keys = list(self.grid)
        return [
            dict(zip(keys, combo, strict=True)) for combo in itertools.product(*self.grid.values())
        ]


#: an absolute dotted name: ``package.module`` (no leading dots, no empty parts)
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def _resolve(
    name: str, default_package: str, default_attr: str | None = None, field: str = "name"
) -> Any:
    """``"module:attr"`` (relative to ``default_package`` when the module has no dot)."""
    if not isinstance(name, str):
        raise ConfigError(f"{field}: expected 'module:attribute' (got {name!r})")
    module, _, attr = name.partition(":")
    if not attr:
        if default_attr is None:
            raise ConfigError(f"{field}: {name!r} must have the form 'module:attribute'")
        attr = default_attr
    if not _DOTTED.match(module) or not _DOTTED.match(attr):
        raise ConfigError(
            f"{field}: {name!r} is not 'module:attribute' with absolute dotted names "
            "(relative names such as '.mod' are not allowed)"
        )
    if "." not in module and default_package:
        module = f"{default_package}.{module}"
    try:
        obj: Any = import_module(module)
    except ImportError as exc:
        raise ConfigError(f"{field}: cannot import {module!r} for {name!r} ({exc})") from None
    except Exception as exc:  # a user module that fails while importing
        raise ConfigError(
            f"{field}: importing {module!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{field}: {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def resolve_experiment(name: str) -> Any:
    from mesa_dilemmas.dilemmas.registry import experiment_path  # registered names

    if name == "batch":
        name = "batch:BatchExperiment"
    return _resolve(experiment_path(name), "mesa_dilemmas.scenarios", field="experiment")


def resolve_figure(name: str, field: str = "figures") -> Any:
    """A figure by its registered name (``"<game>.<figure>"``, entry point group
    ``mesa_dilemmas.figures``) or by its path (``"my_pkg.figures:draw"``)."""
    registered = extensions(FIGURES)
    if name in registered:
        return registered[name].load()
    if not isinstance(name, str) or ":" not in name:
        raise ConfigError(
            f"{field}: unknown figure {name!r}{_suggest(closest(str(name), list(registered)))}; "
            "registered: " + ", ".join(registered) + ", or 'package.module:function'"
        )
    return _resolve(name, "", field=field)


# -- numbers: finite, and booleans are not numbers ---------------------------


def _check_finite(where: str, value: Any) -> None:
    """Reject inf/nan anywhere in a raw (TOML) value; iterative, so any depth is safe."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise ConfigError(f"{path}: must be a finite number (got {node!r})")
        if isinstance(node, dict):
            stack.extend((f"{path}.{k}" if path else str(k), v) for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))


def check_no_bool_as_number(where: str, raw: Any, parsed: Any) -> None:
    """A boolean given where the schema wanted a number (pydantic would read it as 0/1)."""
    stack: list[tuple[str, Any, Any]] = [(where, raw, parsed)]
    while stack:
        path, r, p = stack.pop()
        if isinstance(r, bool):
            if not isinstance(p, bool):
                raise ConfigError(f"{path}: expected a number, not a boolean (got {r!r})")
        elif isinstance(r, dict) and isinstance(p, dict):
            stack.extend(
                (f"{path}.{k}" if path else str(k), v, p[k]) for k, v in r.items() if k in p
            )
        elif isinstance(r, list | tuple) and isinstance(p, list | tuple) and len(r) == len(p):
            stack.extend((f"{path}[{i}]", a, b) for i, (a, b) in enumerate(zip(r, p, strict=True)))


def closest(name: str, candidates: list[str] | tuple[str, ...], n: int = 3) -> list[str]:
    """The valid names nearest to a misspelt one (``difflib``), best first: at most ``n``, and
    only those about as close as the best (``replication`` gives ``replications``, not also
    ``population``)."""
    scored = []
    for candidate in candidates:
        matcher = difflib.SequenceMatcher(None, str(name), candidate)
        if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6:
            ratio = matcher.ratio()
            if ratio >= 0.6:
                scored.append((ratio, candidate))
    scored.sort(key=lambda rc: -rc[0])  # stable: ties keep the candidates' order
    return [c for r, c in scored[:n] if r >= scored[0][0] - 0.15]


def _suggest(names: list[str]) -> str:
    return f" (did you mean {' or '.join(repr(c) for c in names)}?)" if names else ""


def did_you_mean(name: str, candidates: list[str] | tuple[str, ...]) -> str:
    """``" (did you mean 'a' or 'b'?)"`` for the closest candidates, ``""`` when none is close."""
    return _suggest(closest(name, candidates))


def unknown_key(where: str, key: str, allowed: list[str], *, params: bool = False) -> str:
    """The one-line message for an unknown key: the closest valid keys first, then all of them.

    Under ``params`` a misspelt scenario field is a candidate too (``--set replication=5``
    lands in ``params`` because ``replication`` is no scenario field), named as such."""
    fields = [f for f in Scenario.model_fields if params and f not in allowed]
    near = closest(key, [*allowed, *fields])
    shown = [f"{n!r} (a scenario field: --set {n}=...)" if n in fields else repr(n) for n in near]
    hint = f" (did you mean {' or '.join(shown)}?)" if shown else ""
    allowed_txt = f"; allowed: {', '.join(allowed)}" if allowed else ""
    return f"{where}: unknown key{hint}{allowed_txt}"


def _checked(
    model: type[BaseModel], where: str, raw: dict[str, Any], allowed: list[str]
) -> BaseModel:
    """``model.model_validate(raw)`` with the project's rules: one line naming the field,
    no non-finite numbers, no booleans read as numbers."""
    try:
        parsed = model.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_describe_error(where, err, allowed, params=where == "params")) from None
    check_no_bool_as_number(where, raw, parsed.model_dump())
    return parsed


def _describe_error(
    prefix: str, err: ValidationError, allowed: list[str] | None = None, params: bool = False
) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    where = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
    if first["type"] == "extra_forbidden":
        key = str(first["loc"][-1]) if first["loc"] else ""
        return unknown_key(where, key, allowed or [], params=params)
    if first["type"] == "missing":
        return f"{where}: required field is missing"
    got = repr(first.get("input"))
    got = got if len(got) <= 80 else got[:77] + "..."
    msg = " ".join(str(first["msg"]).split())
    if where.startswith("grid.") and first["type"] in ("list_type", "tuple_type"):
        msg += f"; a grid axis is a list: {where}=[{first.get('input')!r}]".replace("'", "")
    return f"{where}: {msg} (got {got})"


def validate(raw: dict[str, Any]) -> tuple[Scenario, BaseModel]:
    """Check a raw scenario dict completely; return it parsed with its experiment options."""
    try:
        return _validate(raw)
    except RecursionError:
        raise ConfigError("scenario: nested too deeply to check") from None


def _flatten_llm_axes(raw: dict[str, Any]) -> dict[str, Any]:
    """``[grid] llm.x = [...]`` (a nested table, as TOML reads a dotted key and ``--set
    grid.llm.x=[...]`` writes it) as the flat axis ``"llm.x"``."""
    grid = raw.get("grid")
    if not isinstance(grid, dict) or not isinstance(grid.get("llm"), dict):
        return raw
    flat = {k: v for k, v in grid.items() if k != "llm"}
    flat.update({f"llm.{k}": v for k, v in grid["llm"].items()})
    return {**raw, "grid": flat}


#: the grid column of a sweep over LLM settings: the players tables it expands into
LLM_AXIS_PREFIX = "llm."


def llm_axes_to_players(scenario: Scenario, model_cls: type) -> Scenario:
    """A scenario whose grid sweeps ``llm.<setting>`` axes, with those axes turned into a sweep
    over ``players``: for every players table of the scenario (its ``players``, its grid over
    ``players``, or the population the game's shorthands describe) and every combination of
    the settings' values, the table with those settings in the ``llm_options`` of every LLM
    group and role.  The grid's other axes are kept; the runs' ``players`` column names the
    settings of each run (``mesa-dilemmas analyse variants`` reads them back)."""
    from mesa_dilemmas.dilemmas.base import shorthand_names
    from mesa_dilemmas.llm.errors import LLMConfigError
    from mesa_dilemmas.llm.settings import LLMSettings

    axes = {k: v for k, v in scenario.grid.items() if k.startswith(LLM_AXIS_PREFIX)}
    if not axes:
        return scenario
    for key, values in axes.items():
        name = key[len(LLM_AXIS_PREFIX) :]
        if name not in LLMSettings.model_fields or name in ("budget", "prices", "providers"):
            allowed = [f for f in LLMSettings.model_fields if f not in ("budget", "prices")]
            raise ConfigError(
                f"grid.{key}: unknown LLM setting{did_you_mean(name, allowed)}; "
                f"allowed: {', '.join(allowed)}"
            )
        if not values:
            raise ConfigError(f"grid.{key}: needs at least one value")
        if name in scenario.llm:
            raise ConfigError(f"grid.{key}: set in both [llm] and [grid]; keep one")
        for i, value in enumerate(values):
            try:
                LLMSettings.from_table({name: value})
            except LLMConfigError as exc:
                raise ConfigError(f"grid.{key}[{i}]: {exc}") from None
    params = dict(scenario.params)
    grid = {k: v for k, v in scenario.grid.items() if k not in axes}
    shorthands = [n for n in shorthand_names(model_cls) if n in params or n in grid]
    if "players" in grid:
        tables = list(grid.pop("players"))
    elif "players" in params:
        tables = [params.pop("players")]
    elif shorthands:
        swept = [n for n in shorthands if n in grid]
        fixed = {n: params.pop(n) for n in shorthands if n in params}
        tables = []
        for combo in itertools.product(*(grid.pop(n) for n in swept)):
            point = {**params, **fixed, **dict(zip(swept, combo, strict=True))}
            population = model_cls.population_from_params(point)
            tables.append(population.model_dump(exclude_defaults=True))
    else:
        first = next(iter(axes))
        raise ConfigError(f"grid.{first}: the scenario seats no LLM players to sweep it over")
    keys = [k[len(LLM_AXIS_PREFIX) :] for k in axes]
    swept_tables = []
    for table in tables:
        for combo in itertools.product(*axes.values()):
            options = dict(zip(keys, combo, strict=True))
            swept_tables.append(_with_llm_options(table, options, next(iter(axes))))
    grid["players"] = swept_tables
    return scenario.model_copy(update={"params": params, "grid": grid})


def check_prompt_variants(scenario: Scenario, model_cls: type) -> None:
    """Every ``prompt_variant`` the scenario asks for (``[llm]``, a group's ``llm_options``, a
    sweep) is a wording every prompt of the game has -- checked now, not at the first call."""
    tables = [scenario.params.get("players"), *scenario.grid.get("players", [])]
    asked: list[tuple[str, Any]] = []
    if "prompt_variant" in scenario.llm:
        asked.append(("llm.prompt_variant", scenario.llm["prompt_variant"]))
    for table in tables:
        for group in _groups_of(table):
            options = group.get("llm_options") or {}
            if group.get("llm") is not None and "prompt_variant" in options:
                asked.append(("llm_options.prompt_variant", options["prompt_variant"]))
    asked = [(w, v) for w, v in asked if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    if not asked:
        return
    from mesa_dilemmas.llm.population import register_game_prompts
    from mesa_dilemmas.llm.prompts import game_wordings

    register_game_prompts(model_cls)
    prefix = getattr(model_cls, "GAME", scenario.game)
    k = game_wordings(prefix, scenario.llm.get("templates_dir"))
    for where, variant in asked:
        if variant >= k:
            raise ConfigError(
                f"{where}: {variant} is beyond the {k} wordings (0..{k - 1}) every prompt of "
                f"{scenario.game} has"
            )


def _groups_of(table: Any) -> list[dict[str, Any]]:
    if hasattr(table, "model_dump"):
        table = table.model_dump(exclude_defaults=True)
    if not isinstance(table, dict):
        return []
    roles = table.get("roles") if isinstance(table.get("roles"), dict) else {}
    return [g for g in [*table.get("groups", []), *roles.values()] if isinstance(g, dict)]


def _with_llm_options(table: Any, options: dict[str, Any], axis: str) -> dict[str, Any]:
    """A players table with ``options`` in every LLM group's and role's ``llm_options``."""
    if hasattr(table, "model_dump"):
        table = table.model_dump(exclude_defaults=True)
    if not isinstance(table, dict):
        raise ConfigError(f"grid.{axis}: the players table is not a table (got {table!r})")
    found = False

    def set_options(group: Any) -> Any:
        nonlocal found
        if isinstance(group, dict) and group.get("llm") is not None:
            found = True
            return {**group, "llm_options": {**group.get("llm_options", {}), **options}}
        return group

    out = dict(table)
    out["groups"] = [set_options(g) for g in table.get("groups", [])]
    if isinstance(table.get("roles"), dict):
        out["roles"] = {k: set_options(g) for k, g in table["roles"].items()}
    if not found:
        raise ConfigError(f"grid.{axis}: the players table has no llm group to sweep it over")
    return out


def _validate(raw: dict[str, Any]) -> tuple[Scenario, BaseModel]:
    from mesa_dilemmas.dilemmas.base import params_model  # Mesa: not to list scenarios

    _check_finite("", raw)
    raw = _flatten_llm_axes(raw)
    scenario = _checked(Scenario, "", raw, sorted(Scenario.model_fields))
    assert isinstance(scenario, Scenario)
    try:
        model_cls = game_model(scenario.game)
    except UnknownGame as exc:
        raise ConfigError(f"game: {exc}{did_you_mean(scenario.game, list(games()))}") from None
    experiment = resolve_experiment(scenario.experiment)
    uses_model_params = getattr(experiment, "USES_MODEL_PARAMS", True)
    llm_axes = [k for k in scenario.grid if k.startswith(LLM_AXIS_PREFIX)]
    if llm_axes and (
        not uses_model_params or "players" not in params_model(model_cls).model_fields
    ):
        raise ConfigError(
            f"grid.{llm_axes[0]}: the {scenario.experiment} experiment of {scenario.game} "
            "takes no players to sweep an LLM setting over"
        )
    if scenario.population is not None:
        if not uses_model_params or "players" not in params_model(model_cls).model_fields:
            raise ConfigError(f"population: the {scenario.game} experiment takes no population")
        if "players" in scenario.params or "players" in scenario.grid:
            raise ConfigError("population: set in both [population] and params.players; keep one")
        scenario = scenario.model_copy(
            update={
                "params": {**scenario.params, "players": scenario.population},
                "population": None,
            }
        )
    scenario = llm_axes_to_players(scenario, model_cls)
    check_prompt_variants(scenario, model_cls)
    if uses_model_params:
        schema = params_model(model_cls)
        allowed = sorted(schema.model_fields)
        overlap = set(scenario.params) & set(scenario.grid)
        if overlap:
            raise ConfigError(
                f"grid.{sorted(overlap)[0]}: set in both [params] and [grid]; keep one"
            )
        for key, values in scenario.grid.items():
            if key not in schema.model_fields:
                hint = did_you_mean(key, allowed)
                raise ConfigError(
                    f"grid.{key}: unknown parameter{hint}; allowed: {', '.join(allowed)}"
                )
            if not values:
                raise ConfigError(f"grid.{key}: needs at least one value")
        # validate fixed params once, then each grid value in the context of the fixed params
        _checked(schema, "params", scenario.params, allowed)
        for key, values in scenario.grid.items():
            for i, value in enumerate(values):
                try:
                    parsed = schema.model_validate({**scenario.params, key: value})
                except ValidationError as err:
                    raise ConfigError(_describe_error("grid", err, allowed)) from None
                check_no_bool_as_number(f"grid.{key}[{i}]", value, parsed.model_dump()[key])
        from mesa_dilemmas.scenarios.population_check import check_population

        for table in [scenario.params.get("players"), *scenario.grid.get("players", [])]:
            if table:
                problems = check_population(model_cls, table)
                if problems:
                    raise ConfigError(problems[0])
        validate_params = getattr(model_cls, "validate_params", None)
        keys = list(scenario.grid)
        grid = itertools.product(*scenario.grid.values()) if validate_params else ()
        for combo in grid:  # lazily: grids can be huge
            point = dict(zip(keys, combo, strict=True))
            try:
                validate_params({**scenario.params, **point})
            except ValueError as exc:
                raise ConfigError(f"params.{exc}") from None
    options = _checked(
        experiment.Options, "options", scenario.options, sorted(experiment.Options.model_fields)
    )
    registered = extensions(FIGURES)
    for i, fig in enumerate(scenario.figures):
        if fig not in registered:  # a registered name is checked without importing its module
            resolve_figure(fig, field=f"figures[{i}]")  # (and matplotlib with it)
    check = getattr(experiment, "check", None)
    if check is not None:  # what the experiment needs beyond its options (strategy sets, ...)
        try:
            check(scenario, options)
        except ConfigError:
            raise
        except Exception as exc:  # user files (strategy sets) can fail in any way
            raise ConfigError(f"options: {_one_line(exc)}") from None
    execution_settings(scenario)
    return scenario, options


def _one_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def execution_settings(scenario: Scenario) -> Any:
    """The scenario's ``[execution]`` table, validated; the backend must be usable here."""
    from mesa_dilemmas.scenarios.execution import ExecutionSettings, check_available

    try:
        settings = ExecutionSettings.model_validate(scenario.execution)
    except ValidationError as err:
        raise ConfigError(
            _describe_error("execution", err, sorted(ExecutionSettings.model_fields))
        ) from None
    try:
        check_available(settings)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return settings


# -- loading -------------------------------------------------------------


def bundled_scenarios(folder_name: str = "scenarios") -> dict[str, Path]:
    """Bundled scenario name ("<game>/<scenario>") -> its TOML file.

    Every registered game's ``scenarios/`` folder beside its model module, built-in and
    installed games alike (``stag_hunt/scenarios/trust.toml`` is ``stag_hunt/trust``);
    ``folder_name``: another such folder (the hosted sessions' ``hosted/``)."""
    out: dict[str, Path] = {}
    for game, path in games().items():
        package = path.partition(":")[0].rpartition(".")[0]
        if not package:
            continue
        try:
            folder = resources.files(package) / folder_name
        except ModuleNotFoundError:
            continue
        if folder.is_dir():
            for file in sorted(folder.iterdir(), key=lambda p: p.name):
                if file.name.endswith(".toml"):
                    out[f"{game}/{file.name[:-5]}"] = Path(str(file))
    return out


def load_raw(name_or_path: str) -> dict[str, Any]:
    """Read a bundled scenario by name or a user's TOML file by path."""
    bundled = bundled_scenarios()
    path = bundled.get(name_or_path)
    if path is None:
        candidate = Path(name_or_path)
        if not candidate.is_file():
            names = ", ".join(bundled)
            raise ConfigError(
                f"scenario {name_or_path!r}: no such bundled scenario or file"
                f"{_scenario_hint(name_or_path, list(bundled))}; bundled: {names}"
            )
        path = candidate
    raw = read_toml(path)
    raw.setdefault("name", path.stem if path not in bundled.values() else name_or_path)
    return raw


def _scenario_hint(name: str, bundled: list[str]) -> str:
    """The bundled names nearest to ``name`` by the part after the game, those of the same game
    first (``harvest/punishment_shok`` finds ``harvest/punishment_shock``; a misspelt game with
    a right name, ``harvst/altruism``, finds ``harvest/altruism``)."""
    if "/" not in name:  # a bare game name: that game's scenarios
        same = [b for b in bundled if b.startswith(f"{name}/")]
        if same:
            return _suggest(same[:3])
    game, _, tail = name.rpartition("/")
    tails: dict[str, list[str]] = {}
    for full in bundled:
        tails.setdefault(full.partition("/")[2], []).append(full)
    near = [full for t in closest(tail, list(tails)) for full in tails[t]]
    near.sort(key=lambda full: not full.startswith(f"{game}/"))  # stable: closeness kept
    return _suggest(near[:3])


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a dict, or a one-line ConfigError saying why it cannot be read."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return _loads_toml(text, str(path))


def _loads_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {_one_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{where}: not valid TOML: nested too deeply") from None


def parse_override(item: str) -> tuple[list[str], Any]:
    """``key=value`` with a TOML value (``beta=12``, ``grid.r=[0.2,0.6]``, ``game="x"``).

    A value that is not TOML is taken as a string. A bare key that is not a
    top-level scenario field is a model parameter (``beta=12`` == ``params.beta=12``).
    """
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item!r}: expected key=value")
    try:
        item.encode("utf-8")
    except UnicodeEncodeError:  # bytes the terminal could not decode (surrogate escapes)
        raise ConfigError(f"--set {key.strip()}: the value is not UTF-8 text") from None
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value
    except RecursionError:
        raise ConfigError(f"--set {key.strip()}: value nested too deeply") from None
    path = key.strip().split(".")
    if len(path) == 1 and path[0] not in Scenario.model_fields:
        path = ["params", path[0]]
    return path, parsed


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    raw = _flatten_llm_axes(raw)  # ``params.llm=...`` (a game's model shorthand) keeps them
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    for item in overrides:
        path, value = parse_override(item)
        if path[:2] == ["grid", "llm"] and len(path) == 3:  # a sweep of an LLM setting: flat,
            path = ["grid", f"{LLM_AXIS_PREFIX}{path[2]}"]  # beside a model axis ``grid.llm``
        if path[0] == "llm" and len(path) == 2:  # an LLM setting replaces its sweep
            _drop_llm_axis(out.get("grid"), path[1])
        if path[0] == "grid" and len(path) == 2 and path[1].startswith(LLM_AXIS_PREFIX):
            # and a sweep replaces the fixed setting
            name = path[-1].removeprefix(LLM_AXIS_PREFIX)
            _drop_llm_axis(out.get("grid"), name)
            if isinstance(out.get("llm"), dict):
                out["llm"] = {k: v for k, v in out["llm"].items() if k != name}
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r}: {part!r} is not a table")
        if path[0] in ("params", "grid") and len(path) == 2:  # a fixed value replaces a sweep
            other = out.get("grid" if path[0] == "params" else "params")  # and vice versa
            if isinstance(other, dict):
                other.pop(path[1], None)
        node[path[-1]] = value
        out = _flatten_llm_axes(out)  # before a later ``grid.llm=[...]`` (a model axis)
    return out


def _drop_llm_axis(grid: Any, name: str) -> None:
    """Remove a sweep of the LLM setting ``name`` from a raw grid, flat or nested."""
    if not isinstance(grid, dict):
        return
    grid.pop(f"{LLM_AXIS_PREFIX}{name}", None)
    if isinstance(grid.get("llm"), dict):
        grid["llm"] = {k: v for k, v in grid["llm"].items() if k != name}
        if not grid["llm"]:
            grid.pop("llm")


def load_scenario(
    name_or_path: str, overrides: list[str] | None = None
) -> tuple[Scenario, BaseModel]:
    return validate(apply_overrides(load_raw(name_or_path), overrides or []))
