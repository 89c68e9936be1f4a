"""The pieces every page shares: the page shell around SolaraViz, metrics, charts, tables.

Every number a page shows is also in the DOM as data: a metric is an element
with ``data-metric="<key>"`` and ``data-value="<raw value>"``, a chart has a
caption with ``data-chart``, ``data-points`` and ``data-last``.  People read
the labels; the browser tests read the attributes and check that they change.
Each of these also carries ``data-token``, the snapshot it shows (the status
line has the current one): a test knows the page has caught up with a round when
every ``data-token`` equals the status line's.
"""

from __future__ import annotations

import html
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import solara
from mesa.visualization import SolaraViz
from mesa.visualization.utils import force_update, update_counter
from solara.widgets import VegaLite

from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage

CSS = """
.mdd-metrics { display: flex; flex-wrap: wrap; gap: 10px; margin: 4px 0 8px 0; }
.mdd-metric { border: 1px solid #ddd; border-radius: 6px; padding: 6px 12px; min-width: 110px; }
.mdd-metric-label { font-size: 11px; color: #666; }
.mdd-metric-value { font-size: 19px; font-weight: 600; }
.mdd-caption { font-size: 11px; color: #777; margin-top: 2px; }
.vega-embed { width: 100%; }
.mdd-table { border-collapse: collapse; font-size: 12px; width: 100%; }
.mdd-table th, .mdd-table td { border-bottom: 1px solid #eee; padding: 3px 6px; text-align: left;
  vertical-align: top; }
.mdd-pre { white-space: pre-wrap; font-family: monospace; font-size: 11.5px; background: #f6f6f6;
  padding: 6px 8px; border-radius: 4px; max-height: 260px; overflow-y: auto; margin: 2px 0 6px 0; }
.mdd-policy { font-size: 15px; font-style: italic; padding: 6px 0; }
.mdd-status { font-size: 13px; margin: 4px 0; }
h2 { font-weight: 400; margin: 8px 0 4px 0; }
.mdd-error { color: #b00020; font-weight: 600; }
.mdd-scroll { max-height: 420px; overflow-y: auto; }
"""


def fmt(value: Any, digits: int = 3) -> str:
    """A number as people read it: 231.4, 0.853, 12; n/a for missing values."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"
    return str(value)


def raw(value: Any) -> str:
    """A number as the tests read it (full precision, 'nan' for missing)."""
    if value is None:
        return "nan"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(round(value, 6))
    return str(value)


#: the model whose snapshot the page shows, provided by ``ModelView`` (the model object, not
#: its changing token: a changing context value would cost every round an extra render pass)
PageModel = solara.create_context(None)


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    value: Any
    digits: int = 3


@solara.component
def Metrics(items: Sequence[Metric]) -> None:
    """A row of labelled numbers, each with ``data-metric`` / ``data-value``."""
    page_model = solara.use_context(PageModel)
    token = page_model.token if page_model is not None else ""
    cells = "".join(
        f'<div class="mdd-metric" data-metric="{html.escape(m.key)}" data-value="{html.escape(raw(m.value))}">'
        f'<div class="mdd-metric-label">{html.escape(m.label)}</div>'
        f'<div class="mdd-metric-value">{html.escape(fmt(m.value, m.digits))}</div></div>'
        for m in items
    )
    solara.HTML(tag="div", unsafe_innerHTML=cells, classes=["mdd-metrics"],
                attributes={"data-token": token} if token else None)  # fmt: skip


@solara.component
def Chart(
    key: str, token: str, draw: Callable[[], Any], points: int, last: Any = None, note: str = ""
) -> None:
    """A chart, recomputed only when the model's snapshot changes (``token``): a Vega-Lite spec
    (a dict, drawn in the browser with hover values; see :mod:`.vega`) or PNG bytes.

    The element under it carries ``data-chart`` / ``data-points`` / ``data-last`` for the
    tests; people see only the optional ``note``."""
    figure = solara.use_memo(draw, dependencies=[key, token])
    if isinstance(figure, dict):
        VegaLite.element(spec=figure)
    else:
        solara.Image(figure, format="png")
    solara.HTML(
        tag="div",
        unsafe_innerHTML=html.escape(note),
        classes=["mdd-caption"],
        attributes={
            "data-chart": key,
            "data-points": str(points),
            "data-last": raw(last),
            "data-token": token,
        },  # fmt: skip
    )


@solara.component
def Text(text: str, *, bold: str = "", tag: str = "div", key: str = "") -> None:
    """Escaped text, optionally led by a bold part.  (``solara.Markdown`` would load mermaid and
    KaTeX from the CDN on every render, which offline means a failed request each time.)"""
    inner = (f"<b>{html.escape(bold)}</b> " if bold else "") + html.escape(text)
    solara.HTML(tag=tag, unsafe_innerHTML=inner, attributes={"data-text": key} if key else None)


#: a chart of a page: (key, draw -> Vega-Lite spec or PNG bytes, the values it plots: counted,
#: the last one kept for the tests)
ChartItem = tuple[str, Callable[[], bytes], Sequence[Any]]
#: a table shown in the chart grid: (title, columns, rows, key)
TableItem = tuple[str, Sequence[str], Sequence[Sequence[Any]], str]


@solara.component
def ChartGrid(charts: Sequence[ChartItem], token: str, tables: Sequence[TableItem] = ()) -> None:
    """The page's charts, two per row on wide screens, then any tables in the same grid."""
    with solara.ColumnsResponsive(12, large=6):
        for key, draw, values in charts:
            with solara.Card(margin=0):
                Chart(key, token, draw, len(values), values[-1] if len(values) else None)
        for title, columns, rows, key in tables:
            with solara.Card(title, margin=0):
                Table(columns, rows, key=key)


