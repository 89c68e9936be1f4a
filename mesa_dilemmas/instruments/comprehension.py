"""``mesa-dilemmas comprehension``: does a model understand a game before it plays one?

Each game with a comprehension battery (entry point group ``mesa_dilemmas.comprehension``,
game name -> module; :mod:`mesa_dilemmas.dilemmas.comprehension` says what the module holds)
generates its items at random states drawn from the seed: a question in our own words, an
answer spec (a number with a tolerance, or one of a few options) and the answer the game's own
code computed at that state.  Each item is one :class:`~mesa_dilemmas.agents.decisions.Decision`
answered by an LLM policy (the population's ``llm`` kind, built by the LLM layer's
``make_policy``): the game's own system text in the run's prompt variant (``--variant``, the
policy's ``prompt_variant``) first, then what the question needs and the question.  The policy
renders, calls, parses, re-asks an invalid answer through the layer's shared path
(``failure_kind``, ``reask_messages``) and counts it; an item still without a valid answer is
*malformed*: counted, and scored wrong, never filled in.  Every call goes through the response
cache (its sample id is the seed and the item's place in its battery), so a rerun is free.

The table gives the accuracy per skill with a 95% Wilson interval (statsmodels), the chance
rate (what an answerer drawing uniformly among the legal answers scores, from the specs), and
the malformed count; ``--out`` receives it as CSV, Markdown and JSON with every item's answer.
The latest result of each model, game and prompt variant is also kept beside the response cache
(``<cache>/comprehension/``): :func:`comprehension_gate` reads it when a run's ``[llm]
min_comprehension`` is set, and stops the run or warns (``on_low_comprehension``).

This module stays light at import (``mesa-dilemmas --help`` reads it): numpy, the games and the
LLM layer are imported inside the functions.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

    from mesa_dilemmas.dilemmas.comprehension import Item, Skill
    from mesa_dilemmas.llm.settings import LLMSettings

HELP = "does a model understand a game: questions with answers computed from its rules"

DESCRIPTION = (
    "Each game's comprehension battery is generated at random states from --seed: questions "
    "about its rules (payoffs, thresholds, costs, what a fine or an event does) whose answers "
    "the game's own code computes. Each item is asked once, in the game's own framing and the "
    "prompt variant --variant, through the LLM layer (re-asks and the response cache included: "
    "a rerun makes no provider call). The table gives the accuracy per skill with a 95% Wilson "
    "interval, the chance rate of a uniform guesser and the malformed answers (still invalid "
    "after the re-asks: counted, scored wrong)."
)

#: the columns of the per-skill table, in order
COLUMNS = (
    "model",
    "game",
    "variant",
    "skill",
    "items",
    "correct",
    "accuracy",
    "ci_low",
    "ci_high",
    "chance",
    "malformed",
    "parse_failures",
)

#: the columns of the per-item table, in order
ITEM_COLUMNS = (
    "game",
    "number",
    "key",
    "skill",
    "question",
    "expected",
    "tolerance",
    "answer",
    "correct",
    "malformed",
    "parse_failures",
    "error",
)

#: the row of a game's whole battery in the per-skill table
ALL = "all"


def __getattr__(name: str) -> Any:
    """The item types, from the games' shared core (imported when first asked for, so this
    module stays light)."""
    if name in ("Item", "Skill"):
        from mesa_dilemmas.dilemmas import comprehension

        return getattr(comprehension, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the batteries -----------------------------------------------------------------------------


def battery_games() -> list[str]:
    """The registered games with a comprehension battery (entry points), in name order."""
    from mesa_dilemmas.dilemmas.comprehension import COMPREHENSION_GROUP
    from mesa_dilemmas.dilemmas.registry import extensions, games

    known = set(games())
    return [name for name in extensions(COMPREHENSION_GROUP) if name in known]


def battery_module(game: str) -> ModuleType:
    """The module of ``game``'s battery (its entry point), or a LookupError naming the games
    that have one."""
    from mesa_dilemmas.dilemmas.comprehension import COMPREHENSION_GROUP
    from mesa_dilemmas.dilemmas.registry import extensions

    entry = extensions(COMPREHENSION_GROUP).get(game)
    if entry is None:
        raise LookupError(
            f"--game: {game!r} has no comprehension battery; games with one: "
            f"{', '.join(battery_games()) or 'none'}"
        )
    return entry.load()


def items_for(game: str, *, n: int = 100, seed: int = 0) -> list[Item]:
    """``n`` items of ``game``'s battery at states drawn from ``seed`` (the same every time)."""
    import numpy as np

    if n < 1:
        raise ValueError(f"--items: must be at least 1 (got {n})")
    items = battery_module(game).battery(game, np.random.default_rng(seed), n)
    if len(items) != n or any(it.game != game for it in items):
        raise ValueError(f"{game}: its battery returned {len(items)} items, not {n} of its own")
    return items


