"""Run a scenario end to end: validate, check LLM access, run, write the run directory.

Nothing is written until the scenario has been validated completely, so a bad
config costs nothing and leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.scenarios import state_hash
from mesa_dilemmas.scenarios.config import (
    ConfigError,
    Scenario,
    check_no_bool_as_number,
    execution_settings,
    load_scenario,
    resolve_experiment,
)
from mesa_dilemmas.scenarios.execution import TaskFailed
from mesa_dilemmas.scenarios.execution import use as run_on
from mesa_dilemmas.scenarios.experiment import RunContext
from mesa_dilemmas.scenarios.outputs import (
    config_differences,
    package_versions,
    write_config,
    write_manifest,
    write_results,
)
from mesa_dilemmas.scenarios.size import check_run_size


class RunStopped(RuntimeError):
    """A run that stopped early on purpose (a budget); what was finished is saved."""


@dataclass
class RunOutcome:
    out_dir: Path
    summary: dict[str, Any]
    wall_time: float


def default_out_dir(scenario: Scenario, root: Path = Path("runs")) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", scenario.name).strip("-")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return root / f"{slug}-{stamp}"


def _llm_specs(scenario: Scenario) -> set[str]:
    """Every LLM spec any run of the scenario would call (fixed params x grid)."""
    model_cls = game_model(scenario.game)
    specs: set[str] = set()
    keys = list(scenario.grid)
    for combo in itertools.product(*scenario.grid.values()) if keys else [()]:
        params = {**scenario.params, **dict(zip(keys, combo, strict=True))}
        specs |= model_cls.llm_specs(params) if hasattr(model_cls, "llm_specs") else set()
    return specs


def _run_notes(scenario: Scenario) -> list[str]:
    """What the game says about the scenario's runs before they start (fixed params x grid),
    each line once."""
    model_cls = game_model(scenario.game)
    notes: dict[str, None] = {}
    keys = list(scenario.grid)
    for combo in itertools.product(*scenario.grid.values()) if keys else [()]:
        params = {**scenario.params, **dict(zip(keys, combo, strict=True))}
        for note in getattr(model_cls, "run_notes", lambda _: [])(params):
            notes[note] = None
    return list(notes)


def _per_round(llm: dict[str, Any], results: Any, reporter: str | None) -> dict[str, Any]:
    """LLM cost per model round, over every round the runs played."""
    rounds = int(results.runs["steps_run"].sum()) if "steps_run" in results.runs else 0
    out: dict[str, Any] = {"rounds": rounds}
    if rounds:
        out["calls_per_round"] = llm.get("calls", 0) / rounds
        out["provider_calls_per_round"] = llm.get("provider_calls", 0) / rounds
        out["tokens_per_round"] = (llm.get("tokens_in", 0) + llm.get("tokens_out", 0)) / rounds
    steps = results.step_columns(["Step", reporter]) if reporter else None  # may be on disk
    if reporter and steps is not None and reporter in steps:
        per = steps.loc[steps["Step"] > 0, reporter].dropna()
        if len(per):
            out["decisions_per_villager_round"] = float(per.max())
            out["mean_decisions_per_villager_round"] = float(per.mean())
    return out


def cap_processes(requested: int, force: bool = False) -> int:
    """The worker processes to start: at most the machine's cores unless ``force``."""
    cores = os.cpu_count() or 1
    if requested <= cores or force:
        return requested
    print(
        f"note: processes {requested} capped at {cores}, the CPU cores of this machine "
        "(--force-processes to start them all)",
        file=sys.stderr,
    )
    return cores


