"""``StrategyPolicy``: a strategy object behind the ordinary agent interface.

A Mesa game asks a strategy agent the same ``Decision`` it asks an LLM agent;
this policy answers it by calling the strategy's ``act`` on the history view in
the observation.  The model calls :meth:`StrategyPolicy.start_match` once per
match with the game description and the strategy's seed.
"""

from __future__ import annotations

from typing import Any

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.dilemmas.binary.strategies.base import GameDescription, Strategy
from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry, resolve_strategy


class StrategyPolicy(Policy):
    """Answers ``<game>.action`` decisions with a strategy's ``act``; strict (a bad answer is a bug)."""

    is_async = False
    strict = True

    def __init__(self, strategy: StrategyEntry | type[Strategy] | str) -> None:
        if isinstance(strategy, str):
            strategy = resolve_strategy(strategy)
        elif isinstance(strategy, type):
            strategy = StrategyEntry(
                name=strategy.name or strategy.__name__,
                cls=strategy,
                description=strategy.description or (strategy.__doc__ or ""),
            )
        self.entry: StrategyEntry = strategy
        self.name = f"strategy:{strategy.name}"
        self.strategy: Strategy | None = None

    def start_match(self, game: GameDescription, seed: tuple[int, tuple[int, ...]] | None) -> None:
        """A fresh strategy instance for a new match."""
        self.strategy = self.entry.create(game, seed)

    def decide(self, decision: Decision) -> Any:
        obs = decision.observation
        if self.strategy is None:
            self.start_match(obs["game"], None)
        assert self.strategy is not None
        return str(self.strategy.act(obs["history"]))


def build_strategy_policy(spec: str, **_: Any) -> StrategyPolicy:
    """The ``strategy`` policy kind of a population: ``spec`` names a built-in strategy.

    Strategy code from files is untrusted and runs only in the sandbox, which the binary games
    drive themselves (they resolve ``strategy`` groups before this kind is asked)."""
    entry = resolve_strategy(spec)
    if not entry.trusted:
        raise ValueError(
            f"strategy {spec!r} is code from a file: only the binary games play it (sandboxed)"
        )
    return StrategyPolicy(entry)
