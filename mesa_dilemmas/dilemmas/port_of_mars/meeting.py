"""The planning meeting of a Port of Mars round: two model-level calls to the meeting writer.

1. ``port_of_mars.meeting`` writes the whole conversation (at most ``meeting_chars``
   characters).  A rule writer also records each role's pledge of coins to port health (at most
   the coins that role holds) and the resources each offers and needs (``meeting_market``).
   An LLM writer is asked for the conversation only, with neutral instructions: the players
   speak in character about whatever they choose, and nothing in its prompt or its answer's
   schema suggests coins to port health or pledges (which would steer the game it is measured
   on); it also keeps the reply within its token limit.
2. ``port_of_mars.meeting_summaries`` writes one short note per role (at most
   ``summary_chars`` characters each; in tags mode one tag per role inside ``<SUMMARIES>``).

The next round carries the notes, not the transcript (``last_round["meeting_summaries"]``).
The writer is shown the public state, every player's role and personality and the notes of
earlier meetings -- never a player's hand or needs (``meeting_brief``).  The rule writer
(:mod:`mesa_dilemmas.dilemmas.port_of_mars.narrator`) also reads ``players[*].needs/spare``:
its conversation *is* the players stating their needs, a modelling choice of the rule baseline.

Our addition, off by default: ``meeting_turns = N`` replaces the first call by a turn-by-turn
meeting in which every player speaks in seat order N times (one ``port_of_mars.speak`` decision
per utterance, each seeing the transcript so far); the writer then writes the notes as above.

Who writes: the population's ``roles.meeting`` (``meeting_writer = "rule" | "llm"`` is the
shorthand).  A call that falls back (no valid answer) leaves the round without a meeting or
without notes; both are counted (``meeting_fallbacks`` in the run metrics and summary.json).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.agents.decisions import (
    ChoiceSpec,
    Decision,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.dilemmas.port_of_mars.cards import RESOURCES
from mesa_dilemmas.dilemmas.port_of_mars.text import meeting_brief, short_persona

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

MEETING_KINDS = ("port_of_mars.meeting", "port_of_mars.meeting_summaries")
#: the utterance of one player in a turn-by-turn meeting
SPEAK_KIND = "port_of_mars.speak"
UTTERANCE_CHARS = 300
#: what the writer may not see: each seat's private state
PRIVATE_KEYS = (
    "role",
    "specialty",
    "coin_costs",
    "trade_only",
    "coins",
    "points",
    "resources",
    "accomplishments",
    "completed",
    "goal",
    "goal_missing",
    "health_plan",
    "port_health_coins_this_round",
    "port_health_coins_last_round",
    "must_spend_all_on_port_health",
    "leadership",
    "meeting_summary",
    "meeting_pledges",
    "meeting_market",
    "briefing",
    "situation",
    "own",
    "audit",
)


def meeting_spec(model: PortOfMarsModel) -> StructSpec:
    """The conversation (bounded); for the rule writer (``meeting_market``) also optional
    per-role pledges (at most the role's coins), offers and needs.  Every string is bounded so
    a local grammar stays small."""
    fields: dict[str, Any] = {"conversation": TextSpec(max_chars=model.p.meeting_chars)}
    if model.meeting_market:
        roles = frozenset(model.roles)
        coins = {p.role: max(0, p.coins) for p in model.seats}
        fields["pledges"] = StructSpec(
            {r: NumberSpec(0, coins[r], integer=True) for r in model.roles}, optional=roles
        )
        for key in ("offers", "needs"):
            fields[key] = StructSpec(
                {r: ListSpec(ChoiceSpec(RESOURCES), max_items=5) for r in model.roles},
                optional=roles,
            )
    return StructSpec(fields, optional=frozenset(fields) - {"conversation"})


def summaries_spec(model: PortOfMarsModel) -> StructSpec:
    return StructSpec({r: TextSpec(max_chars=model.p.summary_chars) for r in model.roles})


def writer_observation(model: PortOfMarsModel) -> dict[str, Any]:
    """The public state, the players' roles and personas, earlier notes (see module doc)."""
    obs = model.observe(0)
    for key in PRIVATE_KEYS:
        obs.pop(key, None)
    obs["leadership"] = {
        "variant": model.p.leadership,
        "leader": None if model.leader is None else model.roles[model.leader],
    }
    obs["players"] = [
        {
            "role": p.role,
            "specialty": model.role_spec(p.seat).specialty,
            "persona": {k: v for k, v in asdict(p.persona).items() if v not in (None, (), {})},
            "points": p.points,
            "coins": p.coins,
            # read by the rule writer only (module doc); never rendered into a prompt
            "goal": p.goal,
            "needs": model.goal_missing(p),
            "spare": model.spare(p),
            "can_buy": list(model.coin_costs(p.seat)),
            "port_health_coins_last_round": (
                p.health_coins_by_round[-1] if p.health_coins_by_round else None
            ),
        }
        for p in model.seats
    ]
    personas = {p.role: short_persona(p.persona) for p in model.seats}
    obs["meeting_brief"] = meeting_brief(obs, personas)
    obs["meeting_chars"] = model.p.meeting_chars
    return obs


def _fell_back(model: PortOfMarsModel, kind: str, before: int) -> bool:
    row = model.broker.stats.counts.get((-1, kind))
    return row is not None and row[3] > before


def _fallbacks(model: PortOfMarsModel, kind: str) -> int:
    row = model.broker.stats.counts.get((-1, kind))
    return 0 if row is None else row[3]


def turn_meeting(model: PortOfMarsModel) -> str:
    """Our alternative to the written meeting (``meeting_turns >= 1``): every player speaks in
    seat order, ``meeting_turns`` times, one ``port_of_mars.speak`` decision per utterance
    (at most ``UTTERANCE_CHARS`` characters), each seeing the transcript so far.  A player whose
    answer falls back says nothing."""
    lines: list[str] = []
    for turn in range(model.p.meeting_turns):
        for p in model.seats:
            said = model.ask(
                model.decision(
                    p.seat,
                    SPEAK_KIND,
                    TextSpec(max_chars=UTTERANCE_CHARS),
                    "",
                    meeting_turn=turn + 1,
                    transcript_text="\n".join(lines) or "(nobody has spoken yet)",
                    utterance_chars=UTTERANCE_CHARS,
                )
            )
            if said and said.strip():
                lines.append(f"{p.role}: {' '.join(said.split())}")
    return "\n".join(lines)


def run_meeting(model: PortOfMarsModel) -> None:
    """The round's meeting (written, or turn by turn) and its notes; sets the meeting state."""
    if model.p.meeting_turns:
        conversation = turn_meeting(model)
        model.meeting_held = bool(conversation)
        model.meeting_conversation = conversation or None
        model.pledges = None
        model.market = None
        if model.meeting_held:
            write_notes(model, conversation)
        return
    before = _fallbacks(model, MEETING_KINDS[0])
    answer = model.ask(
        Decision(
            kind=MEETING_KINDS[0],
            spec=meeting_spec(model),
            observation=writer_observation(model),
            agent=None,
            step=model.round,
            fallback={"conversation": ""},
        )
    )
    if _fell_back(model, MEETING_KINDS[0], before):
        model.meeting_fallbacks += 1
    conversation = (answer.get("conversation") or "").strip()
    model.meeting_held = bool(conversation)
    model.meeting_conversation = conversation or None
    pledges = answer.get("pledges") or {}
    model.pledges = {k: int(v) for k, v in pledges.items() if v is not None} or None
    market = {
        key: {r: list(v) for r, v in (answer.get(key) or {}).items() if v}
        for key in ("offers", "needs")
    }
    model.market = market if any(market.values()) else None
    if model.meeting_held:
        write_notes(model, conversation)


def write_notes(model: PortOfMarsModel, conversation: str) -> None:
    """The second writer call: one note per role, carried into the next round."""
    model.meetings_held += 1
    before = _fallbacks(model, MEETING_KINDS[1])
    summaries = model.ask(
        Decision(
            kind=MEETING_KINDS[1],
            spec=summaries_spec(model),
            observation={
                "round": model.round,
                "conversation": conversation,
                "roles": list(model.roles),
                "roles_text": ", ".join(model.roles),
                "pledges": dict(model.pledges or {}),
                "summary_chars": model.p.summary_chars,
            },
            agent=None,
            step=model.round,
            fallback={},
        )
    )
    if _fell_back(model, MEETING_KINDS[1], before):
        model.meeting_fallbacks += 1
    model.meeting_summaries = {k: v for k, v in (summaries or {}).items() if v}
