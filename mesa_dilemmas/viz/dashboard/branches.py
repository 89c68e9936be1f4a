"""Recorded runs and their branches on the compare page: side by side from the fork.

A recorded run is a finished batch run directory of the page's game under the runs folder
(``runs/`` in the working directory, ``$MESA_DILEMMAS_RUNS_DIR``, or the folder typed on the
page); its branches are the
branch directories (``mesa-dilemmas branch``) that name it as their parent.  The panel lists
the runs, shows one run and its branches with one chart per quantity (the mean over the
branched runs per round, aligned on rounds, a dashed rule at each fork) and a table of the
paired effects, and makes a new branch: a round and a parameter change, run in the page's
thread (:func:`mesa_dilemmas.scenarios.branch.run_branches`), after which it appears beside
its parent.  Branches of a run with LLM seats replay their prefix from the record (no paid
call) and play the rest live, as on the command line.
"""

from __future__ import annotations

import json
import os
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import solara
import solara.lab

from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.charts import Series
from mesa_dilemmas.viz.dashboard.components import ChartGrid, Table, Text, fmt

#: where the panel looks for recorded runs (default: ``runs`` in the working directory)
RUNS_ENV = "MESA_DILEMMAS_RUNS_DIR"
#: at most this many quantities are charted (the game's run metrics first)
MAX_CHARTS = 6


def runs_root() -> Path:
    return Path(os.environ.get(RUNS_ENV) or "runs")


@dataclass(frozen=True)
class Recorded:
    """A finished batch run of one game."""

    path: Path
    name: str
    max_steps: int
    runs: int

    @property
    def label(self) -> str:
        return f"{self.path.name} ({self.name}, {self.runs} runs, {self.max_steps} rounds)"


