"""The hosted session's pages (``solara run mesa_dilemmas.viz.host.app``; started by
``mesa-dilemmas host``): ``/`` (enter a join code), ``/play?code=CODE`` (a person's seat) and
``/console?key=KEY`` (the experimenter's console).

Everything a page shows lives on the server, in the session's hubs: a reload or a new browser
with the same join link shows the same seat in the same state (consent given, the open
decision, the draft answer).  Pages re-render when their hub changes (a thread waits on it);
the countdown ticks on its own.  The page puts ``data-*`` attributes next to what it shows
(``data-seat``, ``data-state``, ``data-round``, ``data-pending``, ``data-remaining``,
``data-field``, ``data-group``, ...) for the browser tests.
"""

from __future__ import annotations

import atexit
import html
import json
import os
import time
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import solara
import solara.server.settings

from mesa_dilemmas.agents.decisions import (
    AnswerSpec,
    ChoiceSpec,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.viz.host.render import answer_of, empty, hint, label, observation_html

#: the session's settings (a JSON file written by ``mesa-dilemmas host``)
CONFIG_ENV = "MESA_DILEMMAS_HOST_CONFIG"

solara.server.settings.theme.show_banner = False
solara.server.settings.theme.title = "mesa-dilemmas session"

CSS = """
.host-page { max-width: 920px; margin: 0 auto; padding: 8px 16px; font-size: 15px; }
.host-obs { border-collapse: collapse; margin: 4px 0 10px 0; }
.host-obs th { text-align: left; font-weight: 500; color: #555; padding: 3px 14px 3px 0;
  vertical-align: top; white-space: nowrap; }
.host-obs td { padding: 3px 0; vertical-align: top; }
.host-obs .host-obs { font-size: 13px; }
.host-records { border-collapse: collapse; font-size: 13px; }
.host-records th, .host-records td { padding: 1px 10px 1px 0; text-align: left; }
.host-records th { color: #666; font-weight: 500; border-bottom: 1px solid #ddd; }
.host-none { color: #999; font-style: italic; }
.host-text { white-space: pre-wrap; max-width: 640px; }
.host-field { margin: 4px 0 10px 0; }
.host-field-label { font-weight: 600; font-size: 13px; }
.host-hint { font-size: 12px; color: #777; }
.host-error { color: #b00020; font-weight: 600; margin: 6px 0; }
.host-countdown { font-size: 18px; font-weight: 600; margin: 6px 0; }
.host-countdown.host-late { color: #b00020; }
.host-waiting { font-size: 18px; color: #444; margin: 24px 0; }
.host-table { border-collapse: collapse; font-size: 13px; width: 100%; }
.host-table th, .host-table td { border-bottom: 1px solid #eee; padding: 3px 6px; text-align: left; }
.host-choices .v-btn { text-transform: none !important; letter-spacing: normal !important; }
.host-choices-wide.v-btn-toggle { flex-direction: column; align-items: stretch; }
.host-choices-wide .v-btn { height: auto !important; min-height: 36px; white-space: normal;
  justify-content: flex-start; text-align: left; padding: 6px 12px !important; }
.host-choices-wide .v-btn__content { white-space: normal; flex: 1 1 auto; }
.host-nested { border-left: 3px solid #e3e3e3; padding-left: 10px; }
"""


# -- the session -----------------------------------------------------------------------


@cache
def current_session() -> Any:
    """The session this server hosts (built once per server process from ``CONFIG_ENV``)."""
    from mesa_dilemmas.viz.host.config import load_hosted
    from mesa_dilemmas.viz.host.session import Session

    path = os.environ.get(CONFIG_ENV)
    if not path:
        raise RuntimeError(f"no session: start the server with `mesa-dilemmas host` ({CONFIG_ENV})")
    settings = json.loads(Path(path).read_text())
    hosted = load_hosted(settings["scenario"], settings.get("overrides") or [])
    session = Session(
        hosted, Path(settings["out_dir"]), settings["key"], groups=settings.get("groups")
    )
    atexit.register(_final_export, session)
    return session


def _final_export(session: Any) -> None:
    """When the server stops: groups still playing are stopped and everything is written."""
    if any(g.thread is not None for g in session.groups):
        session.close()
        session.export()


def query() -> dict[str, str]:
    search = solara.use_router().search or ""
    return {k: v[0] for k, v in parse_qs(search).items() if v}


def use_changes(hubs: list[Any], signature: Any = None, every: float = 0.5) -> int:
    """Re-render the calling component when one of ``hubs`` changes -- and, with
    ``signature`` (a function), only when what it returns changes (a seat's page does not
    re-render when another seat answers); returns a counter."""
    tick, set_tick = solara.use_state(0)
    look = signature or (lambda: tuple(h.version for h in hubs))
    seen = look()

    def watch(cancel: Any) -> None:
        version = hubs[0].version if len(hubs) == 1 else None
        while not cancel.is_set():
            if version is not None:
                version = hubs[0].wait_change(version, every)
            else:
                time.sleep(every)
            if look() != seen:
                set_tick(lambda t: t + 1)
                return

    solara.use_thread(watch, dependencies=[seen, tick], intrusive_cancel=False)
    return tick


def Html(text: str, tag: str = "div", classes: list[str] | None = None, **attrs: str) -> None:
    solara.HTML(
        tag=tag,
        unsafe_innerHTML=text,
        classes=classes or [],
        attributes={f"data-{k.replace('_', '-')}": v for k, v in attrs.items()} or None,
    )


def Paragraphs(text: str, key: str) -> None:
    body = "".join(f"<p>{html.escape(p.strip())}</p>" for p in text.strip().split("\n\n") if p)
    Html(body, text_block=key)


# -- the form --------------------------------------------------------------------------


@solara.component
def SpecField(
    spec: AnswerSpec, value: Any, on_value: Any, path: str, name: str = "", top: bool = False
) -> None:
    """One field of a decision's form, built from its spec (nested specs: nested fields)."""
    caption = label(name) if name else ""
    with solara.Div(classes=["host-field"], attributes={"data-field": path}):
        if caption:
            Html(html.escape(caption), classes=["host-field-label"])
        if isinstance(spec, ChoiceSpec):
            if len(spec.options) <= 12:
                wide = max(len(o) for o in spec.options) > 16
                solara.ToggleButtonsSingle(
                    value=value,
                    values=list(spec.options),
                    on_value=on_value,
                    mandatory=False,
                    classes=["host-choices", *(["host-choices-wide"] if wide else [])],
                )
            else:
                solara.Select(
                    caption or "choose", values=list(spec.options), value=value, on_value=on_value
                )
        elif isinstance(spec, NumberSpec):
            text = "" if value is None else str(value)
            solara.InputText(
                caption or "your answer",
                value=text,
                on_value=on_value,
                continuous_update=True,
            )
            if top and spec.high - spec.low > 0:
                try:
                    current = float(text) if text.strip() else float(spec.low)
                except ValueError:
                    current = float(spec.low)
                current = min(max(current, spec.low), spec.high)
                if spec.integer:
                    solara.SliderInt(
                        "", value=int(current), min=int(spec.low), max=int(spec.high),
                        on_value=lambda v: on_value(str(int(v))),
                    )  # fmt: skip
                else:
                    solara.SliderFloat(
                        "", value=current, min=float(spec.low), max=float(spec.high),
                        step=(spec.high - spec.low) / 100,
                        on_value=lambda v: on_value(f"{v:.4g}"),
                    )  # fmt: skip
        elif isinstance(spec, TextSpec):
            if spec.max_chars > 200:
                solara.InputTextArea(
                    caption or "your answer",
                    value=value or "",
                    on_value=on_value,
                    continuous_update=True,
                    rows=3,
                )
            else:
                solara.InputText(
                    caption or "your answer",
                    value=value or "",
                    on_value=on_value,
                    continuous_update=True,
                )
        elif isinstance(spec, StructSpec):
            current = value if isinstance(value, dict) else {}
            with solara.Div(classes=["host-nested"]):
                for field_name, sub in spec.fields.items():
                    SpecField(
                        sub,
                        current.get(field_name),
                        lambda v, f=field_name: on_value({**current, f: v}),
                        f"{path}.{field_name}",
                        field_name + (" (optional)" if field_name in spec.optional else ""),
                    )
        elif isinstance(spec, ListSpec):
            items = list(value or [])
            with solara.Div(classes=["host-nested"]):
                for i, item in enumerate(items):
                    with solara.Row():
                        SpecField(
                            spec.item,
                            item,
                            lambda v, i=i: on_value([*items[:i], v, *items[i + 1 :]]),
                            f"{path}.{i}",
                            f"item {i + 1}",
                        )
                        solara.Button(
                            "remove",
                            text=True,
                            on_click=lambda i=i: on_value(items[:i] + items[i + 1 :]),
                        )
                if len(items) < spec.max_items:
                    solara.Button(
                        "add", text=True, on_click=lambda: on_value([*items, empty(spec.item)])
                    )
        else:  # a spec of another kind: its answer typed as JSON
            solara.InputTextArea(
                caption or "your answer (JSON)",
                value=value or "",
                on_value=on_value,
                continuous_update=True,
            )
        note = hint(spec)
        if note:
            Html(html.escape(note), classes=["host-hint"])


@solara.component
def Countdown(deadline: float | None, waits: bool) -> None:
    """Time left on the open decision, ticking on its own (the form does not re-render)."""
    now, set_now = solara.use_state(time.monotonic())

    def tick(cancel: Any) -> None:
        while not cancel.wait(0.5):
            set_now(time.monotonic())

    solara.use_thread(tick, dependencies=[deadline], intrusive_cancel=False)
    if deadline is None:
        return
    left = deadline - now
    if left > 0:
        Html(
            f"time left: {int(left + 0.999)} s", classes=["host-countdown"], remaining=f"{left:.1f}"
        )
    else:
        text = "time is up: please answer now" if waits else "time is up"
        Html(text, classes=["host-countdown", "host-late"], remaining="0")


@solara.component
def DecisionForm(seat: Any, pending: Any) -> None:
    """The open decision: what the seat sees, the form, the countdown, the last error."""
    start = pending.draft if pending.draft is not None else empty(pending.spec)
    draft, set_draft = solara.use_state(start)
    busy, set_busy = solara.use_state(False)

    def change(value: Any) -> None:
        set_draft(value)
        seat.keep_draft(value)

    def submit() -> None:
        set_busy(True)
        try:
            # the seat's draft, kept on every change: never a value from an older render
            latest = pending.draft if pending.draft is not None else draft
            seat.submit(answer_of(pending.spec, latest), pending.id)
        finally:
            set_busy(False)

    Countdown(pending.deadline, seat.hub.on_timeout == "wait")
    Html("Your decision", tag="h3")
    Html(
        f"<b>{html.escape(label(pending.kind.rsplit('.', 1)[-1]))}</b>: "
        f"{html.escape(pending.spec.describe())}",
        decision=pending.kind,
    )
    with solara.Div(attributes={"data-draft": json.dumps(draft, default=str)}):
        SpecField(pending.spec, draft, change, "answer", top=True)
    if pending.error:
        Html(html.escape(pending.error), classes=["host-error"], error="1")
    solara.Button("Submit", color="primary", on_click=submit, disabled=busy)
    Html("What you see", tag="h3")
    Html(observation_html(pending.observation), observation="1")


# -- the participant's page ------------------------------------------------------------


@solara.component
def Play() -> None:
    solara.Style(CSS)
    code = query().get("code", "").strip().upper()
    session = current_session()
    found = session.find(code)
    with solara.Div(classes=["host-page"]):
        if found is None:
            Html(f"No seat has the code {html.escape(code or '(none)')}.", classes=["host-error"])
            JoinBox()
            return
        group, seat = found
        SeatView(group, seat).key(seat.code)


@solara.component
def SeatView(group: Any, seat: Any) -> None:
    def signature() -> tuple[Any, ...]:
        pending = seat.pending
        return (
            seat.consented, seat.instructed, seat.state, group.state, group.model.round,
            len(seat.records), pending and pending.id, pending and pending.error,
            pending and pending.invalid, pending and pending.timed_out,
        )  # fmt: skip

    use_changes([seat.hub], signature)
    participant = seat.join()
    pending = seat.pending
    title = current_session().host.title or "Decision game"
    state = "consent" if not seat.consented else "instructions" if not seat.instructed else None
    if state is None:
        state = group.state if group.state in ("finished", "stopped", "error") else seat.state
        if state == "waiting" and group.state == "paused":
            state = "paused"
    attrs = {
        "data-seat": seat.code,
        "data-participant": participant,
        "data-state": state,
        "data-round": str(group.model.round),
        "data-pending": str(pending.id) if pending is not None and state == "deciding" else "",
        "data-version": str(seat.hub.version),
    }
    with solara.Div(attributes=attrs):
        Html(html.escape(title), tag="h2")
        Html(
            f"You are participant {html.escape(participant)} · round {group.model.round}"
            f" · {len(seat.records)} decisions made",
            classes=["host-hint"],
        )
        host = current_session().host
        if state == "consent":
            Paragraphs(host.consent, "consent")
            solara.Button("I agree", color="primary", on_click=seat.agree)
        elif state == "instructions":
            Paragraphs(host.instructions, "instructions")

            def ready() -> None:
                seat.ready()
                group.maybe_autostart()

            solara.Button("I have read the instructions", color="primary", on_click=ready)
        elif state == "deciding" and pending is not None:
            DecisionForm(seat, pending).key(f"{seat.code}-{pending.id}")
        elif state in ("finished", "stopped", "error"):
            text = {
                "finished": "The game is over. Thank you for taking part.",
                "stopped": "The session was stopped. Thank you for taking part.",
                "error": "The game had to stop. Thank you for taking part.",
            }[state]
            Html(text, classes=["host-waiting"])
        else:
            text = {
                "joined": "Waiting for the session to start…",
                "open": "Waiting for the session to start…",
                "paused": "The experimenter has paused the game. Please wait…",
            }.get(state, "Waiting for the other players…")
            Html(text, classes=["host-waiting"], waiting=state)
            solara.ProgressLinear(True)


@solara.component
def JoinBox() -> None:
    code, set_code = solara.use_state("")
    router = solara.use_router()
    solara.InputText("your join code", value=code, on_value=set_code, continuous_update=True)
    solara.Button(
        "Join", color="primary", on_click=lambda: router.push(f"/play?code={code.strip().upper()}")
    )


@solara.component
def Home() -> None:
    solara.Style(CSS)
    with solara.Div(classes=["host-page"]):
        Html(html.escape(current_session().host.title or "Decision game"), tag="h2")
        Html("Enter the join code you were given.", classes=["host-hint"])
        JoinBox()


# -- the experimenter's console --------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return html.escape(str(value))


@solara.component
def Console() -> None:
    solara.Style(CSS)
    session = current_session()
    if query().get("key") != session.console_key:
        with solara.Div(classes=["host-page"]):
            Html(
                "The console needs its key (printed by mesa-dilemmas host).", classes=["host-error"]
            )
        return
    ConsoleView(session)


@solara.component
def ConsoleView(session: Any) -> None:
    exported, set_exported = solara.use_state("")

    def export() -> None:
        set_exported(str(session.export()))

    def start_all() -> None:
        for g in session.groups:
            g.start()

    host = session.host
    with solara.Div(classes=["host-page"], attributes={"data-console": "1"}):
        Html(f"Console · {html.escape(host.title or session.hosted.scenario.name)}", tag="h2")
        Html(
            f"{len(session.groups)} groups · time limit {host.time_limit_s or 'none'} s per "
            f"decision · on time-out: {host.on_timeout} · records: {html.escape(str(session.out_dir))}",
            classes=["host-hint"],
        )
        with solara.Row():
            solara.Button("Start all", color="primary", on_click=start_all)
            solara.Button("Export", on_click=export)
        if exported:
            Html(f"exported to {html.escape(exported)}", exported=exported)
        for group in session.groups:
            GroupCard(group).key(f"group-{group.index}")


@solara.component
def GroupCard(group: Any) -> None:
    """One group on the console: its state, its controls and every seat, live (it watches its
    own hub, and ticks once a second while someone is deciding: the seconds left)."""
    use_changes([group.hub])
    tick, set_tick = solara.use_state(0)

    def refresh(cancel: Any) -> None:
        while not cancel.wait(1.0):
            if any(s.pending is not None for s in group.hub.seats):
                set_tick(lambda t: t + 1)

    solara.use_thread(refresh, dependencies=[], intrusive_cancel=False)
    rows = group.seats()
    joined = sum(1 for r in rows if r.get("participant"))
    people = sum(1 for r in rows if r["kind"] == "human")
    attrs = {
        "data-group": str(group.index),
        "data-group-state": group.shown_state,
        "data-round": str(group.model.round),
        "data-joined": str(joined),
        "data-ready": "1" if group.ready else "0",
    }
    with solara.Card(f"group {group.index + 1}"), solara.Div(attributes=attrs):
        Html(
            f"{group.shown_state} · round {group.model.round} · {joined}/{people} people joined"
            f"{' · all ready' if group.ready else ''}"
            f"{' · ' + html.escape(group.message) if group.message else ''}",
            classes=["host-hint"],
        )
        with solara.Row():
            if group.thread is None and group.state == "waiting":
                solara.Button("Start", on_click=group.start, color="primary")
            if group.state == "running":
                solara.Button("Pause", on_click=group.pause)
            if group.state == "paused":
                solara.Button("Resume", on_click=group.resume)
            if group.state in ("waiting", "running", "paused"):
                solara.Button("Stop", on_click=group.stop, text=True)
        columns = [
            "seat", "kind", "policy", "code", "participant", "state", "deciding", "remaining",
            "answered", "timeouts",
        ]  # fmt: skip
        head = "".join(f"<th>{c}</th>" for c in columns)
        body = []
        for r in rows:
            cells = []
            for c in columns:
                if c == "code" and r.get("code"):
                    link = f"/play?code={r['code']}"
                    cells.append(f'<td><a href="{link}" target="_blank">{r["code"]}</a></td>')
                else:
                    cells.append(f"<td>{_cell(r.get(c))}</td>")
            attr = f' data-seat-row="{r["seat"]}" data-kind="{r["kind"]}"'
            if r.get("code"):
                attr += f' data-code="{r["code"]}" data-seat-state="{r.get("state", "")}"'
            body.append(f"<tr{attr}>{''.join(cells)}</tr>")
        Html(f'<table class="host-table"><tr>{head}</tr>{"".join(body)}</table>')


@solara.component
def Layout(children: list[Any] = []) -> None:  # noqa: B006 - Solara's signature
    """No app bar or tabs: a person sees only their own page."""
    solara.Column(children=children)


routes = [
    solara.Route(path="/", component=Home, label="join", layout=Layout),
    solara.Route(path="play", component=Play, label="play"),
    solara.Route(path="console", component=Console, label="console"),
]