def skills_of(game: str) -> list[str]:
    """The names of ``game``'s skills, in its battery's order."""
    return [s.name for s in battery_module(game).skills(game)]


# -- asking ------------------------------------------------------------------------------------


def _framing(game: str, variant: int, item: Item, templates_dir: str | None) -> str:
    """The game's own system text in ``variant``, filled from the item's framing fields."""
    from mesa_dilemmas.dilemmas.registry import game_model
    from mesa_dilemmas.llm.population import register_game_prompts
    from mesa_dilemmas.llm.prompts import variant_system

    model_cls = game_model(game)
    register_game_prompts(model_cls)
    prefix = getattr(model_cls, "GAME", "") or game
    return variant_system(prefix, variant, obs=item.framing, templates_dir=templates_dir)


def _template(decision: Any, fields: dict[str, Any]) -> Any:
    """An item's prompt: the game's framing (already in the run's variant) as the system text,
    the question as the user's, the same words in every variant the renderer picks."""
    from mesa_dilemmas.instruments.persona_check import escape_braces
    from mesa_dilemmas.llm.prompts import Template, Variant

    obs = decision.observation
    user, system = escape_braces(obs["question"]), escape_braces(obs["system"])
    same = tuple(Variant(user, system) for _ in range(int(obs["variant"])))
    return Template(user=user, system=system, variants=same)


def _question(item: Item) -> str:
    return f"{item.context}\n\n{item.question}" if item.context else item.question


def ask(
    spec: str,
    items: Sequence[Item],
    *,
    settings: LLMSettings,
    seed: int = 0,
    variant: int = 0,
) -> list[dict[str, Any]]:
    """Ask every item (of one game) once with model ``spec``; one row per item: the answer
    (None when none was valid after the re-asks), whether it is right, whether it was
    malformed, how many replies could not be read.  Call inside a run session to record the
    calls; outside one they still go through the cache and budget."""
    import asyncio

    from mesa_dilemmas.agents.decisions import Decision
    from mesa_dilemmas.agents.persona import Persona
    from mesa_dilemmas.agents.population import Group, Population
    from mesa_dilemmas.llm.prompts import register_template

    if not items:
        return []
    game = items[0].game
    if any(it.game != game for it in items):
        raise ValueError("ask: the items of one game at a time")
    kind = f"comprehension.{game}"
    register_template(kind, _template)
    # every [llm] setting of the run, the prompt variant, and no stop for fallbacks: a
    # malformed answer is this instrument's measurement (counted and scored wrong)
    options = {
        **settings.model_dump(exclude_unset=False),
        "prompt_variant": variant,
        "max_fallback_rate": 1.0,
    }
    policy = Population().build(
        Group(llm=spec, llm_options=options),
        model=None,
        seat=None,
        persona=Persona(),
        rules={},
    )
    decisions = [
        Decision(
            kind=kind,
            spec=item.spec,
            observation={
                "system": _framing(game, variant, item, settings.templates_dir),
                "question": _question(item),
                "variant": variant,
            },
            step=number,  # the sample id: (seed, the item's place in its battery)
            fallback=None,
            meta={"run_seed": seed},
        )
        for number, item in enumerate(items)
    ]

    async def run_all() -> list[Any]:
        return await asyncio.gather(*(policy.adecide(d) for d in decisions))

    answers = asyncio.run(run_all())
    rows = []
    for number, (item, answer) in enumerate(zip(items, answers, strict=True)):
        malformed = bool(answer.fell_back)
        value = None if malformed else answer.value
        rows.append(
            {
                "game": game,
                "number": number,
                "key": item.key,
                "skill": item.skill,
                "question": item.question,
                "expected": item.answer,
                "tolerance": item.tolerance,
                "chance": item.chance(),
                "answer": value,
                "correct": (not malformed) and item.correct(value),
                "malformed": malformed,
                "parse_failures": int(answer.parse_failures),
                "error": answer.error or "",
            }
        )
    return rows


