"""Agent views: the agents themselves, as SolaraViz components a user can put on their own page.

Each view is a Solara component taking the model, drawn client-side by Vega-Lite
(an Altair chart: hover any mark for its values), so it fits Mesa's component area::

    from mesa.visualization import SolaraViz, make_plot_component
    from mesa_dilemmas.dilemmas.fishery import FisheryModel
    from mesa_dilemmas.viz.dashboard.agent_views import FisheryLake

    page = SolaraViz(FisheryModel(rng=42), components=[FisheryLake, make_plot_component("stock")])

The model is either the game (a user's page) or the dashboard's
:class:`~.runtime.DashboardModel` that holds it (this package's pages); with the
latter a view reads the game only between rounds.  Next to every chart the view
puts ``data-view`` / ``data-agents`` / ``data-round`` attributes for the browser tests.

* :func:`FisheryLake` -- the lake (its fill is the stock) with the villagers around it:
  size is wealth, colour is effort, a square is an LLM villager, a red ring means
  punished this round, a faded grey mark starved; the shared norm in the caption;
* :func:`PortOfMarsSeats` -- the five seats around the port (its fill is port health):
  coins, resources, points and dirty purchases per seat, this round's accepted
  trades as arrows, the leader as a star, the meeting's text below;
* :func:`BinaryPopulation` -- the players grouped by strategy, coloured by their last
  action (C green, D red); for the common pool also the stock and its depletion.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import altair as alt
import pandas as pd
import solara
from mesa.visualization.utils import update_counter

from mesa_dilemmas.viz.dashboard.runtime import DashboardModel

#: the colours of the two actions everywhere on the dashboard (strategies never use them)
ACTION_COLORS = {"C": "#2ca02c", "D": "#d62728", "not yet": "#bbbbbb"}
PUNISHED = "#d62728"


def game_of(model: Any) -> Any:
    """The game a view shows: the model itself, or the game a dashboard model holds."""
    return model.game if isinstance(model, DashboardModel) else model


def _version(model: Any) -> Any:
    """Changes whenever the view must be redrawn (never in the middle of a round)."""
    if isinstance(model, DashboardModel):
        return model.token
    return (id(model), getattr(model, "time", None), getattr(model, "running", None))


def _ring(i: int, n: int, radius: float = 1.0) -> tuple[float, float]:
    angle = math.pi / 2 - 2 * math.pi * i / max(n, 1)
    return radius * math.cos(angle), radius * math.sin(angle)


def _axis(domain: tuple[float, float]) -> alt.Scale:
    return alt.Scale(domain=list(domain), nice=False, zero=False)


def _centre(fill: float, label: str, color: str, radius: float) -> alt.Chart:
    """A disc in the middle whose area is ``fill`` (0..1) of its full size, with a label."""
    frame = pd.DataFrame([{"x": 0.0, "y": 0.0, "fill": max(0.0, min(1.0, fill)), "label": label}])
    base = alt.Chart(frame).encode(
        x=alt.X("x:Q", scale=_axis((-1.6, 1.6)), axis=None),
        y=alt.Y("y:Q", scale=_axis((-1.6, 1.6)), axis=None),
    )
    full = base.mark_circle(color=color, opacity=0.12, size=radius)
    disc = base.mark_circle(color=color, opacity=0.55).encode(
        size=alt.Size("fill:Q", scale=alt.Scale(domain=[0, 1], range=[0, radius]), legend=None),
        tooltip=[alt.Tooltip("label:N", title="")],
    )
    text = base.mark_text(fontSize=12, fontWeight="bold", color="#1f3d5a").encode(text="label:N")
    return full + disc + text


@solara.component
def _Figure(kind: str, model: Any, draw: Callable[[Any], tuple[alt.TopLevelMixin | None, int, str]]) -> None:
    """Draw ``draw(game)`` -> (chart, agents, caption) once per round; keep the last while busy."""
    update_counter.get()  # re-render after every Step in any SolaraViz page
    game = game_of(model)
    busy = isinstance(model, DashboardModel) and model.busy
    key = "busy" if busy else _version(model)
    last = solara.use_ref((None, 0, "", -1))

    def make() -> tuple[Any, int, str, int]:
        if busy or game is None:
            return last.current
        chart, agents, caption = draw(game)
        return chart, agents, caption, int(getattr(game, "round", getattr(game, "time", 0)))

    chart, agents, caption, played = solara.use_memo(make, dependencies=[kind, key])
    last.current = (chart, agents, caption, played)
    with solara.Div(
        classes=["mdd-agent-view"],
        attributes={"data-view": kind, "data-agents": str(agents), "data-round": str(played)},
    ):
        if chart is None:
            solara.Text("nothing to show (the game could not be built)")
        else:
            solara.FigureAltair(chart)
        if caption:
            solara.HTML(tag="div", unsafe_innerHTML=caption, classes=["mdd-caption"])


# -- the fishery -------------------------------------------------------------


def fishery_villagers(game: Any) -> pd.DataFrame:
    """One row per villager: where it sits around the lake and what the view shows of it."""
    villagers = list(game.villagers)
    language = getattr(game, "language", None)
    rows = []
    for v in villagers:
        s = v.slot
        x, y = _ring(s, len(villagers))
        alive = bool(game.alive[s])
        punished = int(game.punished[s])
        text_norm = getattr(v, "norm_text", None)
        rows.append({
            "x": x, "y": y, "villager": int(v.unique_id),
            "kind": "LLM" if language is not None and language[s] else "rule",
            "disposition": str(v.persona.disposition),
            "state": "starved" if not alive else ("punished this round" if punished else "fishing"),
            "effort": round(float(game.effort[s]), 3),
            "catch": round(float(game.harvest[s]), 2),
            "wealth": round(float(game.wealth[s]), 1),
            "times punished this round": punished,
            "punishes with probability": round(float(game.punish_p[s]), 2),
            "personal norm": text_norm or f"catch at most {float(game.norm[s]):.2f}",
        })  # fmt: skip
    return pd.DataFrame(rows)


def fishery_chart(game: Any) -> tuple[alt.TopLevelMixin, int, str]:
    frame = fishery_villagers(game)
    stock, capacity = float(game.stock), float(game.capacity)
    lake = _centre(stock / capacity if capacity else 0.0, f"lake {stock:.0f} / {capacity:.0f}",
                   "#2b7bba", 9000)  # fmt: skip
    tooltip = [alt.Tooltip(c) for c in frame.columns if c not in ("x", "y")]
    villagers = (
        alt.Chart(frame)
        .mark_point(filled=True)
        .encode(
            x=alt.X("x:Q", scale=_axis((-1.6, 1.6)), axis=None),
            y=alt.Y("y:Q", scale=_axis((-1.6, 1.6)), axis=None),
            shape=alt.Shape("kind:N", scale=alt.Scale(domain=["rule", "LLM"], range=["circle", "square"]),
                            legend=alt.Legend(title=None, orient="bottom")),  # fmt: skip
            color=alt.Color("effort:Q", scale=alt.Scale(scheme="oranges", domain=[0, 1]),
                            legend=alt.Legend(title="effort", orient="right", gradientLength=80)),  # fmt: skip
            size=alt.Size("wealth:Q", scale=alt.Scale(range=[60, 600]), legend=None),
            opacity=alt.condition("datum.state == 'starved'", alt.value(0.25), alt.value(0.95)),
            stroke=alt.condition("datum['times punished this round'] > 0", alt.value(PUNISHED),
                                 alt.value("#444444")),  # fmt: skip
            strokeWidth=alt.condition("datum['times punished this round'] > 0", alt.value(3),
                                      alt.value(0.6)),  # fmt: skip
            tooltip=tooltip,
        )
    )
    labels = alt.Chart(frame).mark_text(dy=-16, fontSize=9, color="#555555").encode(
        x=alt.X("x:Q", scale=_axis((-1.6, 1.6)), axis=None),
        y=alt.Y("y:Q", scale=_axis((-1.6, 1.6)), axis=None),
        text="villager:N",
    )
    chart = alt.layer(lake, villagers, labels).resolve_scale(size="independent", color="independent")
    chart = chart.properties(
        width=360, height=330,
        title=alt.Title("The lake and its villagers", subtitle="size: wealth · colour: effort · "
                        "red ring: punished this round · faded: starved"),
    )  # fmt: skip
    punished = int((frame["times punished this round"] > 0).sum()) if len(frame) else 0
    starved = int((frame["state"] == "starved").sum()) if len(frame) else 0
    caption = (
        f"<b>shared norm:</b> {_escape(str(game.shared_policy))} · punished this round: {punished}"
        f" · starved: {starved}"
    )
    return chart, len(frame), caption


@solara.component
def FisheryLake(model: Any) -> None:
    """The fishery's lake and villagers (a SolaraViz component: ``components=[FisheryLake]``)."""
    _Figure("fishery-lake", model, fishery_chart)