def _read(path: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    try:
        config = tomllib.loads((path / "config.toml").read_text())
        manifest = json.loads((path / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return config, manifest


def recorded_runs(root: Path, game: str) -> list[Recorded]:
    """The finished batch runs of ``game`` under ``root`` (newest first)."""
    found = []
    if not root.is_dir():
        return []
    for path in sorted(root.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
        read = _read(path) if path.is_dir() else None
        if read is None:
            continue
        config, manifest = read
        if config.get("game") != game or str(config.get("experiment", "batch")) != "batch":
            continue
        if not (path / "steps.parquet").is_file():
            continue
        found.append(
            Recorded(
                path=path,
                name=str(config.get("name", path.name)),
                max_steps=int(config.get("max_steps", 0)),
                runs=len(manifest.get("seeds", [])) * _cells(config),
            )
        )
    return found


def _cells(config: dict[str, Any]) -> int:
    n = 1
    for values in (config.get("grid") or {}).values():
        n *= len(values)
    return n


def branch_dirs(root: Path, parent: Path) -> list[Path]:
    """The branch directories under ``root`` whose parent is ``parent`` (oldest first)."""
    out = []
    if not root.is_dir():
        return out
    target = str(parent.resolve())
    for path in sorted(root.iterdir(), key=lambda p: p.stat().st_mtime):
        try:
            manifest = json.loads((path / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        if manifest.get("kind") == "branch" and str(Path(manifest["parent"]).resolve()) == target:
            out.append(path)
    return out


@dataclass
class Family:
    """A run and its branches as per-round means, ready to chart."""

    parent: Path
    #: per-round means: one frame per line (``Step`` and the quantities), the parent first
    lines: dict[str, pd.DataFrame]
    #: the fork round of each branch line
    forks: dict[str, int]
    effects: pd.DataFrame
    quantities: list[str]


def load_family(parent: Path, branches: list[Path], metrics: list[str]) -> Family:
    steps = pd.read_parquet(parent / "steps.parquet")
    numeric = [
        c
        for c in steps.columns
        if c not in ("RunId", "iteration", "seed", "Step")
        and pd.api.types.is_numeric_dtype(steps[c])
    ]
    quantities = [m for m in metrics if m in numeric] or numeric
    quantities = quantities[:MAX_CHARTS]
    lines = {"parent run": steps.groupby("Step")[quantities].mean().reset_index()}
    forks: dict[str, int] = {}
    effects = []
    for path in branches:
        frame = pd.read_parquet(path / "steps.parquet")
        for label, rows in frame.groupby("branch", sort=False):
            name = str(label) if len(branches) == 1 else f"{label} ({path.name[-15:]})"
            have = [q for q in quantities if q in rows.columns]
            lines[name] = rows.groupby("Step")[have].mean().reset_index()
            forks[name] = int(rows["at"].iloc[0])
        if (path / "effects.csv").is_file():
            effects.append(pd.read_csv(path / "effects.csv"))
    table = pd.concat(effects, ignore_index=True) if effects else pd.DataFrame()
    return Family(parent, lines, forks, table, quantities)


def family_chart(family: Family, quantity: str) -> dict[str, Any]:
    """One quantity of the run and its branches over rounds, a dashed rule at each fork."""
    series = [
        Series(name, frame[quantity].tolist(), x=frame["Step"].tolist())
        for name, frame in family.lines.items()
        if quantity in frame.columns
    ]
    spec = vega.line(quantity.replace("_", " ").capitalize(), series)
    forks = sorted(set(family.forks.values()))
    if forks and "layer" in spec:
        marks = {"values": [{"x": r - 0.5, "label": f"fork: round {r}"} for r in forks]}
        spec["layer"] = [
            *spec["layer"],
            {
                "data": marks,
                "mark": {"type": "rule", "strokeDash": [6, 4], "strokeWidth": 1.5},
                "encoding": {
                    "x": {"field": "x", "type": "quantitative"},
                    "color": {"value": "#888888"},
                    "tooltip": [{"field": "label", "title": "branch"}],
                },
            },
            {
                "data": marks,
                "mark": {"type": "text", "align": "left", "baseline": "top", "dx": 3, "y": 2},
                "encoding": {
                    "x": {"field": "x", "type": "quantitative"},
                    "text": {"field": "label"},
                    "color": {"value": "#888888"},
                },
            },
        ]
    return spec


def _parse(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def make_branch(parent: Path, at: int, key: str, value: str, root: Path) -> Path:
    """Run one branch of ``parent`` (``key`` = ``value`` from round ``at``) into ``root``."""
    from mesa_dilemmas.scenarios.branch import BranchSpec, BranchTable, run_branches

    spec = BranchSpec(label=f"{key}={value} at {at}", at=at, set={key: _parse(value)})
    out = root / f"{parent.name}--branch-{secrets.token_hex(3)}"
    outcome = run_branches(parent, BranchTable(branches=[spec]), out_dir=out)
    return outcome.out_dir


def game_choices(game: str) -> tuple[list[str], list[str]]:
    """(the game's parameters a branch may change, its run metrics) -- registered games only."""
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.dilemmas.base import params_model, shorthand_names
    from mesa_dilemmas.scenarios.branch import game_hooks

    try:
        model_cls = game_model(game)
    except Exception:  # noqa: BLE001 - a page whose path is not a game: no branches
        return [], []
    fixed = set(getattr(game_hooks(model_cls), "FIXED_PARAMS", ())) | {"players"}
    fixed |= set(shorthand_names(model_cls))
    names = [n for n in params_model(model_cls).model_fields if n not in fixed]
    return names, list(getattr(model_cls, "RUN_METRICS", ()) or ())


@solara.component
def BranchPanel(game: str, quantities: tuple[str, ...] = ()) -> None:
    """Pick a recorded run: its branches beside it from the fork; make a new branch.
    ``quantities``: the reporters to chart first (the compare page's), then the game's run
    metrics."""
    folder = solara.use_reactive(str(runs_root()))
    root = Path(folder.value).expanduser()
    parameters, run_metrics = solara.use_memo(lambda: game_choices(game), [game])
    metrics = [*quantities, *(m for m in run_metrics if m not in quantities)]
    refresh = solara.use_reactive(0)
    runs = solara.use_memo(lambda: recorded_runs(root, game), [folder.value, refresh.value])
    chosen = solara.use_reactive(None)
    at = solara.use_reactive(2)
    key = solara.use_reactive(parameters[0] if parameters else "")
    value = solara.use_reactive("")
    request = solara.use_reactive(None)
    status = solara.use_reactive("")
    error = solara.use_reactive(None)

    labels = {r.label: r for r in runs}
    current = labels.get(chosen.value) if chosen.value in labels else (runs[0] if runs else None)
    branches = branch_dirs(root, current.path) if current is not None else []
    family = solara.use_memo(
        lambda: None if current is None else load_family(current.path, branches, metrics),
        [str(current.path) if current else "", len(branches), refresh.value],
    )

    def work() -> None:
        asked = request.value
        if asked is None:
            return
        parent, fork, name, text = asked
        try:
            made = make_branch(Path(parent), fork, name, text, root)
        except Exception as exc:  # noqa: BLE001 - the page says what failed, in one line
            error.value = (str(exc).splitlines() or [type(exc).__name__])[0]
            status.value = "failed"
        else:
            error.value = None
            status.value = f"branch written to {made}"
        request.value = None
        refresh.value += 1

    solara.lab.use_task(work, dependencies=[request.value], prefer_threaded=True)

    with solara.Div(attributes={"data-panel": "branches"}):
        Text("Recorded runs and their branches", tag="h3")
        solara.InputText("Runs folder", value=folder, continuous_update=False)
        if current is None or family is None:
            Text(
                f"No recorded {game} run in {root.resolve()} (mesa-dilemmas run ... --out "
                f"{root}/NAME, or set {RUNS_ENV})."
            )
            return
        Text(
            "A branch replays the run up to the fork from its record (no paid call; the replay "
            "is checked round by round against the recorded state), changes one parameter and "
            "plays on. Its lines are the means over the branched runs; the table pairs each "
            "branch run with the run it forked."
        )
        solara.Select(
            label="Recorded run",
            values=list(labels),
            value=current.label,
            on_value=chosen.set,
        )
        with solara.Div(attributes={"data-form": "branch"}), solara.Row():
            solara.InputInt("Fork at round", value=at, continuous_update=True)
            solara.Select(label="Parameter", values=parameters, value=key)
            solara.InputText("New value", value=value, continuous_update=True)
            solara.Button(
                "Make branch",
                color="primary",
                disabled=request.value is not None or not value.value.strip(),
                on_click=lambda: request.set(
                    (str(current.path), int(at.value), key.value, value.value.strip())
                ),
            )
        if request.value is not None:
            Text("running the branch: replaying the recorded rounds, then playing on ...")
        if error.value:
            with solara.Div(attributes={"data-error": "1"}):
                solara.Error(error.value)
        elif status.value:
            with solara.Div(attributes={"data-status": "branch"}):
                Text(status.value)
        solara.HTML(
            tag="div",
            unsafe_innerHTML="",
            attributes={
                "data-branches": str(len(family.forks)),
                "data-lines": str(len(family.lines)),
                "data-forks": json.dumps(sorted(set(family.forks.values()))),
            },
        )
        if not family.forks:
            Text("No branch of this run yet: pick a round and a parameter change above.")
        else:
            rows = [
                (
                    r.branch,
                    r.metric,
                    fmt(r.parent_mean),
                    fmt(r.branch_mean),
                    fmt(r.diff_mean),
                    f"[{fmt(r.ci_low)}, {fmt(r.ci_high)}]",
                    int(r.n),
                )
                for r in family.effects.itertuples()
                if r.metric in family.quantities
            ]
            Table(
                ["branch", "quantity", "parent", "branch", "difference", "95% CI", "runs"],
                rows,
                key="branch-effects",
            )
        token = f"{current.path}:{len(branches)}:{refresh.value}"
        charts = [
            (
                f"branch_{q}",
                lambda q=q: family_chart(family, q),
                family.lines["parent run"][q].tolist(),
            )
            for q in family.quantities
        ]
        ChartGrid(charts, token)