# -- scoring -----------------------------------------------------------------------------------


def wilson(correct: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``correct`` out of ``n`` (NaN for n = 0)."""
    if n == 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(correct, n, alpha=1 - level, method="wilson")
    return float(low), float(high)


def summarise(
    rows: Sequence[dict[str, Any]],
    *,
    model: str,
    variant: int,
    skills: Mapping[str, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """One row per (game, skill), in the battery's skill order (``skills``: game -> its skill
    names; else as the items come), then the game's ``all`` row."""
    out = []
    games = list(dict.fromkeys(r["game"] for r in rows))
    for game in games:
        mine = [r for r in rows if r["game"] == game]
        order = [s for s in (skills or {}).get(game, ()) if any(r["skill"] == s for r in mine)]
        order += [s for s in dict.fromkeys(r["skill"] for r in mine) if s not in order]
        for skill in [*order, ALL]:
            group = mine if skill == ALL else [r for r in mine if r["skill"] == skill]
            n = len(group)
            k = sum(bool(r["correct"]) for r in group)
            low, high = wilson(k, n)
            out.append(
                {
                    "model": model,
                    "game": game,
                    "variant": variant,
                    "skill": skill,
                    "items": n,
                    "correct": k,
                    "accuracy": k / n if n else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                    "chance": sum(r["chance"] for r in group) / n if n else math.nan,
                    "malformed": sum(bool(r["malformed"]) for r in group),
                    "parse_failures": sum(r["parse_failures"] for r in group),
                }
            )
    return out


def _pct(x: float) -> str:
    return "" if isinstance(x, float) and math.isnan(x) else f"{x:.0%}"