# -- Port of Mars -------------------------------------------------------------


def port_of_mars_seats(game: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per seat, one row per accepted trade of this round)."""
    n = len(game.players)
    leader = getattr(game, "leader", None)
    seats = []
    for p in game.players:
        x, y = _ring(p.seat, n)
        seats.append({
            "x": x, "y": y, "seat": p.seat, "role": p.role, "persona": p.label,
            "player": str(game.seats[p.seat].policy_name),
            "leader": leader is not None and p.seat == leader,
            "coins": int(p.coins), "resources": int(sum(p.resources.values())),
            "points": int(p.points), "dirty bought": int(p.dirty_cards_bought),
            "coins to health (total)": int(p.health_coins_total),
            "label": f"{p.role}: {p.points} pts · {p.dirty_cards_bought} dirty",
        })  # fmt: skip
    trades = []
    for o in getattr(game, "round_offers", []):
        if o.status != "accepted":
            continue
        (x1, y1), (x2, y2) = _ring(o.sender, n), _ring(o.recipient, n)
        # stop short of the seats so the arrow head is visible
        trades.append({
            "x": x1 + 0.2 * (x2 - x1), "y": y1 + 0.2 * (y2 - y1),
            "x2": x1 + 0.8 * (x2 - x1), "y2": y1 + 0.8 * (y2 - y1),
            "angle": (90 - math.degrees(math.atan2(y2 - y1, x2 - x1))) % 360,
            "trade": o.public(game.roles)["text"], "kind": o.kind,
        })  # fmt: skip
    return pd.DataFrame(seats), pd.DataFrame(trades, columns=["x", "y", "x2", "y2", "angle", "trade", "kind"])


def port_of_mars_chart(game: Any) -> tuple[alt.TopLevelMixin, int, str]:
    seats, trades = port_of_mars_seats(game)
    health = float(game.health)
    port = _centre(health / 100.0, f"port health {health:.0f}", "#b5651d", 8000)
    x = alt.X("x:Q", scale=_axis((-1.6, 1.6)), axis=None)
    y = alt.Y("y:Q", scale=_axis((-1.6, 1.6)), axis=None)
    tooltip = [alt.Tooltip(c) for c in seats.columns if c not in ("x", "y", "label")]
    marks = alt.Chart(seats).mark_point(filled=True, size=700).encode(
        x=x, y=y, tooltip=tooltip,
        shape=alt.condition("datum.leader", alt.value("diamond"), alt.value("circle")),
        color=alt.Color("role:N", legend=None, scale=alt.Scale(scheme="set2")),
        stroke=alt.condition("datum.leader", alt.value("#000000"), alt.value("#666666")),
        strokeWidth=alt.condition("datum.leader", alt.value(3), alt.value(0.8)),
    )
    names = alt.Chart(seats).mark_text(fontSize=10, fontWeight="bold").encode(x=x, y=y, text="role:N")
    labels = alt.Chart(seats).mark_text(dy=22, fontSize=9).encode(x=x, y=y, text="label:N")
    resources = alt.Chart(seats).mark_text(dy=33, fontSize=9, color="#555555").encode(
        x=x, y=y, text=alt.Text("resources:Q", format="d"),
    )
    layers = [port, marks, names, labels, resources]
    if len(trades):
        layers.append(alt.Chart(trades).mark_rule(color="#1f77b4", strokeWidth=2).encode(
            x=x, y=y, x2="x2:Q", y2="y2:Q", tooltip=["trade:N", "kind:N"]))  # fmt: skip
        layers.append(alt.Chart(trades).mark_point(shape="triangle-up", filled=True, size=120,
                                                   color="#1f77b4").encode(
            x=alt.X("x2:Q", scale=_axis((-1.6, 1.6)), axis=None),
            y=alt.Y("y2:Q", scale=_axis((-1.6, 1.6)), axis=None),
            angle=alt.Angle("angle:Q", scale=None), tooltip=["trade:N", "kind:N"]))  # fmt: skip
    chart = alt.layer(*layers).resolve_scale(size="independent", color="independent").properties(
        width=380, height=340,
        title=alt.Title("The port and its five seats", subtitle="points · dirty purchases under each "
                        "seat, resources below; arrows: trades this round; diamond: leader"),
    )  # fmt: skip
    meeting = getattr(game, "meeting_conversation", None)
    caption = f"<b>trades this round:</b> {len(trades)}"
    if meeting:
        caption += f'<div class="mdd-pre" data-text="meeting-view">{_escape(meeting)}</div>'
    return chart, len(seats), caption


@solara.component
def PortOfMarsSeats(model: Any) -> None:
    """Port of Mars's seats, trades and meeting (a SolaraViz component)."""
    _Figure("port-of-mars-seats", model, port_of_mars_chart)


