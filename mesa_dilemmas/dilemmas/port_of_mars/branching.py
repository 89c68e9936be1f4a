"""What a branch of a Port of Mars run changes beside ``model.p`` (see ``mesa-dilemmas branch``).

A message is added to every player's notes from the last meeting: the note each player is
shown at the start of the next round ("Your notes from last round's meeting: ..."), after the
note the meeting writer wrote, if any.  Only players who read text (language models) see it;
a rule player's decisions never read the notes.  Round 1 follows no meeting: fork at round 2
or later.

The roles, the personas and the length of the game are drawn when a run starts; a branch
refuses to change the parameters that only shape them.
"""

from __future__ import annotations

from typing import Any

#: the first round a message can be put before (round 1 follows no meeting)
MESSAGE_FROM_ROUND = 2
#: parameters read only when a run starts (a branch refuses to change them)
FIXED_PARAMS = (
    "n_rounds",
    "random_rounds",
    "min_rounds",
    "max_rounds",
    "preset",
    "svo_angles",
    "cultural_groups",
    "traits",
    "roles",
    "players",
)


def inject_message(model: Any, text: str) -> None:
    """Add ``text`` to every role's notes from the last meeting."""
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("message: empty")
    if model.last_round is None:
        raise ValueError(
            "message: the players read messages in last round's meeting notes; "
            "fork at round 2 or later"
        )
    notes = dict(model.last_round.get("meeting_summaries") or {})
    for role in model.roles:
        notes[role] = f"{notes[role]} {text}" if notes.get(role) else text
    model.last_round = {**model.last_round, "meeting_summaries": notes}