def markdown(summary: Sequence[dict[str, Any]], header: Sequence[str] = ()) -> str:
    """The per-skill table as Markdown."""
    lines = [*header, ""] if header else []
    lines += [
        "| game | skill | items | correct | accuracy | 95% CI (Wilson) | chance | malformed "
        "| unreadable replies |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in summary:
        bold = "**" if r["skill"] == ALL else ""
        lines.append(
            f"| {r['game']} | {bold}{r['skill']}{bold} | {r['items']} | {r['correct']} "
            f"| {_pct(r['accuracy'])} | [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}] "
            f"| {_pct(r['chance'])} | {r['malformed']} | {r['parse_failures']} |"
        )
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return "" if value is None else value


def write_outputs(
    summary: Sequence[dict[str, Any]],
    details: Sequence[dict[str, Any]],
    out: Path,
    meta: dict[str, Any],
    header: Sequence[str] = (),
) -> list[Path]:
    """``comprehension.csv`` (per skill), ``comprehension_items.csv`` (per item),
    ``comprehension.md`` and ``comprehension.json`` (the run's settings and both tables)."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    table = out / "comprehension.csv"
    with table.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        for r in summary:
            w.writerow({k: _cell(r[k]) for k in COLUMNS})
    per_item = out / "comprehension_items.csv"
    with per_item.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(ITEM_COLUMNS))
        w.writeheader()
        for r in details:
            w.writerow({k: _cell(r[k]) for k in ITEM_COLUMNS})
    md = out / "comprehension.md"
    md.write_text(markdown(summary, header))
    data = out / "comprehension.json"
    data.write_text(
        json.dumps({**meta, "skills": list(summary), "items": list(details)}, indent=1, default=str)
    )
    return [table, per_item, md, data]


# -- the stored results and the gate -----------------------------------------------------------


# kept by the LLM layer's run guard, which holds a run to them (mesa_dilemmas/llm/guard.py)
from mesa_dilemmas.llm.guard import (  # noqa: E402
    comprehension_gate,
    load_result,
    model_label,
    store_result,
)

# -- the command -------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """``mesa-dilemmas comprehension --llm SPEC [--game G] [--items N] [--seed S] [--variant K]
    [--out DIR]``."""
    from mesa_dilemmas.instruments.persona_check import add_llm_arguments

    p = subparsers.add_parser("comprehension", help=HELP, description=DESCRIPTION)
    p.add_argument(
        "--llm", required=True, metavar="SPEC", help="the model: local, openai:MODEL, ..."
    )
    p.add_argument(
        "--game",
        action="append",
        metavar="G",
        help="a game (repeatable; default: every game with a comprehension battery)",
    )
    p.add_argument("--items", type=int, default=100, help="items per game (default 100)")
    p.add_argument(
        "--seed", type=int, default=0, help="draws the items' states; the sample ids (default 0)"
    )
    p.add_argument(
        "--variant",
        type=int,
        metavar="K",
        help="the prompt variant the questions are asked in (overrides [llm] prompt_variant; "
        "default 0)",
    )
    p.add_argument(
        "--out", metavar="DIR", help="where the tables go (default runs/comprehension-<time>)"
    )
    add_llm_arguments(p)
    p.set_defaults(func=cmd_comprehension)


def cmd_comprehension(args: argparse.Namespace) -> int:
    import time
    import tomllib

    from mesa_dilemmas import llm
    from mesa_dilemmas.files import out_dir_unusable
    from mesa_dilemmas.instruments.persona_check import llm_table, recorded_run, usage_error

    if args.items < 1:
        return usage_error(f"--items: must be at least 1 (got {args.items})")
    if args.variant is not None and args.variant < 0:
        return usage_error(f"--variant: must be 0 or more (got {args.variant})")
    try:
        table = llm_table(args, prompt_variant=args.variant)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return usage_error(f"--settings {args.settings}: {exc}")
    try:
        settings = llm.LLMSettings.from_table(table)
    except llm.LLMConfigError as exc:  # one line naming the key
        return usage_error(str(exc))
    try:
        if not args.estimate:  # a price needs no key
            llm.preflight([args.llm], settings)
    except (llm.LLMConfigError, ValueError) as exc:
        return usage_error(f"--llm: {str(exc).splitlines()[0]}")
    variant = settings.prompt_variant
    if settings.dry_run:
        return usage_error(
            "--settings: dry_run answers at random; a comprehension check asks a model"
        )
    games = args.game or battery_games()
    try:
        batteries = {g: items_for(g, n=args.items, seed=args.seed) for g in games}
    except (LookupError, ValueError) as exc:
        return usage_error(str(exc))
    if not batteries:
        return usage_error("--game: no game has a comprehension battery")
    if args.estimate:
        from mesa_dilemmas.llm.estimate import priced_dry

        def play(dry: LLMSettings) -> None:
            for items in batteries.values():
                ask(args.llm, items, settings=dry, seed=args.seed, variant=variant)

        what = f"{len(batteries)} games x {args.items} items, prompt variant {variant}"
        print(priced_dry(play, settings, what))
        return 0
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = Path(args.out or f"runs/comprehension-{stamp}")
    if problem := out_dir_unusable(out):
        return usage_error(f"--out {str(out)!r}: {problem}")
    label = model_label(args.llm)
    done, code = recorded_run(
        settings,
        out,
        lambda: [
            row
            for items in batteries.values()
            for row in ask(args.llm, items, settings=settings, seed=args.seed, variant=variant)
        ],
    )
    if done is None:
        return code
    details, accounting = done
    skills = {g: skills_of(g) for g in batteries}
    summary = summarise(details, model=label, variant=variant, skills=skills)
    calls = (
        f"LLM calls: {accounting.get('provider_calls', 0)} to the provider, "
        f"{accounting.get('cache_hits', 0)} from the cache"
    )
    meta = {
        "model": label,
        "seed": args.seed,
        "variant": variant,
        "items_per_game": args.items,
        "answer_mode": settings.answer_mode,
        "temperature": settings.temperature,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "run_dir": str(out),
    }
    header = [
        f"# Comprehension: {label}",
        "",
        f"Model `{label}`, {args.items} items per game, seed {args.seed}, prompt variant "
        f"{variant}, answer mode {settings.answer_mode}, temperature "
        f"{settings.temperature:g}, {meta['date']}. Accuracy with a 95% Wilson interval; "
        "chance: a uniform guesser's expected accuracy; malformed: no valid answer after the "
        f"re-asks (scored wrong). {calls}.",
    ]
    write_outputs(summary, details, out, meta, header)
    for row in summary:
        if row["skill"] == ALL:
            store_result(settings, row, meta)
    print(markdown(summary), end="")
    print(
        f"llm: {accounting.get('provider_calls', 0)} provider calls, "
        f"{accounting.get('cache_hits', 0)} from the cache -> {out}"
    )
    return 0


__all__ = [
    "ALL",
    "Item",
    "Skill",
    "COLUMNS",
    "ask",
    "battery_games",
    "battery_module",
    "comprehension_gate",
    "items_for",
    "load_result",
    "markdown",
    "register",
    "store_result",
    "summarise",
    "wilson",
]
