"""The pieces every page shares: the page shell (sidebar and main area), metrics, charts, tables.

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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import solara
import solara.lab
from mesa.visualization.utils import force_update

from mesa_dilemmas.viz.dashboard.runtime import DashboardModel
from mesa_dilemmas.viz.dashboard.vega_widget import VegaChart, download_name, with_token

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
.mdd-pre.mdd-whole { max-height: none; overflow-y: visible; }
.mdd-llm-transcripts { max-height: 480px; overflow-y: auto; }
.mdd-policy { font-size: 15px; font-style: italic; padding: 6px 0; }
.mdd-status { font-size: 13px; margin: 4px 0; }
h2 { font-weight: 400; margin: 8px 0 4px 0; }
.mdd-error { color: #b00020; font-weight: 600; }
.mdd-scroll { max-height: 420px; overflow-y: auto; }
/* sliders: the label on its own line above the track (a long label never squeezes the
   track), the value box at the track's right */
.mdd-param { margin: 2px 0 6px 0; display: flex; align-items: flex-end; gap: 8px; }
.mdd-param > .mdd-slider { flex: 1 1 auto; min-width: 0; }
.mdd-slider .v-input__slot { flex-wrap: wrap; }
.mdd-slider .v-input__slot > .v-label { flex: 0 0 100%; max-width: 100%; white-space: normal;
  height: auto; line-height: 1.25; margin: 0 0 -2px 0; font-size: 13px; }
.mdd-value { width: 112px; flex: 0 0 112px; }
.mdd-value input { text-align: right; }
/* the style sheets and portals before a page's content are empty divs: no gaps for them */
.solara-autorouter-content > .v-sheet > div:empty { display: none; }
/* the page tabs: the pages' names as written, small enough that all fit at 1400 px */
.v-tab { text-transform: none !important; letter-spacing: normal !important; min-width: 0 !important;
  padding: 0 12px !important; font-size: 15px; }
.theme--dark .mdd-metric { border-color: #444; }
.theme--dark .mdd-metric-label, .theme--dark .mdd-caption { color: #aaa; }
.theme--dark .mdd-pre { background: #2a2a2a; }
.theme--dark .mdd-table th, .theme--dark .mdd-table td { border-bottom-color: #333; }
.v-app-bar .v-tab--active { color: #ffffff !important; }
.mdd-sidebar .v-card__title { padding-bottom: 4px; }
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
    solara.HTML(
        tag="div",
        unsafe_innerHTML=cells,
        classes=["mdd-metrics"],
        attributes={"data-token": token} if token else None,
    )


def latest_values(spec: Any) -> tuple[Any, dict[str, float]]:
    """(the last x, {series: its last value}) of a line chart's spec (``vega.line``: rows with
    ``x``, ``y`` and ``series``); (None, {}) for other charts."""
    data = spec.get("data", {}) if isinstance(spec, dict) else {}
    rows = data.get("values") if isinstance(data, dict) else None
    if not rows or not all(isinstance(r, dict) and {"x", "y", "series"} <= r.keys() for r in rows):
        return None, {}
    last: dict[str, tuple[float, float]] = {}
    for r in rows:
        if r["x"] is None or r["y"] is None:
            continue
        if r["series"] not in last or r["x"] >= last[r["series"]][0]:
            last[r["series"]] = (r["x"], r["y"])
    if not last:
        return None, {}
    x = max(v[0] for v in last.values())
    return x, {name: y for name, (_, y) in last.items()}


def latest_caption(spec: Any, unit: str = "round") -> str:
    """What a line chart shows now, in words: "round 16: stock 250" (every series)."""
    x, values = latest_values(spec)
    if x is None:
        return ""
    where = f"{unit} {int(x)}" if float(x).is_integer() else f"{unit} {fmt(x)}"
    return f"{where}: " + " · ".join(f"{name} {fmt(y)}" for name, y in values.items())


def chart_filename(page_model: Any, key: str, side: str = "") -> str:
    """The name a chart downloads under: the game, the seed and the chart
    (``lake_seed42_stock`` for a game ``lake``; on the compare page
    ``compare_lake_seed42_stock``, with the setting for an agent view: ``..._lake-ring_settingB``)."""
    seed = getattr(page_model, "seed", None)
    seed_part = f"seed{seed}" if seed is not None else ""
    if isinstance(page_model, DashboardModel):
        return download_name(page_model.page.path, seed_part, key)
    compare = getattr(page_model, "compare", None)
    if compare is not None:
        setting = f"setting{side}" if side else ""
        return download_name("compare", compare.page.path, seed_part, key, setting)
    return download_name(key)


@solara.component
def Chart(
    key: str, token: str, draw: Callable[[], Any], points: int, last: Any = None, note: str = ""
) -> None:
    """A chart, recomputed only when the model's snapshot changes (``token``): a Vega-Lite spec
    (a dict, drawn in the browser with hover values; see :mod:`.vega`) or PNG bytes.

    Under it a caption says what the chart shows now, every series ("round 16: compliance 0.3
    · mean effort 0.52"), or the ``note`` given.  The caption also carries ``data-chart`` /
    ``data-points`` / ``data-last`` (the values the page counted, for the tests) and
    ``data-latest`` (every series' last value, as JSON)."""
    import json

    figure = solara.use_memo(draw, dependencies=[key, token])
    is_spec = isinstance(figure, dict)
    # A spec goes to the widget directly, not as an element argument: reacton walks every
    # argument (a spec holds a row per point and series) on every render of the page, which
    # made a Step slower the longer the game ran.
    plot = VegaChart.element(spec={}) if is_spec else solara.Image(figure, format="png")

    def push() -> None:
        if not is_spec:
            return
        try:
            widget = solara.get_widget(plot)
        except KeyError:  # this render was replaced before its effects ran; the next one pushes
            return
        widget.spec = with_token(figure, token, filename)

    page_model = solara.use_context(PageModel)
    filename = chart_filename(page_model, key)

    solara.use_effect(push, [key, token])
    unit = page_model.page.unit if isinstance(page_model, DashboardModel) else "round"
    _, latest = latest_values(figure)
    solara.HTML(
        tag="div",
        unsafe_innerHTML=html.escape(note or latest_caption(figure, unit)),
        classes=["mdd-caption"],
        attributes={
            "data-chart": key,
            "data-points": str(points),
            "data-last": raw(last),
            "data-latest": json.dumps({k: raw(v) for k, v in latest.items()}),
            "data-token": token,
        },
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
def Pre(text: str, key: str = "", whole: bool = False) -> None:
    """Preformatted text (prompts, answers, meeting transcripts), escaped; scrolled within a
    box of limited height, or ``whole`` (a meeting: every line shown, none cut at the box's
    edge)."""
    attributes = {"data-text": key} if key else None
    classes = ["mdd-pre", "mdd-whole"] if whole else ["mdd-pre"]
    solara.HTML(
        tag="div", unsafe_innerHTML=html.escape(text), classes=classes, attributes=attributes
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
        text += " · the game is over (↺ replay plays it again from the start)"
    status_line(model, state, text)
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
    played = int(model.round)
    if len(frame) == played:  # collected after each round only: its rows are rounds 1..n
        frame.index = range(1, played + 1)
    elif len(frame) == played + 1:  # collected at the start too: rounds 0..n
        frame.index = range(played + 1)
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
    """Download the run's data (one row per round) and its settings as a scenario file that
    ``mesa-dilemmas run`` replays; each chart saves itself (its ``…`` menu)."""
    from mesa_dilemmas.viz.dashboard.save_scenario import scenario_toml

    stem = f"{model.page.path}_seed{model.seed}_{model.page.unit}{model.round}"
    with solara.Row(classes=["mdd-export"]):
        if getattr(model.game, "datacollector", None) is not None:
            for kind in ("csv", "parquet"):
                solara.FileDownload(
                    lambda kind=kind: export_bytes(model, kind),
                    filename=f"{stem}.{kind}",
                    label=f"download the data ({kind.upper()})",
                )
        if model.game is not None:
            solara.FileDownload(
                lambda: scenario_toml(model).encode(),
                filename=f"{model.page.path}_seed{model.seed}.toml",
                label="save as scenario (TOML)",
            )


def default_params(controls: dict[str, Any]) -> dict[str, Any]:
    """The values Mesa's controls start from (fixed entries as they are)."""
    return {
        k: (v["value"] if isinstance(v, dict) and "type" in v else v) for k, v in controls.items()
    }


def navigation() -> None:
    """The page tabs in the app bar, with the routes' labels ("my game", not the route's
    ``my_game``, which Solara's default tabs show).  Call inside a page's render."""
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


#: the pause between rounds while ▶ plays, at first (the sidebar's slider changes it): none,
#: the next round starts once the page has drawn the last one
PLAY_INTERVAL_MS = 0


def play_interval_spec() -> dict[str, Any]:
    return {
        "type": "SliderInt",
        "label": "pause between rounds while playing",
        "value": PLAY_INTERVAL_MS,
        "min": 0,
        "max": 1000,
        "step": 10,
        "unit": "ms",
    }


def status_line(model: Any, state: str, text: str) -> None:
    """The page's status: its words for people, its state, round, model id and snapshot token
    as ``data-*`` attributes for the browser tests."""
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


#: the Play button once the game is over: it plays the game again from the start
REPLAY = "↺ replay"


@solara.component
def RunControls(model: solara.Reactive, params: solara.Reactive) -> None:
    """Reset / Play / Step, and the pause between rounds while Play runs.

    Mesa's ``ModelController`` (same loop, same Reset, which rebuilds the model from
    ``params``), with one change: once the game is over its Play button is ``↺ replay`` --
    Reset and play again from the start -- where Mesa leaves a disabled ❚❚ (the game ended
    while playing) or a disabled ▶, which read as "paused" or "broken" rather than "finished".
    """
    from mesa.visualization.solara_viz import _build_model_init_kwargs

    from mesa_dilemmas.viz.dashboard.inputs import NumberSlider

    interval = solara.use_reactive(PLAY_INTERVAL_MS)
    playing = solara.use_reactive(False)
    running = solara.use_reactive(True)
    error = solara.use_reactive(None)

    def play_loop() -> None:  # Mesa's loop: sleep, then a round, while playing
        try:
            while running.value and playing.value:
                time.sleep(interval.value / 1000)
                do_step()
        except Exception as exc:  # as Mesa: the loop's error under the buttons
            error.value = f"error in step: {exc}"

    solara.lab.use_task(
        play_loop, dependencies=[playing.value, running.value], prefer_threaded=True
    )

    def do_step() -> None:
        model.value.step()
        running.value = model.value.running
        force_update()

    def do_reset() -> None:
        error.set(None)
        playing.value = False
        running.value = True
        kwargs = _build_model_init_kwargs(
            model.value,
            params.value,
            add_scenario_when_empty=True,
            require_model_accepts_scenario=True,
        )
        model.value = type(model.value)(**kwargs)

    def replay() -> None:
        do_reset()
        playing.value = True

    failed = getattr(model.value, "error", None) is not None
    over = not running.value and not failed  # finished (an error keeps a disabled ▶)
    with solara.Row(justify="space-between"):
        solara.Button(label="Reset", color="primary", on_click=do_reset)
        if over:
            solara.Button(
                label=REPLAY,
                color="primary",
                on_click=replay,
                attributes={
                    "title": "the game is over: play it again from the start",
                    "data-play": "finished",
                },
            )
        else:
            solara.Button(
                label="❚❚" if playing.value else "▶",
                color="primary",
                on_click=lambda: playing.set(not playing.value),
                disabled=not running.value,
                attributes={"data-play": "playing" if playing.value else "paused"},
            )
        solara.Button(
            label="Step",
            color="primary",
            on_click=do_step,
            disabled=playing.value or not running.value,
        )
    if error.value:
        solara.Error(label=error.value)
    NumberSlider("play_interval", play_interval_spec(), interval.value, interval.set)
