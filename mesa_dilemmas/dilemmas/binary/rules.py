"""A C/D game's rules, written once and vectorised over a batch of matches, and how a game is
found by name (:func:`make_game`, :func:`binary_games`)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mesa_dilemmas.agents.decisions import ChoiceSpec
from mesa_dilemmas.dilemmas.binary.strategies.base import GameDescription

ACTION_SPEC = ChoiceSpec(("C", "D"))
MAX_PLAYERS = 4096
DEFAULT_ROUNDS = 20


class BinaryGame:
    """Rules of an n-player repeated C/D game; subclasses implement :meth:`payoffs`.

    The class attributes are what the family's shared code (checks, analyses, figures,
    prompts, pages) asks a game instead of naming it."""

    #: the game's registered name (its model's ``GAME``)
    NAME: ClassVar[str] = ""
    #: the game's full title in figures ("... Game"); empty: the name
    TITLE: ClassVar[str] = ""
    #: whether the state is a resource stock players see (``history.stock``)
    HAS_STOCK: ClassVar[bool] = False
    #: where the game stands in lists of the C/D games (lower first; ties by name)
    ORDER: ClassVar[int] = 100
    #: the game-description class of the published interface of paper 002's authors
    #: (``emergent_llm.games``) a published strategy is built with; empty: the base class
    PUBLISHED_AS: ClassVar[str] = ""
    #: the file beside the rules' module that explains the game to a model writing strategies
    WRITING_PROMPT: ClassVar[str] = "strategy_writing.toml"

    @classmethod
    def example_params(
        cls, n_players: int, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Parameters to check strategies with at group size ``n_players``: ``params`` (a
        scenario's), with the game's own example values for those missing or not valid at
        that size.  The checks play sizes a scenario does not; no parameter needs a value."""
        return dict(params or {})

    @classmethod
    def writing_prompt(cls) -> Path:
        """The path of :attr:`WRITING_PROMPT` (it may not exist: then no set can be written)."""
        return Path(inspect.getfile(cls)).with_name(cls.WRITING_PROMPT)

    def __init__(self, n_players: int, n_rounds: int = DEFAULT_ROUNDS) -> None:
        if not 2 <= n_players <= MAX_PLAYERS:
            raise ValueError(f"n_players: must be between 2 and {MAX_PLAYERS} (got {n_players})")
        if n_rounds < 1:
            raise ValueError(f"rounds: must be at least 1 (got {n_rounds})")
        self.n_players = int(n_players)
        self.n_rounds = int(n_rounds)

    # -- rules -------------------------------------------------------------
    def initial_state(self, batch: int) -> np.ndarray | None:
        """The state before round 1 for ``batch`` matches (None for stateless games)."""
        return None

    def payoffs(
        self, cooperated: np.ndarray, state: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray | None]:  # pragma: no cover - interface
        """Payoffs (B, n) of one round and the next state, from ``cooperated`` (B, n) bool."""
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """The game's own parameters (k, m, capacity, ...)."""
        return {}

    def description(self) -> GameDescription:
        return GameDescription(
            game=self.NAME,
            n_players=self.n_players,
            n_rounds=self.n_rounds,
            published_as=self.PUBLISHED_AS,
            **self.params(),
        )

    # -- benchmarks for normalisation --------------------------------------
    def welfare_bounds(self) -> tuple[float, float]:
        """(min, max) mean payoff per player per round over all possible plays.

        For a stateless game a round's welfare depends only on the number of
        cooperators, so enumerating 0..n cooperators gives the exact bounds;
        games with state override this.
        """
        n = self.n_players
        rows = np.arange(n)[None, :] < np.arange(n + 1)[:, None]  # row c: c cooperators
        pay, _ = self.payoffs(rows, None)
        means = pay.mean(axis=1)
        return float(means.min()), float(means.max())

    def play_counts(self, n_coop: Sequence[int]) -> float:
        """Mean payoff per player per round when ``n_coop[t]`` players cooperate in round t.

        Welfare depends only on the number of cooperators, so bounds can be
        checked by enumerating count sequences (tests do).
        """
        n = self.n_players
        state = self.initial_state(1)
        total = 0.0
        for c in n_coop:
            row = np.zeros((1, n), dtype=bool)
            row[0, :c] = True
            pay, state = self.payoffs(row, state)
            total += float(pay.sum())
        return total / (n * len(n_coop))


def rules_of(game: str) -> type[BinaryGame]:
    """The rules class of a C/D game by its registered name (the ``RULES`` of its model's module)."""
    from mesa_dilemmas.dilemmas.registry import UnknownGame, game_model

    try:
        model_cls = game_model(game)
    except UnknownGame:
        raise ValueError(f"game: unknown game {game!r}") from None
    rules = getattr(import_module(model_cls.__module__), "RULES", None)
    if rules is None:
        raise ValueError(f"game: {game!r} is not a binary-action (C/D) game")
    return rules


@cache
def binary_games() -> tuple[str, ...]:
    """The registered C/D games -- games whose model module has C/D ``RULES`` -- in their rules'
    ``ORDER``; the first is the default wherever a game may be left out."""
    from mesa_dilemmas.dilemmas.registry import games

    found = []
    for name in games():
        try:
            rules = rules_of(name)
        except ValueError:
            continue
        if isinstance(rules, type) and issubclass(rules, BinaryGame):
            found.append((rules.ORDER, name))
    return tuple(name for _, name in sorted(found))


def default_game() -> str:
    """The first C/D game (:func:`binary_games`): the game of an analysis that names none."""
    games = binary_games()
    if not games:
        raise ValueError("game: no binary-action (C/D) game is registered")
    return games[0]


def game_title(game: str) -> str:
    """A C/D game's full title (its rules' ``TITLE``), else the name as given."""
    try:
        return rules_of(game).TITLE or game
    except ValueError:
        return game


def make_game(game: str, n_players: int, rounds: int = DEFAULT_ROUNDS, **params: Any) -> BinaryGame:
    """The rules of a binary-action game by its registered name, validated."""
    rules = rules_of(game)
    allowed = set(inspect.signature(rules.__init__).parameters) - {"self", "n_players", "n_rounds"}
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(
            f"game_params.{sorted(unknown)[0]}: unknown parameter of {game}; allowed: {', '.join(sorted(allowed))}"
        )
    return rules(n_players, rounds, **params)


# -- the fast engine -----------------------------------------------------
