"""The words of the strategy-writing pipeline for the binary-action games (paper 002, Sec. 4.1).

Plain data, written in our own words: each game's package explains its rules with its
parameters as symbols, in the file its rules class names (``BinaryGame.WRITING_PROMPT``,
``strategy_writing.toml`` beside its model; a strategy is played at many group sizes and
reads the values from ``self.game``); ``writing.toml`` here holds the description prompt,
the code prompt (the strategy interface) and the attitude glosses.  The
attitude is a parameter: the words in ``[attitudes]`` are explained, any other
word is used as it is.  The pipeline itself (LLM calls, checks, retries) is
:mod:`mesa_dilemmas.dilemmas.binary.experiments.strategy_writing`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


@cache
def _read(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def _table(name: str) -> dict[str, Any]:
    return _read(HERE / f"{name}.toml")


def _game_table(game: str) -> dict[str, Any]:
    """The game's own strategy-writing table (``rules``, ``params``), from its package."""
    from mesa_dilemmas.dilemmas.binary.rules import rules_of

    try:
        path = rules_of(game).writing_prompt()
    except ValueError:
        path = None
    if path is None or not path.is_file():
        raise ValueError(f"game: no strategy-writing prompt for {game!r}")
    return _read(path)


def game_rules(game: str) -> str:
    """The rules of ``game``, its parameters as symbols (a strategy reads their values)."""
    return _game_table(game)["rules"]


def attitude_gloss(attitude: str) -> str:
    """What an attitude word means in the prompt (the word itself when it has no gloss)."""
    return _table("writing")["attitudes"].get(attitude, attitude)


def _common(game: str, attitude: str) -> dict[str, str]:
    from mesa_dilemmas.dilemmas.binary.rules import rules_of

    table = _game_table(game)
    stock = rules_of(game).HAS_STOCK
    names = [p.partition(" = ")[0] for p in table["params"]]
    return {
        "rules": table["rules"],
        "attitude": attitude,
        "attitude_gloss": attitude_gloss(attitude),
        "stock_clause": " -- and the stock at the start of every round, the current one included"
        if stock
        else "",
        "param_fields": ", ".join(f"self.game.{k}" for k in names),
        "stock_fields": (
            ";\n- `history.stock` (the stock now, before this round's harvest), "
            "`history.stocks` (the stock at the start of every round so far, the current one last)"
        )
        if stock
        else "",
    }


def description_messages(game: str, attitude: str) -> list[tuple[str, str]]:
    """(role, text) messages asking for a natural-language strategy."""
    w = _table("writing")
    values = _common(game, attitude)
    values["observation"] = w["observation"].format(**values)
    return [("system", w["description_system"]), ("user", w["description_user"].format(**values))]


def code_messages(
    game: str, attitude: str, description: str, problems: list[str] | None = None
) -> list[tuple[str, str]]:
    """(role, text) messages asking for the code of ``description`` (with the last rejection)."""
    w = _table("writing")
    values = _common(game, attitude)
    values["observation"] = w["observation"].format(**values)
    values["description"] = description.strip()
    user = w["code_user"].format(**values)
    if problems:
        user += "\n\n" + w["retry_note"].format(problems="\n".join(f"- {p}" for p in problems))
    return [("system", w["code_system"]), ("user", user)]