def table_html(columns: Sequence[str], rows: Sequence[Sequence[Any]], key: str = "") -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    attr = f' data-table="{html.escape(key)}" data-rows="{len(rows)}"' if key else ""
    return f'<table class="mdd-table"{attr}><tr>{head}</tr>{body}</table>'


@solara.component
def Table(columns: Sequence[str], rows: Sequence[Sequence[Any]], key: str = "") -> None:
    """A plain table (every cell escaped: LLM text may contain anything)."""
    solara.HTML(tag="div", unsafe_innerHTML=table_html(columns, rows, key), classes=["mdd-scroll"])


@solara.component
def Pre(text: str, key: str = "") -> None:
    """Preformatted text (prompts, answers, meeting transcripts), escaped."""
    attributes = {"data-text": key} if key else None
    solara.HTML(
        tag="div", unsafe_innerHTML=html.escape(text), classes=["mdd-pre"], attributes=attributes
    )


@solara.component
def RoundStatus(model: DashboardModel, tick: int = 0) -> None:
    """Round, state and errors; while a round runs in the worker, ticks the page once a second
    (``ModelView``, its parent, re-renders on every tick and Step and passes Mesa's update
    counter as ``tick``: changed arguments make this component re-render too)."""
    job = model.job

    def wait(cancel: threading.Event) -> None:
        if job is None:
            return
        while not job.done.wait(1.0):
            if cancel.is_set():
                return
            force_update()  # live elapsed time and LLM calls while the round runs
        if not cancel.is_set():
            force_update()

    solara.use_thread(wait, dependencies=[job], intrusive_cancel=False)

    if model.error:
        state = "error"
    elif model.busy:
        state = "playing"
    elif model.game_running:
        state = "ready"
    else:
        state = "finished"
    unit = model.page.unit
    seed = f"seed {model.seed}{' (drawn at random)' if model.seed_drawn else ''}"
    if model.seed_invalid:  # no run was started: a stand-in seed would only confuse
        seed = "no seed (the seed box is invalid)"
    text = f"{unit} {model.round} · {seed}"
    if state == "playing" and job is not None:
        text = f"playing {unit} {job.round}… (LLM agents are answering; the page stays usable)"
    elif state == "finished":
        text += " · the game is over (Reset to play again)"
    solara.HTML(
        tag="div",
        unsafe_innerHTML=html.escape(text),
        classes=["mdd-status"],
        attributes={
            "data-status": state,
            "data-round": str(model.round),
            "data-model": model.uid,
            "data-refused-ticks": str(model.refused_ticks),
            "data-token": model.token,
        },
    )
    if state == "playing":
        solara.ProgressLinear(True)
    if model.error:
        with solara.Div(attributes={"data-error": "1"}):
            solara.Error(model.error)
        if model.detail:
            with solara.Details("details", expand=False):
                Pre(model.detail)


@solara.component
def RunSettings(model: DashboardModel) -> None:
    """The parameters the current game was built with (the sliders show what the next Reset uses)."""
    labels = solara.use_memo(
        lambda: {
            k: v["label"]
            for k, v in model.page.controls().items()
            if isinstance(v, dict) and "label" in v
        },
        [model.page.path],
    )  # the sidebar's words, not the code names
    rows = sorted((labels.get(k, k.replace("_", " ")), v) for k, v in model.params.items())
    if model.n_llm_agents:
        rows.append(("LLM agents", f"{model.n_llm_agents} on {model.llm_choice.spec}"))
    with solara.Details("parameters of this run", expand=False):
        Table(["parameter", "value"], rows, key="run-settings")


