"""The rule meeting writer of Port of Mars: the planning meeting without an LLM.

It answers the two model-level meeting decisions (:mod:`mesa_dilemmas.dilemmas.port_of_mars.meeting`):
``meeting`` writes a short structured conversation (each player's stated needs, what it can
trade, and a pledge of coins to port health that splits the group's projected shortfall by
willingness); ``meeting_summaries`` writes each player's note from the pledges.  Rule players
move toward their pledge by their conformity.

The pledges split the group's projected shortfall (to keep the next round at one event if
possible, else out of the three-event zone, else alive) by each player's willingness
(``health_share``), on top of what each would give in a calm round.
"""

from __future__ import annotations

import math
from typing import Any

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.policy import RulePolicy
from mesa_dilemmas.dilemmas.port_of_mars.persona import CrewPersona
from mesa_dilemmas.dilemmas.port_of_mars.personas import params_for

#: how far (fraction of coins) a meeting pledge may go beyond a player's usual ceiling
MEETING_STRETCH = 0.2
#: the closing line of a rule meeting, which every player's note repeats
PLAN = "All agree to keep port health at {target} or more after the next wear."


class PortOfMarsRuleNarrator(RulePolicy):
    """Writes the planning meeting without an LLM: needs, offers and health pledges."""

    name = "rule_narrator"

    def meeting(self, decision: Decision) -> dict[str, Any]:
        obs = decision.observation
        players = obs["players"]
        params = [params_for(CrewPersona(**p["persona"])) for p in players]
        hc = max(1, obs["port_health_coin_cost"])
        base = [pp.health_base * p["coins"] for pp, p in zip(params, players, strict=True)]
        projected = obs["port_health"] + sum(base) / hc - obs["wear_per_round"]
        # a meeting stretches everyone a little beyond their usual ceiling (the commitment effect)
        ceiling = [
            min(p["coins"], (pp.health_cap + MEETING_STRETCH) * p["coins"])
            for pp, p in zip(params, players, strict=True)
        ]
        usual = sum(max(b, c) for b, c in zip(base, ceiling, strict=True))
        # the most ambitious level the group can reach with what its members usually give
        # (one event, else out of the three-event zone); else plain survival with everything
        target = 10.0
        for level in (obs["two_events_below"], obs["three_events_below"]):
            if projected + (usual - sum(base)) / hc >= level:
                target = float(level)
                break
        shortfall = max(0.0, target - projected)
        weights = [pp.health_share for pp in params]
        # what each says it can give: its usual ceiling, or everything when survival is at stake
        coins = ceiling if target > 10 else [float(p["coins"]) for p in players]
        pledge = [min(b, c) for b, c in zip(base, coins, strict=True)]
        # split the shortfall by willingness; what a full purse cannot take goes to the others
        need = shortfall * hc
        active = [i for i in range(len(players)) if pledge[i] < coins[i]]
        while need > 1e-9 and active:
            total_w = sum(weights[i] for i in active) or 1.0
            for i in active:
                give = min(need * weights[i] / total_w, coins[i] - pledge[i])
                pledge[i] += give
            need = shortfall * hc - (
                sum(pledge) - sum(min(b, c) for b, c in zip(base, coins, strict=True))
            )
            active = [i for i in active if pledge[i] < coins[i] - 1e-9]
        rounded = [
            int(min(p["coins"], math.ceil(x - 1e-9))) for x, p in zip(pledge, players, strict=True)
        ]
        pledges: dict[str, int] = {p["role"]: n for p, n in zip(players, rounded, strict=True)}
        lines = [
            f"Port health is {obs['port_health']} and will fall by {obs['wear_per_round']} "
            f"at the start of next round."
        ]
        for p in players:
            pledge_p = pledges[p["role"]]
            needs = (
                ", ".join(f"{n} {r.capitalize()}" for r, n in sorted(p["needs"].items()))
                or "nothing"
            )
            lines.append(
                f"{p['role']}: I can put {pledge_p} coins into port health. "
                f"For my next accomplishment I still need {needs}."
            )
        offers = {}
        for p in players:
            can_make = p["specialty"] in p["can_buy"] and p["coins"] - pledges[p["role"]] >= 4
            offers[p["role"]] = sorted(set(p["spare"]) | ({p["specialty"]} if can_make else set()))
        needs = {p["role"]: sorted(r for r in p["needs"] if r not in p["can_buy"]) for p in players}
        for p in players:
            if offers[p["role"]]:
                lines.append(
                    f"{p['role']}: I can trade "
                    + ", ".join(r.capitalize() for r in offers[p["role"]])
                    + "."
                )
        lines.append(PLAN.format(target=f"{target:g}"))
        return {
            "conversation": _within(lines, decision),
            "pledges": pledges,
            "offers": offers,
            "needs": needs,
        }

    def meeting_summaries(self, decision: Decision) -> dict[str, str]:
        """Each player's note: its own pledge and the group's total."""
        obs = decision.observation
        pledges = obs.get("pledges") or {}
        if not pledges:  # a turn-by-turn meeting: each note repeats what that player said
            said = {role: [] for role in obs["roles"]}
            for line in obs["conversation"].splitlines():
                role, _, text = line.partition(": ")
                if role in said:
                    said[role].append(text)
            limit = obs.get("summary_chars", 240)
            return {
                role: (f"You said: {' '.join(lines)}"[:limit] if lines else "You said nothing.")
                for role, lines in said.items()
            }
        total = sum(pledges.values())
        plan = next(
            (line for line in obs["conversation"].splitlines() if line.startswith("All agree")),
            "",
        )
        return {
            role: (
                f"{plan} You said you would put {pledges[role]} coins into port health; "
                f"the group pledged {total} coins in all.".strip()
                if role in pledges
                else "You made no pledge at the meeting."
            )
            for role in obs["roles"]
        }


#: who writes the meeting without an LLM (a population's ``roles.meeting = { rule = "rule" }``)
MEETING_WRITERS: dict[str, Any] = {"rule": lambda **_: PortOfMarsRuleNarrator()}


def _within(lines: list[str], decision: Decision) -> str:
    """The conversation within the meeting spec's length: the last lines before the closing
    plan (trade offers) go first; the plan line, which the notes are read from, always stays."""
    spec = getattr(decision.spec, "fields", {}).get("conversation")
    limit = getattr(spec, "max_chars", None)
    body, plan = list(lines[:-1]), lines[-1]
    while limit is not None and body and len("\n".join([*body, plan])) > limit:
        body.pop()
    text = "\n".join([*body, plan])
    return text if limit is None else text[:limit]
