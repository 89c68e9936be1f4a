"""The Port of Mars page (paper 001): port health, events, coins, points, dirty cards, trades, meetings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import solara

from mesa_dilemmas.agents.population import Population
from mesa_dilemmas.dilemmas.base import shorthand_names
from mesa_dilemmas.dilemmas.port_of_mars.agent_view import PortOfMarsSeats
from mesa_dilemmas.dilemmas.port_of_mars.cards import ROLES
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.dilemmas.port_of_mars.trade import TRADE_KINDS
from mesa_dilemmas.viz.dashboard import controls as c
from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.charts import Ref, Series
from mesa_dilemmas.viz.dashboard.components import ChartGrid, Metric, Metrics, Pre, Table, Text
from mesa_dilemmas.viz.dashboard.llm_panel import llm_fix
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, GamePage

POLICIES = ["rule", "reference_bot", "random"]


@dataclass(frozen=True)
class Player:
    seat: int
    role: str
    label: str
    policy: str
    points: int
    health_coins: int
    dirty_cards: int
    dirty_taken: int
    dirty_opportunities: int
    offers: dict[str, int]
    accepted: dict[str, int]


@dataclass(frozen=True)
class PortOfMarsView:
    round: int
    n_rounds: int
    health: list[float]  # at the start (100) and after every round
    two_events_below: int
    three_events_below: int
    events: list[tuple[int, str]]  # (round, "Hull Breach · Sandstorm")
    events_total: int
    coins_by_role: dict[str, list[float]]  # coins to port health per round
    points_by_role: dict[str, list[float]]
    dirty_total: list[float]
    players: list[Player]
    trades_proposed: dict[str, int]
    trades_accepted: dict[str, int]
    meeting: str | None
    meeting_round: int
    meeting_by: str
    meeting_health: int  # port health when the meeting sat (after wear and events)
    meeting_absent: str  # why there is no meeting text this round ("" when there is)
    #: that reason as a word: "", "not_yet", "off", "no_writer", "solar_flare", "collapsed",
    #: "unusable"
    meeting_absent_kind: str
    summaries: dict[str, str]
    collapsed: bool
    survived: bool
    winners: list[str]


def controls() -> dict[str, Any]:
    m = PortOfMarsModel
    return {
        "preset": c.select(m, "preset", label="personas (preset)"),
        "policy_factory": c.choice("rule-based players", "rule", POLICIES),
        "llm_players": c.slider(m, "llm_players", label="of which LLM players (first seats)"),
        **c.llm_controls(),
        "n_rounds": c.slider(m, "n_rounds", label="rounds"),
        "random_rounds": c.checkbox(m, "random_rounds", label="hidden random 8-12 rounds"),
        "meeting": c.checkbox(m, "meeting", label="planning meeting"),
        "meeting_writer": c.select(m, "meeting_writer", label="meeting written by (rule or LLM)"),
        "leadership": c.select(m, "leadership"),
        "max_offers": c.slider(m, "max_offers", label="trade offers per player"),
        "trade_rounds": c.slider(m, "trade_rounds", label="trade rounds"),
        "events_in_first_round": c.checkbox(m, "events_in_first_round"),
        "life_as_usual_copies": c.slider(m, "life_as_usual_copies", label="Life as Usual cards"),
        "role_table": c.select(m, "role_table"),
        "rng": c.seed_box(42),
    }


def llm_agents(params: dict[str, Any]) -> int:
    """LLM players, plus the meeting writer when an LLM writes the meeting."""
    writer = params.get("meeting_writer") == "llm" and params.get("meeting", True)
    return int(params.get("llm_players", 0)) + int(bool(writer))


def population(params: dict[str, Any], llm: str | None) -> Population:
    """Who plays the page's game: its rule players (``policy_factory``), the first
    ``llm_players`` seats on ``llm`` and the meeting writer (``meeting_writer``), as a
    ``Population`` (what a scenario's shorthands expand into)."""
    chosen = {k: params[k] for k in (*shorthand_names(PortOfMarsModel), "meeting") if k in params}
    if llm:
        chosen["llm"] = llm
    return PortOfMarsModel.population_from_params(chosen)


def build(params: dict[str, Any], seed: int, llm: str | None) -> PortOfMarsModel:
    """The page's game: its parameters, and who plays as a ``Population`` (``players``)."""
    game = {k: v for k, v in params.items() if k not in shorthand_names(PortOfMarsModel)}
    return PortOfMarsModel(**game, players=population(params, llm), rng=seed)


def snapshot(model: PortOfMarsModel) -> PortOfMarsView:
    dv = model.datacollector.model_vars
    rows = len(dv["port_health"])
    events = [
        (r, str(e).replace("|", " · ")) for r, e in enumerate(dv["events_this_round"]) if r and e
    ]
    players = [
        Player(
            seat=p.seat,
            role=p.role,
            label=p.label,
            policy=p.policy_name,
            points=p.points,
            health_coins=p.health_coins_total,
            dirty_cards=p.dirty_cards_bought,
            dirty_taken=p.dirty_taken,
            dirty_opportunities=p.dirty_opportunities,
            offers={k: p.trades_proposed[k] for k in TRADE_KINDS},
            accepted={k: p.trades_accepted[k] for k in TRADE_KINDS},
        )
        for p in model.seats
    ]
    narrator = model.broker.narrator
    meeting_by = "no narrator" if narrator is None else str(getattr(narrator, "name", "narrator"))
    return PortOfMarsView(
        round=model.round,
        n_rounds=model.n_rounds_total,
        health=[float(h) for h in dv["port_health"]],
        two_events_below=model.TWO_EVENTS_BELOW,
        three_events_below=model.THREE_EVENTS_BELOW,
        events=events,
        events_total=int(dv["events_drawn_total"][-1]) if rows else 0,
        coins_by_role={r: [float(x) for x in dv[f"health_coins_{r}"][1:]] for r in ROLES},
        points_by_role={r: [float(x) for x in dv[f"points_{r}"]] for r in ROLES},
        dirty_total=[float(x) for x in dv["dirty_cards_total"]],
        players=players,
        trades_proposed={k: dv[f"trades_proposed_{k}"][-1] for k in TRADE_KINDS} if rows else {},
        trades_accepted={k: dv[f"trades_accepted_{k}"][-1] for k in TRADE_KINDS} if rows else {},
        meeting=model.meeting_conversation,
        meeting_round=model.round,
        meeting_by=meeting_by,
        meeting_health=int(getattr(model, "meeting_health", model.health)),
        meeting_absent=meeting_absent(model, meeting_by),
        meeting_absent_kind=absent_kind(model),
        summaries=dict(model.meeting_summaries),
        collapsed=bool(model.collapsed),
        survived=bool(model.survived),
        winners=[model.roles[s] for s in model.winners],
    )


def absent_kind(model: PortOfMarsModel) -> str:
    """Why this round has no meeting text, as a word ("" when it has one): the one reason that
    applies (see :func:`meeting_absent`)."""
    if model.meeting_conversation:
        return ""
    if model.round == 0:
        return "not_yet"
    if not model.p.meeting:
        return "off"
    if model.broker.narrator is None:
        return "no_writer"
    if model.effects.chat_closed:
        return "solar_flare"
    if model.collapsed and model.health <= 0:
        return "collapsed"
    return "unusable"


def meeting_absent(model: PortOfMarsModel, writer: str) -> str:
    """Why this round has no meeting text ("" when it has one): the one reason that applies."""
    kind, r = absent_kind(model), model.round
    return {
        "": "",
        "not_yet": "No meeting yet: the first one sits in round 1 (press Step).",
        "off": "No meeting: the planning meeting is switched off for this game.",
        "no_writer": "No meeting: nobody writes it (no meeting writer in this population).",
        "solar_flare": f"No meeting in round {r}: a Solar Flare cancelled it (it silenced the "
        "port this round).",
        "collapsed": f"No meeting in round {r}: the port collapsed before it could sit.",
        "unusable": f"No meeting in round {r}: the meeting writer ({writer}) gave no usable "
        "conversation, so the round went on without one (the players keep their earlier notes).",
    }[kind]


def meeting_heading(view: PortOfMarsView) -> str:
    """The meeting card's heading: who wrote this round's meeting, or that none sat (a Solar
    Flare cancelled it, it is switched off, ...: a writer is named only for a text it wrote)."""
    what = f"Planning meeting of round {view.meeting_round}"
    if view.meeting:
        return f"{what} (written by {view.meeting_by})"
    if view.round == 0:
        return f"{what}: none yet"
    if view.meeting_absent_kind == "solar_flare":
        return f"{what}: cancelled by a Solar Flare"
    if view.meeting_absent_kind == "off":
        return f"{what}: switched off"
    if view.meeting_absent_kind == "no_writer":
        return f"{what}: none (nobody writes it)"
    if view.meeting_absent_kind == "collapsed":
        return f"{what}: none (the port collapsed)"
    return f"{what}: no text (the writer, {view.meeting_by}, gave none usable)"


def _meeting_failure(model: DashboardModel, round_: int) -> str | None:
    """The recorded error of this round's LLM meeting call, if the writer is an LLM that failed."""
    from mesa_dilemmas.dilemmas.port_of_mars.meeting import MEETING_KINDS

    if model.llm is None:
        return None
    try:
        errors = model.llm.errors()
    except Exception:  # the record is being rewritten: the panel below says so
        return None
    for e in errors:
        if e["kind"] == MEETING_KINDS[0] and e["agent"] is None and e["round"] in (round_, None):
            return str(e["error"])
    return None


@solara.component
def MeetingCard(view: PortOfMarsView, model: DashboardModel) -> None:
    """The meeting's text, labelled with the moment it describes, or why there is none."""
    end = view.health[-1] if view.health else None
    with solara.Card(meeting_heading(view)):
        with solara.Div(
            attributes={
                "data-text": "meeting-moment",
                "data-token": model.token,
                "data-health": str(view.meeting_health),
            }
        ):
            if view.round:
                Text(
                    f"The meeting sits after this round's wear and events, before anyone invests: "
                    f"port health was {view.meeting_health} then"
                    + (
                        f" and is {end:.0f} at the end of the round (the card above)."
                        if end is not None
                        else "."
                    )
                )
        if view.meeting:
            with solara.Div(attributes={"data-token": model.token}):  # tests wait for the round
                Pre(view.meeting, key="meeting", whole=True)
        else:
            with solara.Div(attributes={"data-text": "meeting-absent", "data-token": model.token}):
                failure = _meeting_failure(model, view.round) if view.round else None
                if failure:
                    solara.Error(
                        f"The LLM meeting of round {view.round} failed: {failure}. "
                        + llm_fix(failure)
                        + " The round went on without a meeting."
                    )
                else:
                    Text(view.meeting_absent)
        if view.summaries:
            Table(["role", "what they took away"], sorted(view.summaries.items()), key="summaries")


@solara.component
def Panels(view: PortOfMarsView, model: DashboardModel) -> None:
    t = model.token
    status = "collapsed" if view.collapsed else ("survived" if view.survived else "in play")
    Metrics(
        [
            Metric("round", f"round (of {view.n_rounds}, hidden from players)", view.round),
            Metric("port_health", "port health", view.health[-1] if view.health else None),
            Metric("events_drawn_total", "events drawn", view.events_total),
            Metric(
                "health_coins", "coins to port health", sum(p.health_coins for p in view.players)
            ),
            Metric("points_total", "points (all players)", sum(p.points for p in view.players)),
            Metric(
                "dirty_cards",
                "dirty accomplishments",
                view.dirty_total[-1] if view.dirty_total else 0,
            ),
            Metric("trades_proposed", "offers", sum(view.trades_proposed.values())),
            Metric("trades_accepted", "trades", sum(view.trades_accepted.values())),
            Metric("status", "port", status),
        ]
    )
    PortOfMarsSeats(model)
    roles = [p.role for p in view.players]
    names = {p.role: f"{p.role} ({p.label})" for p in view.players}
    rounds = list(range(1, view.round + 1))
    charts = [
        (
            "port_health",
            lambda: vega.line(
                "Port health",
                [Series("port health", view.health)],
                [
                    Ref(
                        f"below {view.two_events_below}: two events",
                        view.two_events_below,
                        "#ff7f0e",
                    ),
                    Ref(
                        f"below {view.three_events_below}: three events",
                        view.three_events_below,
                        "#d62728",
                    ),
                ],
                ylim=(0, 102),
            ),
            view.health,
        ),
        (
            "health_coins",
            lambda: vega.line(
                "Coins to port health per player and round",
                [Series(names[r], view.coins_by_role[r], x=rounds) for r in roles],
                ylabel="coins",
            ),
            view.coins_by_role[roles[0]] if roles else [],
        ),
        (
            "points",
            lambda: vega.line(
                "Points per player",
                [Series(names[r], view.points_by_role[r]) for r in roles],
                ylabel="points",
            ),
            view.points_by_role[roles[0]] if roles else [],
        ),
        (
            "dirty",
            lambda: vega.bars(
                "Dirty accomplishments bought, and chances to",
                roles,
                {
                    "bought": [p.dirty_cards for p in view.players],
                    "chances (purchase phases with one in hand)": [
                        p.dirty_opportunities for p in view.players
                    ],
                },
            ),
            view.dirty_total,
        ),
        (
            "trades",
            lambda: vega.bars(
                "Trade offers by type",
                list(TRADE_KINDS),
                {
                    "proposed": [view.trades_proposed.get(k, 0) for k in TRADE_KINDS],
                    "accepted": [view.trades_accepted.get(k, 0) for k in TRADE_KINDS],
                },
            ),
            list(view.trades_proposed.values()),
        ),
    ]
    ChartGrid(
        charts, t, [("Events drawn", ["round", "events"], list(reversed(view.events)), "events")]
    )
    with solara.Card("Players"):
        Table(
            [
                "seat",
                "role",
                "persona",
                "policy",
                "points",
                "coins to health",
                "dirty bought",
                "% dirty",
                "offers fair/generous/selfish",
                "accepted",
            ],
            [
                (
                    p.seat,
                    p.role,
                    p.label,
                    p.policy,
                    p.points,
                    p.health_coins,
                    p.dirty_cards,
                    f"{100 * p.dirty_taken / p.dirty_opportunities:.0f}%"
                    if p.dirty_opportunities
                    else "n/a",
                    "/".join(str(p.offers[k]) for k in TRADE_KINDS),
                    sum(p.accepted.values()),
                )
                for p in view.players
            ],
            key="players",
        )
        if view.winners:
            solara.Success(f"The port survived; winners: {', '.join(view.winners)}")
        elif view.collapsed:
            solara.Error("The port collapsed: nobody wins, final points are 0.")
    MeetingCard(view, model)


PAGE = GamePage(
    path="port_of_mars",
    order=60,
    title="Port of Mars (paper 001)",
    summary=(
        "Five players keep a shared port alive while competing for points: coins go to port health "
        "or to resources; events hit harder below 65 and 35 health; dirty accomplishments trade "
        "health for points."
    ),
    controls=controls,
    build=build,
    snapshot=snapshot,
    panels=Panels,
    llm_agents=lambda params: llm_agents(params),
    agent_labels=lambda model: {
        p.unique_id: f"{p.role} ({p.label}, {p.policy_name})" for p in model.seats
    },
)
