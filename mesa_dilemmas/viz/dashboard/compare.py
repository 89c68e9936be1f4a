"""The compare page: two settings of one game side by side, same seed, stepping together.

The sidebar holds two copies of the game page's parameters ("setting A" and
"setting B"; B starts with punishment switched off) and one seed.  Reset builds
both games with that seed, Step and ▶ play a round of each, and the main area shows
what differs between the settings, the numbers of both now, their agent views side by
side and one chart per quantity with both settings' lines.

The two games are :class:`~.runtime.DashboardModel` objects (so a game that cannot be
built is an error on the page, and the seed means what it means on the game's own
page); :class:`CompareModel` is the Mesa model Mesa's controls drive.  LLM agents are
not offered here: both settings play rule agents, round by round in the page's thread.

Below them, recorded runs of the game and their counterfactual branches (:mod:`.branches`):
a run and its branches side by side from the fork, and a form that makes a new branch.
"""

from __future__ import annotations

import math
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mesa
import solara
import solara.lab

from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.branches import BranchPanel
from mesa_dilemmas.viz.dashboard.charts import Series
from mesa_dilemmas.viz.dashboard.components import (
    CSS,
    ChartGrid,
    PageModel,
    RunControls,
    Table,
    Text,
    default_params,
    fmt,
    navigation,
    raw,
    status_line,
)
from mesa_dilemmas.viz.dashboard.llm_run import LLMChoice
from mesa_dilemmas.viz.dashboard.runtime import (
    DashboardModel,
    GamePage,
    coerce_seed,
    play_tick,
)
from mesa_dilemmas.viz.dashboard.theme import ThemeToggle


@dataclass(frozen=True)
class Quantity:
    """One quantity compared: a series of the page's snapshot (``view.series[key]``)."""

    key: str
    label: str
    ylabel: str = ""
    #: per-round quantities start at round 1 (nothing happens at round 0)
    per_round: bool = False


@dataclass(frozen=True)
class ComparePage:
    """What the compare page needs of a game page: its page, the quantities, B's defaults."""

    page: GamePage
    quantities: tuple[Quantity, ...]
    #: how setting B differs from the page's defaults at first
    b_defaults: Callable[[dict[str, Any]], dict[str, Any]]
    #: the agent view of one setting (a component taking the setting's DashboardModel)
    agent_view: Callable[[DashboardModel], Any] | None = None
    #: the route of the compare page, and what the home page says of it
    path: str = "compare"
    title: str = "Compare two settings"
    summary: str = "Two games side by side, from the same seed and stepping together."
    #: the registered game whose recorded runs and branches the page shows below the two
    #: settings (:mod:`.branches`; default: the game page's path)
    game: str | None = None


#: the page's parameters that the compare page does not show (one seed for both; no LLMs)
HIDDEN = {"rng", "llm_agents", *LLMChoice.KEYS}


def setting_specs(page: GamePage) -> dict[str, Any]:
    """The game page's parameter inputs without the seed and the LLM ones."""
    return {k: v for k, v in page.controls().items() if k not in HIDDEN}


class CompareModel(mesa.Model):
    """Two games of one page, settings ``a`` and ``b``, built with the same seed and stepped
    together (re-created by Mesa's Reset with the sidebar's values)."""

    def __init__(
        self,
        *,
        compare: ComparePage,
        a: dict[str, Any],
        b: dict[str, Any],
        rng: Any = None,
        scenario: Any = None,  # Mesa's Reset passes one; the seed comes from ``rng``
    ) -> None:
        self.compare = compare
        page = compare.page
        try:
            seed = coerce_seed(rng if rng is not None else getattr(scenario, "rng", None))
            error = None
        except ValueError as exc:
            seed, error = None, str(exc)
        self.seed_drawn = seed is None and error is None
        self.seed: int = secrets.randbelow(2**31) if seed is None else seed
        super().__init__(rng=self.seed)
        self.settings = {"A": dict(a), "B": dict(b)}
        self.sides = {
            name: DashboardModel(page=page, rng=self.seed, **values, llm_agents=0)
            if "llm_agents" in page.controls()
            else DashboardModel(page=page, rng=self.seed, **values)
            for name, values in self.settings.items()
        }
        self.error = error or next(
            (f"setting {n}: {m.error}" for n, m in self.sides.items() if m.error), None
        )
        self.uid = secrets.token_hex(4)
        self.version = 0
        self.refused_ticks = 0
        self.shown_version = 0
        self._shown = threading.Condition()
        self.running = self.error is None and any(m.game_running for m in self.sides.values())
        self.step = self._step_if_ready  # type: ignore[method-assign]

    @property
    def round(self) -> int:
        return max(m.round for m in self.sides.values())

    @property
    def token(self) -> str:
        return f"{self.uid}:{self.version}"

    def shown(self, version: int) -> None:
        with self._shown:
            self.shown_version = max(self.shown_version, version)
            self._shown.notify_all()

    def _step_if_ready(self) -> None:
        """As :meth:`.runtime.DashboardModel._step_if_ready`: a Play tick waits for the page and
        a tick of a paused Play loop is refused."""
        tick = play_tick()
        if tick == "current":
            with self._shown:
                self._shown.wait_for(
                    lambda: self.shown_version >= self.version, DashboardModel.SHOWN_TIMEOUT_S
                )
            tick = play_tick()
        if tick == "stale":
            self.refused_ticks += 1
            return
        if not self.running:
            return
        self.run_for(1)

    def step(self) -> None:
        """A round of each setting still running (a finished game stays where it ended)."""
        for side in self.sides.values():
            if side.game_running:
                side._play_round()
        self.version += 1
        self.running = self.error is None and any(m.game_running for m in self.sides.values())

    def differences(self) -> list[tuple[str, str, str]]:
        """(parameter words, A's value, B's value) for every parameter that differs."""
        specs = setting_specs(self.compare.page)
        a, b = self.settings["A"], self.settings["B"]
        return [
            (
                spec.get("label", key) if isinstance(spec, dict) else key,
                fmt(a.get(key)),
                fmt(b.get(key)),
            )
            for key, spec in specs.items()
            if a.get(key) != b.get(key)
        ]


