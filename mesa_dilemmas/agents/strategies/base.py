"""Strategies as code: the class a strategy derives from, its actions and the game it is told about.

A strategy is a small Python object that is built once per match and asked for
``C`` or ``D`` once per round.  Everything it may know arrives in two objects:
the :class:`GameDescription` (rules and parameters, fixed for the match) and a
:class:`~mesa_dilemmas.agents.strategies.history.PlayerHistory` (the public
history, seen from its seat).  Randomness comes only from ``self.rng``, a
generator seeded by the framework for this strategy in this match, so a match is
reproducible and no strategy touches global random state.  ``self.rng`` is built
on first use: deterministic strategies never pay for a generator, and the
behavioural analysis uses that to detect them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from mesa_dilemmas.agents.strategies.history import PlayerHistory


class Action(StrEnum):
    """A binary action; members compare equal to the strings ``"C"`` and ``"D"``."""

    C = "C"
    D = "D"


#: the two answers as plain strings (hashing a str is C-fast, an enum member's is not)
C: str = "C"
D: str = "D"

#: answer -> cooperated?  The engine accepts exactly these (as ``ChoiceSpec`` does, case-insensitively)
ACTION_CODE: dict[str, bool] = {"C": True, "D": False, "c": True, "d": False}

ATTITUDES = ("collective", "exploitative")


@dataclass(frozen=True)
class GameDescription:
    """What a strategy is told about the game: fixed for a match, identical for all players.

    Only the parameters of the game being played are set; the others are None
    (``m`` is None in a game without a threshold, ``capacity`` in one without a
    resource stock).  ``published_as`` names the game's description class in the
    published interface of paper 002's authors (:mod:`.published`); it is no
    parameter and stays out of :meth:`as_dict`.
    """

    game: str
    n_players: int
    n_rounds: int
    k: float | None = None
    m: int | None = None
    capacity: float | None = None
    growth: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    published_as: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for prompts, JSON and logs)."""
        out: dict[str, Any] = {
            "game": self.game,
            "n_players": self.n_players,
            "n_rounds": self.n_rounds,
        }
        for key in ("k", "m", "capacity", "growth"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out


def _seed_int(seed: tuple[int, tuple[int, ...]] | None) -> int | None:
    """(entropy, spawn key) -> one integer seed; distinct keys give distinct seeds."""
    if seed is None:
        return None
    value = int(seed[0]) & ((1 << 64) - 1)
    for j, part in enumerate(seed[1]):
        value |= (int(part) + 1) << (64 + 32 * j)
    return value


class Strategy:
    """Base class of every strategy: override :meth:`act` (and ``__init__`` for parameters).

    Class attributes carry the metadata a strategy set records about each
    strategy; a set file may leave them unset and inherit the set's values.

    Contract:
      * ``act(history)`` returns ``C`` or ``D`` (``Action`` members or the strings);
      * state kept on ``self`` lives for one match (a fresh object per match);
      * randomness only through ``self.rng`` (or ``self.np_rng``).
    """

    #: short unique name within its set (defaults to the class name)
    name: ClassVar[str | None] = None
    #: the natural-language description the code implements
    description: ClassVar[str | None] = None
    #: "collective" / "exploitative" / None (inherit the set's)
    attitude: ClassVar[str | None] = None
    #: who wrote it: "reference", an LLM identifier, a person
    source: ClassVar[str | None] = None
    #: games the strategy was written for (empty: any binary game)
    games: ClassVar[tuple[str, ...]] = ()

    game: GameDescription
    _seed: tuple[int, tuple[int, ...]] | None = None
    _rng: random.Random | None = None
    _np_rng: np.random.Generator | None = None

    def __init__(self, game: GameDescription) -> None:
        self.game = game

    @classmethod
    def create(
        cls,
        game: GameDescription,
        seed: tuple[int, tuple[int, ...]] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Strategy:
        """Build one instance for one match; ``seed`` = (entropy, spawn key) of its generator.

        The seed is attached before ``__init__`` runs, so a strategy may draw
        random parameters in its constructor.
        """
        obj = cls.__new__(cls)
        obj._seed = seed
        obj.game = game
        obj.__init__(game, **(params or {}))
        return obj

    @property
    def rng(self) -> random.Random:
        """This strategy's own ``random.Random`` (stdlib API: ``random()``, ``choice``, ``uniform``...).

        Built on first use from the framework's seed; a scalar draw costs ~25 ns,
        twenty times less than a numpy ``Generator``'s, which matters at one
        draw per strategy per round.
        """
        if self._rng is None:
            self._rng = random.Random(_seed_int(self._seed))
        return self._rng

    @property
    def np_rng(self) -> np.random.Generator:
        """A numpy ``Generator`` from the same seed, for strategies that want numpy's API."""
        if self._np_rng is None:
            seed = self._seed
            ss = (
                np.random.SeedSequence()
                if seed is None
                else np.random.SeedSequence(seed[0], spawn_key=seed[1])
            )
            self._np_rng = np.random.Generator(np.random.PCG64(ss))
        return self._np_rng

    @property
    def used_rng(self) -> bool:
        """Whether this instance has drawn on a generator (i.e. may be stochastic)."""
        return self._rng is not None or self._np_rng is not None

    def act(self, history: PlayerHistory) -> Action | str:  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name or type(self).__name__}>"