def _check_out_dir(out: Path) -> None:
    """A directory we can create and write in, or one line saying why not (nothing created)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"--out {out}: {parent} is not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"--out {out}: cannot write in {parent} (permission denied)")
            break


def _make_out_dir(out: Path) -> Path | None:
    """Create ``out``; return the topmost directory this created (to remove on failure)."""
    top = next((p for p in [*reversed(out.parents), out] if not p.exists()), None)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create it: {exc.strerror or exc}") from None
    return top


def run_scenario(
    name_or_path: str,
    *,
    out_dir: Path | None = None,
    processes: int | None = None,
    overrides: list[str] | None = None,
    resume: Path | None = None,
    progress: bool = True,
    execution: dict[str, Any] | None = None,
    force_processes: bool = False,
    yes: bool = True,
) -> RunOutcome:
    """Validate and run a scenario; return where its results are. Raises ConfigError early.

    ``processes`` is checked by the same rule as the scenario's field and capped at the
    machine's cores unless ``force_processes``; ``yes=False`` refuses a large run
    (see :mod:`mesa_dilemmas.scenarios.size`) after printing its estimated size.
    ``execution`` overrides fields of the scenario's ``[execution]`` table (``backend``,
    ``address``): where the tasks run, which never changes the results."""
    overrides = list(overrides or [])
    if processes is not None:  # one rule for both routes: the scenario field's
        overrides.append(f"processes={processes}")
    for key, value in (execution or {}).items():
        overrides.append(f"execution.{key}={json.dumps(value)}")
    scenario, options = load_scenario(name_or_path, overrides)
    exec_settings = execution_settings(scenario)
    scenario = scenario.model_copy(
        update={"processes": cap_processes(scenario.processes, force_processes)}
    )
    experiment = resolve_experiment(scenario.experiment)()

    guard = None  # the LLM side of the run (None: no language model takes part)
    specs = _llm_specs(scenario)
    if specs or scenario.llm:
        from mesa_dilemmas.llm.guard import LLMConfigError, RunGuard

        try:
            guard = RunGuard.configure(specs, scenario.llm, game=scenario.game)
            check_no_bool_as_number("llm", scenario.llm, guard.settings.model_dump())
            guard.preflight()
        except LLMConfigError as exc:
            raise ConfigError(str(exc)) from None

    resolved = scenario.model_dump()
    resolved["options"] = options.model_dump()
    if getattr(experiment, "USES_MODEL_PARAMS", True):  # record every model parameter's value
        full = params_model(game_model(scenario.game)).model_validate(scenario.params).model_dump()
        resolved["params"] = {k: v for k, v in full.items() if k not in scenario.grid}

    if resume is not None:
        out = resume
        if not (out / "config.toml").is_file():
            raise ConfigError(f"--resume {out}: not a run directory (no config.toml)")
        differences = config_differences(out / "config.toml", resolved)
        if differences:
            raise ConfigError(
                f"--resume {out}: the configuration differs from the saved one in "
                f"{', '.join(differences)}; resume with the same settings or start a new run"
            )
        finished = (out / "manifest.json").is_file() and (out / "summary.json").is_file()
        if finished and not (out / "partial").is_dir():
            # the manifest is written last: this run finished and kept no chunks to check
            # (with chunks, resuming re-reads them and re-runs any that are damaged)
            print(f"{out}: this run finished earlier; nothing to resume", file=sys.stderr)
            return RunOutcome(out, json.loads((out / "summary.json").read_text()), 0.0)
    else:
        out = out_dir or default_out_dir(scenario)
        _check_out_dir(out)
        if out.exists() and any(out.iterdir()):
            raise ConfigError(
                f"--out {out}: directory exists and is not empty (use --resume to continue it)"
            )
    check_run_size(scenario, options, experiment, yes=yes, llm=bool(specs))
    notes = _run_notes(scenario) if getattr(experiment, "USES_MODEL_PARAMS", True) else []
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if guard is not None and resume is None:  # a paid run: its cost first
        from mesa_dilemmas.scenarios.size import confirm_llm_cost

        confirm_llm_cost(scenario, yes=yes, settings=guard.settings)

    created = None if resume is not None else _make_out_dir(out)
    try:
        write_config(out, resolved)
    except OSError as exc:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise ConfigError(f"--out {out}: cannot write in it: {exc.strerror or exc}") from None

    ctx = RunContext(
        out_dir=out, processes=scenario.processes, progress=progress, resume=resume is not None
    )
    started = time.time()
    try:
        # the LLM session is active inside; the experiment sends its path with every task
        with (
            guard.session(out, resume=resume is not None) if guard else contextlib.nullcontext(),
            run_on(exec_settings, scenario.processes, guard.settings.budget if guard else None),
        ):
            results = experiment.run(scenario, options, ctx)
    except TaskFailed as exc:
        raise RunStopped(
            f"{exc}; the tasks finished so far are saved in {out}: continue with --resume {out}"
        ) from None
    except Exception as exc:
        said = guard.stopped(exc, out) if guard is not None else None
        if said is None:
            raise
        raise RunStopped(said) from None
    wall = time.time() - started
    too_many: list[str] = []
    if guard is not None and guard.summary is not None:
        results.summary["llm"] = guard.summary
        reporter = getattr(game_model(scenario.game), "LLM_DECISIONS_REPORTER", None)
        results.summary["llm_per_round"] = _per_round(guard.summary, results, reporter)
        too_many = guard.over_fallback_limit()
    results.summary["wall_time_s"] = round(wall, 3)
    summary = write_results(out, results)
    # the state after every round, hashed: what a branch of this run checks its replay against
    state_hash.write(out, skip=[*resolved.get("params", {}), *scenario.params, *scenario.grid])
    write_manifest(
        out,
        {
            "scenario": scenario.name,
            "game": scenario.game,
            "experiment": scenario.experiment,
            "command": sys.argv,
            "started_utc": datetime.fromtimestamp(started, UTC).isoformat(),
            "wall_time_s": round(wall, 3),
            "processes": scenario.processes,
            "seed": scenario.seed,
            "seeds": results.seeds,
            "resumed": resume is not None,
            "versions": package_versions(),
            **({"notes": notes} if notes else {}),
        },
    )
    for scratch in results.scratch:  # the tables now hold what these kept for --resume
        shutil.rmtree(scratch, ignore_errors=True)
    if too_many:
        raise RunStopped(
            f"{', '.join(too_many)}: more decisions fell back to the rule than max_fallback_rate "
            f"allows; the results in {out} describe the fallback rule, not the model"
        )
    return RunOutcome(out, summary, wall)
