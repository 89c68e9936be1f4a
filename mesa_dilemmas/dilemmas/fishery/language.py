"""What LLM villagers read: the fishery's observations as text fields for the prompt templates.

Templates (``prompts/*.toml``) only substitute fields, so everything that
depends on the ablation switches is decided here: without a group decision (OSL,
Neither) no shared policy appears anywhere; without social learning (OGD,
Neither) a villager sees only its own effort and payoff when it fishes and updates its norms,
but still sees everyone's when it decides whom to punish (the ablation removes imitation, not
the sight of others' catches).  Before the first harvest nobody's effort is shown: an LLM
society starts from its norm texts alone.  Every prompt says which villager is "you", and
every observation after the first harvest includes the villager's own recent outcome.  The mapping from
action to payoff is never stated (paper 003: payoffs stay latent).
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel, Villager

PROMPTS_PACKAGE = "mesa_dilemmas.dilemmas.fishery.prompts"
NO_POLICY_YET = "No shared policy has been agreed yet."


def prompts_dir() -> Path:
    return Path(str(resources.files(PROMPTS_PACKAGE)))


@cache
def persona_bank() -> dict[str, tuple[str, ...]]:
    data = tomllib.loads((Path(__file__).parent / "strategies.toml").read_text())
    return {k: tuple(v) for k, v in data.items()}


def initial_strategy(disposition: str, rng: Any) -> str:
    """One template of the villager's disposition at random ("general": either bank)."""
    bank = persona_bank()
    choices = bank[disposition] if disposition in bank else bank["altruistic"] + bank["selfish"]
    return choices[int(rng.integers(len(choices)))]


def _table(rows: list[dict[str, Any]], me: int) -> str:
    return "\n".join(
        f"- villager {r['id']}{' (you)' if r['id'] == me else ''}: "
        f"fishing effort {r['effort']:.2f}, total payoff {r['payoff']:.1f}"
        for r in rows
    )


def prompt_fields(
    model: FisheryModel, v: Villager, rows: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """Text fields for one language villager; ``rows`` are the other villagers it may observe
    (None without social learning).  Its own recent outcome is always shown, marked "(you)":
    the ablations remove only their channel (peers' outcomes, or the shared policy).

    Fields come in two kinds, so that templates put what every villager of a round reads alike
    first and the villager's own part last (a provider serves a repeated beginning from its
    prompt cache): ``norms_text`` (the community's rule), ``observed_text`` (a table of everyone,
    when the villager sees everyone), ``lake_text`` and ``hint_text`` are the same for every
    villager of a round; ``own_norm_text`` (its personal strategy) and ``own_text`` (its own
    row, or the few peers it sampled and its own row) are its own."""
    me = v.unique_id
    intro = "Every villager follows a fishing rule of its own"
    if model.p.group_decision:
        intro += ", and the village as a whole has agreed on one common rule."
        intro += f'\n\nShared community policy: "{model.shared_policy}"'
    else:
        intro += "."
    own = {"id": me, "effort": float(v.effort), "payoff": float(v.wealth)}
    own_row = _table([own], me)
    if not model.rounds_fished:  # the first harvest: no effort has been seen yet (an LLM
        # villager starts from its norm texts alone, never from rule-drawn efforts)
        observed = (
            "Nobody has fished yet: this is the first day. "
            f"Every villager starts with a payoff of {own['payoff']:.1f}."
        )
        own_text = ""
    elif rows is None:  # no social learning: only one's own outcomes
        observed = ""
        own_text = "You observe your own fishing effort and total payoff:\n" + own_row
    elif any(r["id"] == me for r in rows):  # everyone: one table for all, then one's own row
        observed = "Every villager's effort and total payoff so far:\n" + _table(rows, -1)
        own_text = "Your own row in that table:\n" + own_row
    else:  # a sample of peers, then oneself
        observed = ""
        own_text = (
            "You observe the fishing effort and total payoff of a few other villagers, and your own:\n"
            + _table([*rows, own], me)
        )
    hint = ""
    if model.p.universalization_hint:
        safe = model.stock / (2 * len(model.living()) or 1)
        hint = (
            f"\nIf every villager catches more than {safe:.1f} fish today, "
            "there will be fewer fish in the lake next time."
        )
    return {
        "norms_text": intro,
        "own_norm_text": f'Your personal strategy: "{v.norm_text}"',
        "and_policy": " and the community policy" if model.p.group_decision else "",
        "observed_text": observed,
        "own_text": own_text,
        "lake_text": f"The lake currently holds about {model.stock:.0f} fish.",
        "hint_text": hint,
    }


def proposals_text(options: tuple[str, ...]) -> str:
    return "\n".join(f'- "{o}"' for o in options)
