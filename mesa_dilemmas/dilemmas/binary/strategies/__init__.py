"""Strategies as code for the binary-action games: base class, history, reference library, sets."""

from mesa_dilemmas.dilemmas.binary.strategies.base import (
    ACTION_CODE,
    ATTITUDES,
    Action,
    C,
    D,
    GameDescription,
    Strategy,
)
from mesa_dilemmas.dilemmas.binary.strategies.formats import StrategyFormat, strategy_formats
from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore, PlayerHistory
from mesa_dilemmas.dilemmas.binary.strategies.loader import (
    StrategyEntry,
    StrategySet,
    available_sets,
    load_strategy_set,
    resolve_strategy,
)
from mesa_dilemmas.dilemmas.binary.strategies.policy import StrategyPolicy
from mesa_dilemmas.dilemmas.binary.strategies.reference import REFERENCE, parse_spec

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