def run_table(model: DashboardModel) -> Any:
    """The game's per-round data (its DataCollector's model variables) as a DataFrame, or None.

    Read only between rounds (``None`` while a round is played, or for a game without a
    DataCollector); the seed is a column so a saved file says which run it is."""
    collector = getattr(model.game, "datacollector", None)
    if collector is None or model.busy:
        return None
    frame = collector.get_model_vars_dataframe().copy()
    frame.index.name = model.page.unit if model.page.unit not in frame.columns else "row"
    frame.insert(0, "seed", model.seed)
    return frame


def export_bytes(model: DashboardModel, kind: str) -> bytes:
    """The run's data as CSV or Parquet bytes (an empty file while a round is played)."""
    import io

    frame = run_table(model)
    if frame is None:
        return b""
    if kind == "csv":
        return frame.to_csv().encode()
    buffer = io.BytesIO()
    # object columns (event names, meeting texts) as text: Parquet needs one type per column
    frame.astype({c: "string" for c in frame.columns if frame[c].dtype == object}).to_parquet(
        buffer
    )
    return buffer.getvalue()


@solara.component
def Export(model: DashboardModel, tick: int = 0) -> None:
    """Download the run's data (one row per round); each chart saves itself (its ``…`` menu)."""
    if getattr(model.game, "datacollector", None) is None:
        return
    stem = f"{model.page.path}_seed{model.seed}_{model.page.unit}{model.round}"
    with solara.Row(classes=["mdd-export"]):
        for kind in ("csv", "parquet"):
            solara.FileDownload(
                lambda kind=kind: export_bytes(model, kind),
                filename=f"{stem}.{kind}",
                label=f"download the data ({kind.upper()})",
            )


def default_params(controls: dict[str, Any]) -> dict[str, Any]:
    """The values Mesa's controls start from (fixed entries as they are)."""
    return {
        k: (v["value"] if isinstance(v, dict) and "type" in v else v) for k, v in controls.items()
    }


def navigation() -> None:
    """The page tabs in the app bar, with the routes' labels ("public goods", not the route's
    ``public_goods``, which Solara's default tabs show).  Call inside a page's render."""
    router = solara.use_router()
    current, routes = solara.use_route(level=-1)
    if len(routes) < 2:
        return
    index = routes.index(current) if current in routes else 0

    def go(i: int) -> None:
        router.push(solara.resolve_path(routes[i], level=-1))

    with solara.AppBar(), solara.lab.Tabs(value=index, on_value=go, align="center"):
        for route in routes:
            solara.lab.Tab(route.label or route.path)


@solara.component
def GameScreen(page: GamePage) -> None:
    """One game's page: SolaraViz's controls in the sidebar, the page's panels in the main area.

    The panels are rendered here, beside SolaraViz, from the same reactive model, rather
    than in SolaraViz's component area: that area is a grid of fixed-height cards dragged
    and resized by hand, which suits a user's own page (see ``agent_views``) better than
    the long game pages."""
    controls = solara.use_memo(lambda: {"page": page, **page.controls()}, [])
    model = solara.use_reactive(
        solara.use_memo(lambda: DashboardModel(**default_params(controls)), [])
    )
    solara.use_effect(lambda: model.value.close, [model.value])
    solara.Style(CSS)
    navigation()
    SolaraViz(model, components=[], model_params=controls, name=page.title, play_interval=300)
    ModelView(model.value)


@solara.component
def ModelView(model: DashboardModel) -> None:
    """Title, status, the page's panels on the latest snapshot, the LLM panel, the run's settings."""
    tick = update_counter.get()  # re-render after every Step, Reset and live tick
    from mesa_dilemmas.viz.dashboard.llm_panel import LLMPanel  # it builds on this module

    PageModel.provide(model)
    version = model.version
    solara.use_effect(lambda: model.shown(version), [model.uid, version])  # Play may go on
    with solara.Div(attributes={"data-page": model.page.path}):
        Text(model.page.title, tag="h2")
        Text(model.page.summary)
        RoundStatus(model, tick)
        if model.view is not None:
            model.page.panels(view=model.view, model=model)
        if model.llm is not None:
            LLMPanel(model, tick)
        if model.view is not None:
            Export(model, tick)
        RunSettings(model)
