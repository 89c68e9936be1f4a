"""The words of the strategy-writing pipeline for the binary-action games (paper 002, Sec. 4.1).

Plain data, written in our own words: ``<game>.toml`` explains one game's rules
with its parameters as symbols (a
strategy is played at many group sizes and reads the values from ``self.game``); ``writing.toml`` holds the description prompt,
the code prompt (the strategy interface) and the attitude glosses.  The
attitude is a parameter: the words in ``[attitudes]`` are explained, any other
word is used as it is.  The pipeline itself (LLM calls, checks, retries) is
:mod:`mesa_dilemmas.scenarios.strategy_writing`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


@cache
def _table(name: str) -> dict[str, Any]:
    return tomllib.loads((HERE / f"{name}.toml").read_text())


def game_rules(game: str) -> str:
    """The rules of ``game``, its parameters as symbols (a strategy reads their values)."""
    if not (HERE / f"{game}.toml").is_file():
        raise ValueError(f"game: no strategy-writing prompt for {game!r}")
    return _table(game)["rules"]


def attitude_gloss(attitude: str) -> str:
    """What an attitude word means in the prompt (the word itself when it has no gloss)."""
    return _table("writing")["attitudes"].get(attitude, attitude)


def _common(game: str, attitude: str) -> dict[str, str]:
    stock = game == "common_pool"
    names = [p.partition(" = ")[0] for p in _table(game)["params"]]
    return {
        "rules": game_rules(game),
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
