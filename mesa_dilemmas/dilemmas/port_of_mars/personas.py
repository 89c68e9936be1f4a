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
use the one boundary set of the project (:func:`.persona.svo_category`).

**Cultural groups** (Sec. 4.1) and the **cooperative / selfish trait sets** are
presets: an SVO-equivalent angle read off each description plus a few overrides for
what the description stresses beyond concern for others (respect for an agreed order ->
high conformity to meeting pledges; "interactions as negotiations" -> more and
harder-nosed offers).  Every value carries its provenance (:class:`Setting`: read from
the paper's persona text, a behavioural rule, or tuned to a number of the paper), and so
does every SVO formula (:data:`SVO_PROVENANCE`); :func:`provenance_rows` lists them all
(docs/port_of_mars.md prints that table).  Nothing was fitted to Table 1: the two
overrides that existed only to produce its dirty-card order (the hierarchical
individualist's extra dirty bias, the egalitarian communitarian who never took a dirty
card) are gone, and so are the overrides that only restated, a second time, the concern
for others an angle already carries (:data:`DROPPED_OVERRIDES`).
What an LLM player is *told* about its persona is game wording and lives with the game
(``prompts/parts/personas.toml``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.dilemmas.port_of_mars.persona import (
    SVO_ALTRUISTIC_ABOVE,
    SVO_COMPETITIVE_BELOW,
    SVO_PROSOCIAL_ABOVE,
    CrewPersona,
    svo_category,
)

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


Source = Literal["persona text", "behavioural rule", "tuned"]


@dataclass(frozen=True)
class Setting:
    """A preset's value and where it comes from: ``persona text`` (read off the paper's
    description of the persona, paraphrased in ``why``), ``behavioural rule`` (a rule of
    play, not a reading of the paper) or ``tuned`` (set to reproduce a number of the paper,
    named in ``why``; the findings it encodes are then by construction, ``encodes``)."""

    value: Any
    source: Source
    why: str
    #: the claims (``Claim.key``) whose finding this value was written or tuned to show
    encodes: tuple[str, ...] = ()


#: the claims the tuned health formulas encode (the SVO health and points gradients)
HEALTH_FINDINGS = (
    "pom_health",
    "pom_health_40",
    "pom_points",
    "pom_traits_health",
    "pom_traits_points",
    "pom_groups_health",
    "pom_groups_best",
)

#: where each SVO formula of :func:`svo_params` comes from (the value is the formula)
SVO_PROVENANCE: dict[str, Setting] = {
    "self_weight, others_weight": Setting(
        "cos theta, sin theta",
        "behavioural rule",
        "the SVO definition (Sec. 4.2): weight on one's own outcome and on the others'",
    ),
    "health_base": Setting(
        "0.33 + 0.35 s",
        "tuned",
        "levels set to Fig. 2A's ~3 coins a round at -15 and ~7 at 60 (rising in s by design)",
        HEALTH_FINDINGS,
    ),
    "health_cap": Setting(
        "0.40 + 0.35 s",
        "tuned",
        "as health_base: Fig. 2A's per-round health spend",
        HEALTH_FINDINGS,
    ),
    "health_target": Setting(
        "30 + 0.6 theta, 10..65",
        "behavioural rule",
        "the game's event thresholds: from staying alive (-15) to one event a round (60)",
    ),
    "health_share": Setting(
        "0.2 + 0.5 s",
        "tuned",
        "as health_base: Fig. 2A's per-round health spend",
        HEALTH_FINDINGS,
    ),
    "conformity": Setting(
        "0.3 + 0.6 s",
        "behavioural rule",
        "who keeps a pledge: the more weight on others, the more (not set to any number)",
    ),
    "dirty_bias": Setting(
        "0.2 - 3 s",
        "tuned",
        "levels set to Fig. 2A's ~60% dirty at -15 and ~20% at 60 (falling in s by design)",
        ("pom_dirty", "pom_dirty_lowest", "pom_points", "pom_traits_dirty", "pom_traits_points"),
    ),
    "dirty_floor": Setting(
        "12 + 0.5 theta, 5..60",
        "behavioural rule",
        "no harmful accomplishment that would leave the port below a floor rising with theta",
    ),
    "discard_dirty": Setting(
        "0.05 + 0.8 s",
        "behavioural rule",
        "a player with weight on others throws away a harmful card it did not take",
        ("pom_dirty", "pom_dirty_lowest", "pom_traits_dirty"),
    ),
    "p_selfish, p_generous": Setting(
        "0.35 - 0.6 s, 0.05 + 0.45 s",
        "behavioural rule",
        "pro-self players ask for more than they give (written from Fig. 2C's categories)",
        ("pom_trade_selfish",),
    ),
    "accept_threshold": Setting(
        0.0,
        "behavioural rule",
        "accept when cos theta x own gain + sin theta x partner's gain > 0 (the SVO utility)",
        ("pom_trade_reject",),
    ),
    "personal_gain_bias": Setting(
        "1 - 4 s", "behavioural rule", "pro-self players take Personal Gain's coins"
    ),
    "hero_bias": Setting("0.3 + 2 s", "behavioural rule", "pro-social players vote Hero"),
    "max_offers": Setting(1, "behavioural rule", "one offer a trade round, the paper's setting"),
}

#: rules of play outside the persona parameters that encode a finding (players.py, narrator.py)
RULE_PROVENANCE: dict[str, Setting] = {
    "health_plan: a meeting pledge pulls the plan up by conformity, never down": Setting(
        "players.py",
        "behavioural rule",
        "a pledge is a commitment to give at least that much",
        ("pom_communication",),
    ),
    "MEETING_STRETCH": Setting(
        0.2,
        "tuned",
        "a pledge may exceed a player's usual ceiling by 20% of its coins; lowered with the "
        "health formulas to Fig. 2A's per-round spend",
        ("pom_communication",),
    ),
    "LEADER_HEALTH_BONUS and the leadership rule (players.py, led)": Setting(
        0.15,
        "behavioural rule",
        "a player told it leads adds 0.15 to its health shares and keeps its pledge; one told "
        "another leads closes half its conformity gap; announce applies both changes, vanilla "
        "only the leader's, unaware only the others'",
        (
            "pom_lead_announce",
            "pom_lead_vanilla_wins",
            "pom_lead_unaware_wins",
            "pom_groups_best",
        ),
    ),
}

#: cultural group -> its SVO-equivalent angle and overrides, each with its provenance
CULTURAL_SETTINGS: dict[str, dict[str, Setting]] = {
    "hierarchical-individualist": {
        "angle": Setting(
            0.0,
            "persona text",
            "personal success pursued inside an accepted order: individualistic, 0 degrees",
        ),
        "conformity": Setting(
            0.8,
            "persona text",
            "respects authority and an ordered society: follows the group's agreed plan",
        ),
    },
    "hierarchical-communitarian": {
        "angle": Setting(
            45.0,
            "persona text",
            "puts the community's welfare and shared duties first: prosocial, 45 degrees",
        ),
        "conformity": Setting(
            0.95,
            "persona text",
            "wants clearly defined roles in an ordered society: keeps to the agreed plan",
        ),
    },
    "egalitarian-individualist": {
        "angle": Setting(
            -5.0,
            "persona text",
            "puts own achievement first and favours open competition: individualistic, "
            "a little more pro-self than the hierarchical individualist, -5 degrees",
        ),
        "conformity": Setting(
            0.15, "persona text", "no deference to an order: hardly bound by a group plan"
        ),
        "max_offers": Setting(2, "persona text", "treats dealings as bargaining: more offers"),
        "p_selfish": Setting(
            0.55, "persona text", "treats dealings as bargaining: asks for more than it gives"
        ),
        "accept_threshold": Setting(
            0.1, "persona text", "treats dealings as bargaining: accepts only a clear gain"
        ),
    },
    "egalitarian-communitarian": {
        "angle": Setting(
            50.0,
            "persona text",
            "the group first, avoiding choices that leave anyone worse off: prosocial, "
            "a little above the hierarchical communitarian, 50 degrees",
        ),
    },
}

#: trait set -> its SVO-equivalent angle and overrides, each with its provenance
TRAIT_SETTINGS: dict[str, dict[str, Setting]] = {
    "cooperative": {
        "angle": Setting(
            75.0, "persona text", "altruistic, generous, selfless: altruistic, 75 degrees"
        ),
        "conformity": Setting(1.0, "persona text", "cooperative: keeps its meeting pledge"),
    },
    "selfish": {
        "angle": Setting(-35.0, "persona text", "self-centred, selfish: competitive, -35 degrees"),
        "conformity": Setting(0.0, "persona text", "uncooperative: ignores the group's plan"),
        "accept_threshold": Setting(
            0.2, "persona text", "machiavellian: accepts a trade only for a clear gain"
        ),
        "p_selfish": Setting(0.85, "persona text", "machiavellian: asks for more than it gives"),
        "p_generous": Setting(0.0, "persona text", "selfish: never gives more than it asks"),
    },
}

#: overrides removed in the provenance review (issue 35), and why; kept to be shown, not used
DROPPED_OVERRIDES: dict[str, dict[str, tuple[Any, str]]] = {
    "hierarchical-individualist": {
        "dirty_bias": (
            1.4,
            "nothing in the description makes this group dirtier than the egalitarian "
            "individualist; it existed only to give Table 1's dirty-card order",
        ),
    },
    "hierarchical-communitarian": {
        "health_share": (
            0.9,
            "concern for the community is the 45-degree angle already; a second encoding",
        ),
    },
    "egalitarian-communitarian": {
        "dirty_bias": (
            -6.0,
            "'never dirty' restated the group's concern for others (its 50-degree angle) as a "
            "hard rule no other persona has, and put it last in Table 1's dirty-card order",
        ),
        "discard_dirty": (0.95, "as dirty_bias"),
        "p_selfish": (0.0, "concern for others is the angle already (0.35 - 0.6 s = 0)"),
        "p_generous": (0.5, "as p_selfish (0.05 + 0.45 s = 0.39)"),
    },
    "cooperative": {
        "discard_dirty": (0.95, "concern for others is the 75-degree angle already (0.82)"),
    },
}


def _presets(settings: dict[str, dict[str, Setting]]) -> dict[str, tuple[float, dict[str, Any]]]:
    return {
        name: (
            float(values["angle"].value),
            {k: v.value for k, v in values.items() if k != "angle"},
        )
        for name, values in settings.items()
    }


#: cultural group -> (SVO-equivalent angle, rule-parameter overrides)
CULTURAL_PRESETS: dict[str, tuple[float, dict[str, Any]]] = _presets(CULTURAL_SETTINGS)
#: trait set -> (SVO-equivalent angle, rule-parameter overrides)
TRAIT_PRESETS: dict[str, tuple[float, dict[str, Any]]] = _presets(TRAIT_SETTINGS)


def provenance_rows() -> list[tuple[str, str, str, str, str, str]]:
    """Every persona parameter with its provenance: (persona, parameter, value, source, why,
    the claims it encodes), the SVO formulas first, then the cultural and trait presets."""
    rows = [
        ("SVO (every angle)", name, str(s.value), s.source, s.why, ", ".join(s.encodes))
        for name, s in SVO_PROVENANCE.items()
    ]
    rows += [
        ("rule (every persona)", name, str(s.value), s.source, s.why, ", ".join(s.encodes))
        for name, s in RULE_PROVENANCE.items()
    ]
    for table in (CULTURAL_SETTINGS, TRAIT_SETTINGS):
        for persona, values in table.items():
            for name, s in values.items():
                rows.append((persona, name, f"{s.value:g}", s.source, s.why, ", ".join(s.encodes)))
    return rows


def encoded_by(claim_key: str) -> tuple[str, ...]:
    """The persona parameters written or tuned to show a claim (``Claim.by_construction``)."""
    out = [
        f"svo_params {name} = {s.value} ({s.source}: {s.why})"
        for name, s in SVO_PROVENANCE.items()
        if claim_key in s.encodes
    ]
    out += [
        f"{name} = {s.value} ({s.source}: {s.why})"
        for name, s in RULE_PROVENANCE.items()
        if claim_key in s.encodes
    ]
    for table in (CULTURAL_SETTINGS, TRAIT_SETTINGS):
        for persona, values in table.items():
            out += [
                f"{persona} {name} = {s.value:g} ({s.source}: {s.why})"
                for name, s in values.items()
                if claim_key in s.encodes
            ]
    return tuple(out)


def svo_persona(angle: float) -> Persona:
    return CrewPersona(svo_angle=float(angle), extra={"svo_category": svo_category(angle)})


def cultural_persona(group: str) -> Persona:
    if group not in CULTURAL_PRESETS:
        raise ValueError(f"unknown cultural group {group!r}; known: {', '.join(CULTURAL_GROUPS)}")
    return CrewPersona(cultural_group=group)


def trait_persona(name: str) -> Persona:
    if name not in TRAIT_PRESETS:
        raise ValueError(f"unknown trait set {name!r}; known: {', '.join(TRAIT_PRESETS)}")
    return CrewPersona(traits=TRAIT_SETS[name], extra={"trait_set": name})


def bot_persona() -> Persona:
    return CrewPersona(extra={"policy": "reference_bot"})


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


def params_for(persona: CrewPersona) -> PlayerParams:
    """The rule parameters a persona implies (an explicit ``extra["params"]`` dict overrides):
    its SVO angle, its cultural group's or trait set's preset, else an angle of 0."""
    if persona.svo_angle is not None:
        params = svo_params(persona.svo_angle)
    elif persona.cultural_group in CULTURAL_PRESETS:
        angle, overrides = CULTURAL_PRESETS[persona.cultural_group]
        params = replace(svo_params(angle), **overrides)
    elif persona.extra.get("trait_set") in TRAIT_PRESETS:
        angle, overrides = TRAIT_PRESETS[persona.extra["trait_set"]]
        params = replace(svo_params(angle), **overrides)
    else:
        params = svo_params(0.0)
    extra = persona.extra.get("params")
    if extra:
        params = replace(params, **extra)
    return params


__all__ = [
    "CULTURAL_GROUPS",
    "CULTURAL_PRESETS",
    "CULTURAL_SETTINGS",
    "DROPPED_OVERRIDES",
    "HEALTH_FINDINGS",
    "RULE_PROVENANCE",
    "SVO_PROVENANCE",
    "SVO_ALTRUISTIC_ABOVE",
    "SVO_COMPETITIVE_BELOW",
    "SVO_PROSOCIAL_ABOVE",
    "TRAIT_PRESETS",
    "TRAIT_SETTINGS",
    "Setting",
    "encoded_by",
    "provenance_rows",
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
