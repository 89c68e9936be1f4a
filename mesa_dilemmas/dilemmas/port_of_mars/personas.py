"""Port of Mars personas as numbers: what an SVO angle, a cultural group or a trait set means
for a rule player (:class:`PlayerParams`), and the preset personas of paper 001's experiments.

**SVO** (paper 001 Sec. 4.2).  With ``s = sin(theta)`` (weight on others) and
``c = cos(theta)`` (weight on oneself) every parameter varies continuously with
the angle: the calm-round share of coins put into port health rises with ``s``,
as do the port health (after the next wear) a player tries to keep and the share
of a projected shortfall it covers; the logit of taking a dirty accomplishment
falls with ``s``; trade offers are more often selfish (ask more units than
offered) at low angles and generous at high ones; a trade is accepted when
``c * own gain + s * partner's gain > 0``, so pro-self players reject more.  SVO categories
use the one boundary set of the project (:func:`mesa_dilemmas.agents.persona.svo_category`).

**Cultural groups** (Sec. 4.1) and the **cooperative / selfish trait sets** are
presets: an SVO-equivalent angle read off each description plus overrides for
what the description stresses (respect for agreed structure -> high
conformity to meeting pledges; "interactions as negotiations" -> more and
harder-nosed offers; "do not negatively impact anyone" -> never dirty).
They are modelling choices written down here, not fitted to the paper's tables.
What an LLM player is *told* about its persona is game wording and lives with the game
(``prompts/parts/personas.toml``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from mesa_dilemmas.agents.persona import (
    SVO_ALTRUISTIC_ABOVE,
    SVO_COMPETITIVE_BELOW,
    SVO_PROSOCIAL_ABOVE,
    Persona,
    svo_category,
)

#: estimated coins to obtain one unit of a resource one cannot buy (make a trade good, trade 1:1, risk)
TRADE_PRICE = 4.0
#: a non-goal accomplishment estimated to cost more coins than this is discarded
DISCARD_ABOVE_COINS = 14.0
#: how far (fraction of coins) a meeting pledge may go beyond a player's usual ceiling
MEETING_STRETCH = 0.2
#: keep the current goal unless another card is this much more efficient
GOAL_SWITCH_MARGIN = 1.3

CULTURAL_GROUPS: tuple[str, ...] = (
    "hierarchical-individualist",
    "hierarchical-communitarian",
    "egalitarian-individualist",
    "egalitarian-communitarian",
)
TRAIT_SETS: dict[str, tuple[str, ...]] = {
    "cooperative": ("altruistic", "cooperative", "empathetic", "generous", "selfless"),
    "selfish": ("self-centred", "selfish", "uncooperative", "machiavellian"),
}


def _clip(x: float, lo: float, hi: float) -> float:
    return float(min(hi, max(lo, x)))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass(frozen=True)
class PlayerParams:
    """What a rule player's persona means in numbers (see the module docstring)."""

    #: SVO-equivalent angle in degrees (the other fields default from it)
    angle: float
    #: weight on own outcome (cos) and on others' (sin)
    self_weight: float
    others_weight: float
    #: fraction of coins put into port health in a calm round
    health_base: float
    #: most coins (fraction) it puts into port health unless the port would fail at the next wear
    health_cap: float
    #: port health after the next wear the player tries to secure
    health_target: float
    #: fraction of the projected shortfall below the target the player covers itself
    health_share: float
    #: how far the player moves toward its meeting pledge (0: cheap talk, 1: keeps its word)
    conformity: float
    #: logit bias of taking an available dirty accomplishment
    dirty_bias: float
    #: never take a dirty accomplishment that would leave projected port health below this
    dirty_floor: float
    #: probability of discarding a dirty accomplishment it did not take
    discard_dirty: float
    #: probabilities of a selfish / generous offer (the rest are fair)
    p_selfish: float
    p_generous: float
    #: accept a trade when c * own gain + s * partner gain exceeds this
    accept_threshold: float
    #: logit bias of saying yes to Personal Gain
    personal_gain_bias: float
    #: logit bias of voting Hero (rather than Pariah)
    hero_bias: float
    #: most offers this player makes in a trade round (the game's max_offers caps it)
    max_offers: int = 1


def svo_params(angle: float) -> PlayerParams:
    """Behavioural parameters as continuous functions of the SVO angle (degrees)."""
    rad = math.radians(angle)
    s, c = math.sin(rad), math.cos(rad)
    return PlayerParams(
        angle=float(angle),
        self_weight=c,
        others_weight=s,
        health_base=_clip(0.33 + 0.35 * s, 0.05, 0.9),
        health_cap=_clip(0.40 + 0.35 * s, 0.1, 1.0),
        health_target=_clip(30.0 + 0.6 * angle, 10.0, 65.0),
        health_share=_clip(0.2 + 0.5 * s, 0.05, 0.8),
        conformity=_clip(0.3 + 0.6 * s, 0.0, 1.0),
        dirty_bias=0.2 - 3.0 * s,
        dirty_floor=_clip(12.0 + 0.5 * angle, 5.0, 60.0),
        discard_dirty=_clip(0.05 + 0.8 * s, 0.0, 0.95),
        p_selfish=_clip(0.35 - 0.6 * s, 0.02, 0.9),
        p_generous=_clip(0.05 + 0.45 * s, 0.0, 0.6),
        accept_threshold=0.0,
        personal_gain_bias=1.0 - 4.0 * s,
        hero_bias=0.3 + 2.0 * s,
    )


