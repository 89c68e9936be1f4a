"""Say vs do in Port of Mars: meeting pledges of coins to port health against what the player
then put into port health that round (``mesa-dilemmas analyse pledges RUN_DIR``).

Where the pledges come from, for each run of a finished run directory:

``speak`` (an LLM seat's own words)
    with ``meeting_turns >= 1`` every utterance is a ``port_of_mars.speak`` decision of the
    seat, in the run's LLM record (``llm_decisions.parquet``, else ``llm_calls.sqlite``); one
    utterance is one statement.  An utterance that fell back (no valid answer) said nothing and
    is not a statement.
``writer-llm`` (the LLM meeting writer's conversation)
    the ``port_of_mars.meeting`` decision's ``conversation``: the lines a role speaks
    (``Role: ...``) in one round are that role's one statement.
``writer-rule`` (the rule meeting writer's pledges)
    the rule writer states each role's pledge as data (``pledges``), which the run's tables do
    not keep: for a run without an LLM record they are read by replaying the run from its
    ``config.toml`` and seed (rule players only: free and deterministic), and the replay must
    give every seat's recorded coins to port health, round by round, or the analysis stops.
    A turn-by-turn meeting of rule seats is replayed the same way, and each rule seat's
    utterance is a ``speak`` statement read like an LLM seat's.

Reading a pledge from words (``speak``, ``writer-llm``; :func:`read_pledge`): the statement's
sentences that speak in the first person (I, I'll, I'm, I can, me, my) and mention health are
its pledge sentences; in them, every number (digits or a number word up to twenty) followed
within two words by "coin" or "coins" is an amount.  One distinct amount: the pledge.  No
pledge sentence: not a pledge (status ``other``: counted, left out of the keep rate).  A pledge sentence with no amount or with several different amounts: ``unparsed``
(counted, never dropped).

Judging: a pledge of X coins by a role in round t is ``kept`` when the coins that role put into
port health in round t (``players_json``'s ``health_coins_by_round``) are at least X, else
``broken``; ``unjudged`` when the game ended before the role invested that round.  A pledge
of 0 coins promises nothing and is not counted as a statement.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_dilemmas.dilemmas.say_do import llm_decisions, load_run, replay_model

NAME = "pledges"

RULE = (
    "A pledge of X coins to port health by a role in round t is kept when that role put at "
    "least X coins into port health in round t, broken otherwise; from words, a pledge is the "
    "one amount (a number followed within two words by 'coin') in the first-person sentences "
    "that mention health; such sentences without one amount are unparsed (counted). Seat kind: "
    "the seat's policy (rule players: rule)."
)

_WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_NUMBER = r"(\d+|" + "|".join(_WORDS) + r")"
_AMOUNT = re.compile(_NUMBER + r"(?:\s+\S+){0,2}?\s+coins?\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(I|I'll|I'm|I've|I'd|me|my)\b")
_HEALTH = re.compile(r"\bhealth\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")

RULE_POLICIES = ("rule", "reference_bot", "random")


def _value(word: str) -> int:
    return int(word) if word.isdigit() else _WORDS[word.lower()]


def read_pledge(text: str) -> tuple[str, int | None]:
    """("pledge", X), ("unparsed", None) or ("not a pledge", None): see the module doc."""
    sentences = [s for s in _SENTENCE.split(text) if _FIRST_PERSON.search(s) and _HEALTH.search(s)]
    if not sentences:
        return "not a pledge", None
    amounts = {_value(m.group(1)) for s in sentences for m in _AMOUNT.finditer(s)}
    if len(amounts) != 1:
        return "unparsed", None
    return "pledge", amounts.pop()


def seat_kind(policy: str) -> str:
    return "rule" if policy in RULE_POLICIES else "llm"


def _seats(runs: pd.DataFrame) -> dict[int, list[dict[str, Any]]]:
    """Each run's seats (players_json) by run id."""
    return {int(r["RunId"]): json.loads(r["players_json"]) for _, r in runs.iterrows()}


def replay_pledges(run_dir: Path) -> dict[tuple[int, int], dict[str, int] | str]:
    """(run id, round) -> the rule writer's pledges (role -> coins), or the conversation of a
    turn-by-turn meeting (the rule seats' own words), by replaying every run of a rule-only run
    directory from its config and seed; checked against the recorded coins to port health of
    every seat in every round (a mismatch raises ValueError)."""
    scenario, runs, _ = load_run(run_dir)
    out: dict[tuple[int, int], dict[str, int] | str] = {}
    for _, row in runs.iterrows():
        model = replay_model(scenario, row)
        while model.running and model.steps < scenario["max_steps"]:
            model.step()
            key = (int(row["RunId"]), int(model.round))
            if model.pledges:
                out[key] = dict(model.pledges)
            elif model.p.meeting_turns and model.meeting_conversation:
                out[key] = model.meeting_conversation
        recorded = {p["role"]: p["health_coins_by_round"] for p in json.loads(row["players_json"])}
        replayed = {p.role: list(p.health_coins_by_round) for p in model.seats}
        if replayed != recorded:
            raise ValueError(
                f"{run_dir}: run {row['RunId']} replays differently from its record "
                "(coins to port health); its pledges cannot be read"
            )
    return out


