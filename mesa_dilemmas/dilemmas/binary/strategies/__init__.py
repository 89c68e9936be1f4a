"""Strategies as code for the binary-action games: base class, history, reference library, sets."""

from mesa_dilemmas.agents.strategies.base import (
    ACTION_CODE,
    ATTITUDES,
    Action,
    C,
    D,
    GameDescription,
    Strategy,
)
from mesa_dilemmas.agents.strategies.formats import StrategyFormat, strategy_formats
from mesa_dilemmas.agents.strategies.history import HistoryStore, PlayerHistory
from mesa_dilemmas.agents.strategies.loader import (
    StrategyEntry,
    StrategySet,
    available_sets,
    load_strategy_set,
    resolve_strategy,
)
from mesa_dilemmas.agents.strategies.policy import StrategyPolicy
from mesa_dilemmas.agents.strategies.reference import REFERENCE, parse_spec

__all__ = [
    "ACTION_CODE",
    "ATTITUDES",
    "Action",
    "C",
    "D",
    "GameDescription",
    "HistoryStore",
    "PlayerHistory",
    "REFERENCE",
    "Strategy",
    "StrategyEntry",
    "StrategyFormat",
    "StrategyPolicy",
    "StrategySet",
    "available_sets",
    "load_strategy_set",
    "parse_spec",
    "resolve_strategy",
    "strategy_formats",
]