#: cultural group -> (SVO-equivalent angle, rule-parameter overrides)
CULTURAL_PRESETS: dict[str, tuple[float, dict[str, Any]]] = {
    "hierarchical-individualist": (
        0.0,
        {"conformity": 0.8, "dirty_bias": 1.4},
    ),
    "hierarchical-communitarian": (
        45.0,
        {"conformity": 0.95, "health_share": 0.9},
    ),
    "egalitarian-individualist": (
        -5.0,
        {"conformity": 0.15, "max_offers": 2, "p_selfish": 0.55, "accept_threshold": 0.1},
    ),
    "egalitarian-communitarian": (
        50.0,
        {"dirty_bias": -6.0, "discard_dirty": 0.95, "p_selfish": 0.0, "p_generous": 0.5},
    ),
}

#: trait set -> (SVO-equivalent angle, rule-parameter overrides)
TRAIT_PRESETS: dict[str, tuple[float, dict[str, Any]]] = {
    "cooperative": (
        75.0,
        {"discard_dirty": 0.95, "conformity": 1.0},
    ),
    "selfish": (
        -35.0,
        {"conformity": 0.0, "accept_threshold": 0.2, "p_selfish": 0.85, "p_generous": 0.0},
    ),
}


def svo_persona(angle: float) -> Persona:
    return Persona(svo_angle=float(angle), extra={"svo_category": svo_category(angle)})


def cultural_persona(group: str) -> Persona:
    if group not in CULTURAL_PRESETS:
        raise ValueError(f"unknown cultural group {group!r}; known: {', '.join(CULTURAL_GROUPS)}")
    return Persona(cultural_group=group)


def trait_persona(name: str) -> Persona:
    if name not in TRAIT_PRESETS:
        raise ValueError(f"unknown trait set {name!r}; known: {', '.join(TRAIT_PRESETS)}")
    return Persona(traits=TRAIT_SETS[name], extra={"trait_set": name})


def bot_persona() -> Persona:
    return Persona(extra={"policy": "reference_bot"})


def preset_personas(
    preset: str,
    *,
    svo_angles: Sequence[float] = (-15, 0, 15, 30, 60),
    cultural_groups: Sequence[str] = CULTURAL_GROUPS + ("random",),
    traits: Sequence[str] = ("cooperative", "selfish", "cooperative", "selfish", "random"),
    rng: np.random.Generator | None = None,
) -> list[Persona]:
    """Five personas, one per seat, for a preset; ``"random"`` entries draw from ``rng``."""
    rng = rng if rng is not None else np.random.default_rng(0)
    if preset == "svo":
        return [svo_persona(a) for a in svo_angles]
    if preset == "cultural":
        return [
            cultural_persona(CULTURAL_GROUPS[int(rng.integers(4))] if g == "random" else g)
            for g in cultural_groups
        ]
    if preset == "traits":
        names = sorted(TRAIT_PRESETS)
        return [trait_persona(names[int(rng.integers(2))] if t == "random" else t) for t in traits]
    if preset == "reference_bot":
        return [bot_persona() for _ in range(5)]
    raise ValueError(f"unknown preset {preset!r}")


def persona_label(persona: Persona) -> str:
    """Short label grouping results by persona: ``svo-15``, a cultural group, a trait set, ``bot``."""
    if persona.svo_angle is not None:
        return f"svo{persona.svo_angle:g}"
    if persona.cultural_group:
        return persona.cultural_group
    if persona.extra.get("trait_set"):
        return str(persona.extra["trait_set"])
    if persona.extra.get("policy") == "reference_bot":
        return "bot"
    return persona.label()


def params_for(persona: Persona) -> PlayerParams:
    """The rule parameters a persona implies (an explicit ``extra["params"]`` dict overrides)."""
    if persona.svo_angle is not None:
        params = svo_params(persona.svo_angle)
    elif persona.cultural_group in CULTURAL_PRESETS:
        angle, overrides = CULTURAL_PRESETS[persona.cultural_group]
        params = replace(svo_params(angle), **overrides)
    elif persona.extra.get("trait_set") in TRAIT_PRESETS:
        angle, overrides = TRAIT_PRESETS[persona.extra["trait_set"]]
        params = replace(svo_params(angle), **overrides)
    elif persona.disposition == "altruistic":
        params = svo_params(60.0)
    elif persona.disposition == "selfish":
        params = svo_params(-15.0)
    else:
        params = svo_params(0.0)
    extra = persona.extra.get("params")
    if extra:
        params = replace(params, **extra)
    return params


__all__ = [
    "CULTURAL_GROUPS",
    "CULTURAL_PRESETS",
    "SVO_ALTRUISTIC_ABOVE",
    "SVO_COMPETITIVE_BELOW",
    "SVO_PROSOCIAL_ABOVE",
    "TRAIT_PRESETS",
    "TRAIT_SETS",
    "PlayerParams",
    "bot_persona",
    "cultural_persona",
    "params_for",
    "persona_label",
    "preset_personas",
    "svo_category",
    "svo_params",
    "svo_persona",
    "trait_persona",
]