# -- the binary games -------------------------------------------------------------


def binary_players(game: Any) -> pd.DataFrame:
    """One row per player: strategy, last action and payoff so far, stacked by strategy."""
    actions = game.actions  # rounds x players
    totals = game.total_payoffs()
    rows, stacked = [], {}
    for i, agent in enumerate(game.players):
        name = str(getattr(agent.policy, "name", ""))
        strategy = "LLM" if name.startswith("llm:") else name.removeprefix("strategy:")
        last = ("C" if actions[-1, i] else "D") if len(actions) else "not yet"
        stacked[strategy] = stacked.get(strategy, 0) + 1
        coop = float(actions[:, i].mean()) if len(actions) else math.nan
        rows.append({
            "strategy": strategy, "place": stacked[strategy], "player": i, "last action": last,
            "cooperated (share of rounds)": round(coop, 2), "payoff so far": round(float(totals[i]), 2),
        })  # fmt: skip
    return pd.DataFrame(rows)


def binary_chart(game: Any) -> tuple[alt.TopLevelMixin, int, str]:
    frame = binary_players(game)
    players = (
        alt.Chart(frame)
        .mark_square(size=260)
        .encode(
            x=alt.X("strategy:N", title=None, axis=alt.Axis(labelAngle=0)),
            y=alt.Y("place:O", title=None, axis=None, sort="descending"),
            color=alt.Color("last action:N", scale=alt.Scale(domain=list(ACTION_COLORS),
                            range=list(ACTION_COLORS.values())), legend=alt.Legend(orient="bottom")),  # fmt: skip
            tooltip=list(frame.columns.drop("place")),
        )
        .properties(width=alt.Step(70), height=200, title="Players by strategy, coloured by last action")
    )
    stock = getattr(game.store, "stock", None)
    t = game.store.round
    caption = f"round {t}: {int((frame['last action'] == 'C').sum()) if len(frame) else 0} of {len(frame)} cooperated"
    if stock is None:
        return players, len(frame), caption
    level = float(stock[0, t])
    capacity = float(getattr(game.rules, "capacity", 0) or max(level, 1.0))
    pool = pd.DataFrame([{"what": "stock", "amount": level, "capacity": capacity}])
    bar = alt.Chart(pool).encode(x=alt.X("what:N", title=None))
    tank = bar.mark_bar(color="#eeeeee", stroke="#999999").encode(
        y=alt.Y("capacity:Q", title="stock", scale=alt.Scale(domain=[0, capacity]))
    )
    fill = bar.mark_bar(color="#2b7bba").encode(y="amount:Q", tooltip=["amount:Q", "capacity:Q"])
    caption += f" · stock {level:.3g} of {capacity:.3g}" + (" · <b>the pool is depleted</b>" if level <= 0 else "")
    chart = alt.hconcat(players, (tank + fill).properties(width=60, height=200, title="Common pool"))
    return chart, len(frame), caption


@solara.component
def BinaryPopulation(model: Any) -> None:
    """A binary game's players by strategy and last action, and the stock (a SolaraViz component)."""
    _Figure("binary-population", model, binary_chart)


def _escape(text: str) -> str:
    import html

    return html.escape(text)