@solara.component
def CompareScreen(compare: ComparePage) -> None:
    """The compare page: Mesa's controls and both settings in the sidebar, both games beside."""
    from mesa_dilemmas.viz.dashboard.inputs import ParameterInputs

    page = compare.page
    specs = solara.use_memo(lambda: setting_specs(page), [])
    seed_spec = solara.use_memo(lambda: page.controls().get("rng"), [])

    def initial() -> dict[str, Any]:
        a = default_params(specs)
        return {
            "compare": compare,
            "a": a,
            "b": {**a, **compare.b_defaults(specs)},
            "rng": default_params({"rng": seed_spec})["rng"] if seed_spec else 42,
        }

    params = solara.use_reactive(solara.use_memo(initial, []))
    model = solara.use_reactive(solara.use_memo(lambda: CompareModel(**params.value), []))

    def change(side: str) -> Callable[[str, Any], None]:
        def set_value(name: str, value: Any) -> None:
            params.value = {**params.value, side: {**params.value[side], name: value}}

        return set_value

    def set_seed(_name: str, value: Any) -> None:
        params.value = {**params.value, "rng": value}

    solara.Style(CSS)
    navigation()
    with solara.AppBar():
        solara.AppBarTitle(f"Compare two settings: {page.title}")
        ThemeToggle()
    with solara.Sidebar(), solara.Column(classes=["mdd-sidebar"]):
        with solara.Card("Run both", margin=0):
            RunControls(model, params)
            if seed_spec:
                ParameterInputs({"rng": seed_spec}, {"rng": params.value["rng"]}, set_seed)
        for side in ("a", "b"):
            with (
                solara.Card(f"Setting {side.upper()}", margin=0),
                solara.Div(attributes={"data-setting": side}),
            ):
                ParameterInputs(specs, params.value[side], change(side))
    CompareView(model.value)
    BranchPanel(compare.game or page.path, tuple(q.key for q in compare.quantities))


@solara.component
def CompareView(model: CompareModel) -> None:
    """Status, what differs, the numbers of both, the agent views side by side, the charts."""
    from mesa.visualization.utils import update_counter

    update_counter.get()  # re-render after every Step, Reset and Play tick
    PageModel.provide(model)  # the charts' download names (``components.chart_filename``)
    version = model.version
    solara.use_effect(lambda: model.shown(version), [model.uid, version])
    compare, page = model.compare, model.compare.page
    with solara.Div(attributes={"data-page": "compare", "data-game": page.path}):
        Text(f"Compare two settings: {page.title}", tag="h2")
        Text(
            "Both games start from the same seed, so they begin with the same villagers; "
            "every difference that follows comes from the settings. Step plays a round of each."
        )
        state = "error" if model.error else ("ready" if model.running else "finished")
        seed = f"seed {model.seed}{' (drawn at random)' if model.seed_drawn else ''}"
        status_line(model, state, f"{page.unit} {model.round} · {seed} (both settings)")
        if model.error:
            with solara.Div(attributes={"data-error": "1"}):
                solara.Error(model.error)
            return
        differences = model.differences()
        Text("", bold="What differs")
        if differences:
            Table(["parameter", "setting A", "setting B"], differences, key="differences")
        else:
            Text("nothing: both settings are the same (change one in the sidebar, then Reset)")
        views = {name: side.view for name, side in model.sides.items()}
        rows = []
        cells = []
        for q in compare.quantities:
            last = {n: _last(v.series.get(q.key, [])) for n, v in views.items()}
            rows.append((q.label, last["A"], last["B"]))
            cells += [
                f'<span data-metric="{side.lower()}:{q.key}" data-value="{raw(value)}"></span>'
                for side, value in last.items()
            ]
        Table(["now", "setting A", "setting B"], rows, key="compare-now")
        solara.HTML(
            tag="div", unsafe_innerHTML="".join(cells), attributes={"data-token": model.token}
        )
        if compare.agent_view is not None:
            with solara.Columns([1, 1]):
                for name, side in model.sides.items():
                    with solara.Column():
                        Text("", bold=f"Setting {name}")
                        compare.agent_view(side)

        def chart(q: Quantity) -> Any:
            lines = []
            for name, view in views.items():
                y = view.series.get(q.key, [])
                start = 1 if q.per_round else 0
                lines.append(Series(f"setting {name}", y[start:], x=range(start, len(y))))
            return vega.line(q.label.capitalize(), lines, ylabel=q.ylabel)

        charts = [
            (
                q.key,
                lambda q=q: chart(q),
                views["A"].series.get(q.key, [])[(1 if q.per_round else 0) :],
            )
            for q in compare.quantities
        ]
        ChartGrid(charts, model.token)


def _last(values: list[float]) -> float:
    return values[-1] if values else math.nan
