"""The C/D family's own top-level command, registered by entry point (``mesa_dilemmas.commands``).

Its module is imported to list ``mesa-dilemmas --help``, so it imports nothing heavy: the
command's work is imported when the command runs."""

from __future__ import annotations

import argparse


def _generate(args: argparse.Namespace) -> int:
    from mesa_dilemmas.dilemmas.binary.experiments.strategy_writing import cmd_generate

    return cmd_generate(args)


def _say_vs_do(args: argparse.Namespace) -> int:
    from mesa_dilemmas.dilemmas.binary.experiments.say_vs_do import cmd_say_vs_do

    return cmd_say_vs_do(args)


def _add_say_vs_do(ssub: argparse._SubParsersAction) -> None:
    p = ssub.add_parser(
        "say-vs-do",
        help="does an LLM play a strategy's moves from its description, or from its code?",
    )
    p.add_argument("--game", required=True, help="a binary-action (C/D) game by its name")
    p.add_argument(
        "--set",
        default="reference",
        help="'reference' (the reference strategies) or a strategy set by name or path",
    )
    p.add_argument(
        "--strategy",
        action="append",
        metavar="SPEC_OR_NAME",
        help="only this strategy (a reference spec such as 'tft(0.5)', or a name in --set); repeatable",
    )
    p.add_argument("--llm", required=True, help="LLM spec: local, openai:gpt-5-mini, replay:...")
    p.add_argument("-n", type=int, default=4, help="players (default 4)")
    p.add_argument("--rounds", type=int, default=10, help="rounds per trajectory (default 10)")
    p.add_argument("--trajectories", type=int, default=3, help="opponent trajectories (default 3)")
    p.add_argument("--mode", choices=("description", "code", "both"), default="both")
    p.add_argument("--answer-mode", choices=("tags", "native"), help="default: the settings'")
    p.add_argument("--max-tokens", type=int, help="reply token limit per decision")
    p.add_argument("--max-calls", type=int, help="budget: provider calls")
    p.add_argument("--llm-settings", metavar="FILE", help="a TOML file with an [llm] table")
    p.add_argument("--seed", type=int, default=0, help="trajectories' and calls' seed")
    p.add_argument("--out", default="say_vs_do", help="output directory (default ./say_vs_do)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    p.add_argument(
        "--estimate",
        action="store_true",
        help="price the run instead: every prompt rendered dry and counted, nothing sent",
    )
    p.set_defaults(func=_say_vs_do)


def register(sub: argparse._SubParsersAction) -> None:
    """``mesa-dilemmas strategies generate`` and ``strategies say-vs-do``: the arguments here,
    the work in :mod:`.experiments.strategy_writing` and :mod:`.experiments.say_vs_do`
    (imported when the command runs)."""
    strategies = sub.add_parser("strategies", help="write strategy sets with an LLM")
    ssub = strategies.add_subparsers(dest="strategies_command", required=True)
    p = ssub.add_parser(
        "generate",
        help="an LLM writes a strategy set: descriptions, code, checks in the sandbox",
    )
    p.add_argument("--game", required=True, help="a binary-action (C/D) game by its name")
    p.add_argument("--attitude", required=True, help="collective, exploitative or any word")
    p.add_argument("--model", required=True, help="LLM spec: local, openai:gpt-5-mini, replay:...")
    p.add_argument("-n", type=int, required=True, help="strategies to write")
    p.add_argument("--out", required=True, help="the set's directory (new, or --resume it)")
    p.add_argument("--name", help="the set's name (default <model>_<attitude>_<game>)")
    p.add_argument(
        "--max-tries",
        type=int,
        help="implementations tried per description (default: the experiment's, 3)",
    )
    p.add_argument("--seed", type=int, default=0, help="run seed of the calls' sample ids")
    p.add_argument("--llm", metavar="FILE", help="a TOML file with an [llm] table (settings)")
    p.add_argument("--max-calls", type=int, help="budget: provider calls")
    p.add_argument("--max-cost", type=float, help="budget: USD")
    p.add_argument("--description-tokens", type=int, default=700)
    p.add_argument("--code-tokens", type=int, default=1200)
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a killed or stopped run in --out (no call is paid twice)",
    )
    p.add_argument(
        "--batch",
        action="store_true",
        help="send each round's calls as one batch job (OpenAI, Anthropic): batch "
        "prices; --resume polls a pending job",
    )
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_generate)
    _add_say_vs_do(ssub)