def statements(run_dir: Path) -> pd.DataFrame:
    """One row per statement of every run (columns: :data:`..say_do.STATEMENT_COLUMNS` and
    ``role``, ``invested``, ``parse``)."""
    _, runs, _ = load_run(run_dir)
    seats = _seats(runs)
    seed_to_run = {str(int(r["seed"])): int(r["RunId"]) for _, r in runs.iterrows()}
    rows: list[dict[str, Any]] = []

    def add(run: int, round_: int, role: str, source: str, text: str, parse: str, amount: Any):
        seat = next((s for s in seats[run] if s["role"] == role), None)
        if seat is None or (parse == "pledge" and amount == 0):
            return
        status = "other" if parse == "not a pledge" else "unparsed"
        invested = None
        if parse == "pledge":
            by_round = seat["health_coins_by_round"]
            invested = by_round[round_ - 1] if len(by_round) >= round_ else None
            status = (
                "unjudged" if invested is None else ("kept" if invested >= amount else "broken")
            )
        rows.append(_row(run, round_, seat, source, text, parse, amount, status, invested))

    decisions = llm_decisions(run_dir)
    if decisions is None:
        for (run, round_), said in sorted(replay_pledges(run_dir).items()):
            if isinstance(said, str):  # a turn-by-turn meeting: each utterance, own words
                for line in said.splitlines():
                    role, _, text = line.partition(": ")
                    add(run, round_, role, "speak", text, *read_pledge(text))
                continue
            for role, coins in said.items():
                text = f"{role}: pledges {coins} coins to port health"
                add(run, round_, role, "writer-rule", text, "pledge", int(coins))
    else:
        agents = _agent_roles(run_dir)
        for _, d in decisions.iterrows():
            run = seed_to_run.get(str(d["run_seed"]))
            if run is None or bool(d["fell_back"]):
                continue
            value = json.loads(d["value"]) if isinstance(d["value"], str) else d["value"]
            if d["kind"] == "port_of_mars.speak" and isinstance(value, str) and value.strip():
                role = agents.get((run, int(d["agent_id"])))
                if role is not None:
                    add(run, int(d["round"]), role, "speak", value, *read_pledge(value))
            elif d["kind"] == "port_of_mars.meeting" and isinstance(value, dict):
                roles = [s["role"] for s in seats[run]]
                for role, text in by_role(value.get("conversation") or "", roles).items():
                    add(run, int(d["round"]), role, "writer-llm", text, *read_pledge(text))
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=[*_COLUMNS])
    return frame


_COLUMNS = (
    "run",
    "round",
    "seat",
    "role",
    "label",
    "seat_kind",
    "source",
    "text",
    "parse",
    "amount",
    "invested",
    "status",
)


def _row(run, round_, seat, source, text, parse, amount, status, invested=None) -> dict[str, Any]:
    return {
        "run": run,
        "round": round_,
        "seat": seat["seat"],
        "role": seat["role"],
        "label": seat.get("label", ""),
        "seat_kind": seat_kind(seat.get("policy", "rule")),
        "source": source,
        "text": " ".join(text.split())[:300],
        "parse": parse,
        "amount": amount,
        "invested": invested,
        "status": status,
    }


def by_role(conversation: str, roles: list[str]) -> dict[str, str]:
    """The lines each role speaks in a written conversation (``Role: ...``), joined."""
    pattern = re.compile(r"^\s*\**(" + "|".join(map(re.escape, roles)) + r")\**\s*:\s*(.*)$")
    out: dict[str, list[str]] = {}
    for line in conversation.splitlines():
        m = pattern.match(line)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return {role: "\n".join(lines) for role, lines in out.items()}


def _agent_roles(run_dir: Path) -> dict[tuple[int, int], str]:
    """(run id, agent id) -> role, from ``agents.parquet``."""
    path = run_dir / "agents.parquet"
    if not path.exists():
        return {}
    agents = pd.read_parquet(path, columns=["RunId", "AgentID", "player_role"])
    agents = agents.drop_duplicates(["RunId", "AgentID"])
    return {
        (int(r.RunId), int(r.AgentID)): str(r.player_role) for r in agents.itertuples(index=False)
    }
