"""The C/D family's own top-level command, registered by entry point (``mesa_dilemmas.commands``).

Its module is imported to list ``mesa-dilemmas --help``, so it imports nothing heavy: the
command's work is imported when the command runs."""

from __future__ import annotations

import argparse

#: implementations an LLM may write per strategy description before the description is dropped
DEFAULT_TRIES = 3


def _generate(args: argparse.Namespace) -> int:
    from mesa_dilemmas.dilemmas.binary.experiments.strategy_writing import cmd_generate

    return cmd_generate(args)


def register(sub: argparse._SubParsersAction) -> None:
    """``mesa-dilemmas strategies generate``: the arguments here, the work in
    :mod:`.experiments.strategy_writing` (imported when the command runs)."""
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
        "--max-tries", type=int, default=DEFAULT_TRIES, help="implementations tried per description"
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
