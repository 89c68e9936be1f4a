"""Strategies as code: the class a strategy derives from, its actions and the game it is told about.

A strategy is a small Python object that is built once per match and asked for
``C`` or ``D`` once per round.  Everything it may know arrives in two objects:
the :class:`GameDescription` (rules and parameters, fixed for the match) and a
:class:`~mesa_dilemmas.dilemmas.binary.strategies.history.PlayerHistory` (the public
history, seen from its seat).  Randomness comes only from ``self.rng``, a
generator seeded by the framework for this strategy in this match, so a match is
reproducible and no strategy touches global random state.  ``self.rng`` is built
on first use: deterministic strategies never pay for a generator, and the
behavioural analysis uses that to detect them.

A trusted strategy class may also offer a *vectorised form* (:class:`VectorForm`): one
object that plays every seat of a batch holding strategies of that class at once, from
per-seat parameter arrays, with exactly the answers and random draws of the per-call
``act`` (see :func:`vector_form_of`).  The reference strategies have one; the engine uses
it wherever it can.
"""

from __future__ import annotations

import _random
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.binary.strategies.history import PlayerHistory


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

    #: the class's vectorised form (None: per-call only).  Read with :func:`vector_form_of`,
    #: which takes it only from the class that declares it: a subclass that changes ``act``
    #: does not silently inherit a form that plays its parent's rule
    vector_form: ClassVar[type[VectorForm] | None] = None

    def vector_params(self) -> dict[str, float]:
        """This instance's parameters for :attr:`vector_form` (one value per parameter name)."""
        return {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name or type(self).__name__}>"


def vector_form_of(cls: type[Strategy]) -> type[VectorForm] | None:
    """The vectorised form declared by ``cls`` itself (never inherited), or None."""
    form = cls.__dict__.get("vector_form")
    return form if isinstance(form, type) and issubclass(form, VectorForm) else None


def seat_seed_int(entropy: int, seat: int) -> int:
    """``_seed_int((entropy, (seat,)))`` -- the seed of the strategy in ``seat`` of a match."""
    return (int(entropy) & ((1 << 64) - 1)) | ((int(seat) + 1) << 64)


def mt_uniforms(seeds: Sequence[int], length: int) -> np.ndarray:
    """(len(seeds), length): the first ``length`` ``random.Random(seed).random()`` of every seed.

    One ``getrandbits`` call per seed hands over the generator's 32-bit outputs in order
    (word i of the integer is output i); ``random()`` makes each number from two of them,
    ``(a >> 5, b >> 6)``, which is redone here on whole arrays -- exactly, as it is integer
    arithmetic scaled by a power of two."""
    words = 2 * length
    gen = _random.Random(0)
    seed, bits = gen.seed, gen.getrandbits
    chunks = []
    for value in seeds:
        seed(value)  # = random.Random(value)'s state (one generator reused: no allocation)
        chunks.append(bits(32 * words).to_bytes(4 * words, "little"))
    raw = b"".join(chunks)
    w = np.frombuffer(raw, dtype="<u4").reshape(len(seeds), length, 2)
    mantissa = (w[:, :, 0] >> 5).astype(np.uint64) << np.uint64(26)  # a * 67108864, exact
    mantissa |= w[:, :, 1] >> 6  # + b (below 2**26)
    return mantissa.astype(np.float64) * (1.0 / 9007199254740992.0)  # < 2**53: exact


class SeatStreams:
    """The random streams of many seats, each exactly its strategy's ``self.rng.random()``.

    Seat j's k-th draw (:meth:`next` or :meth:`next_all`) is the k-th ``self.rng.random()``
    the strategy in that seat would draw in the per-call path (same seed, same Mersenne
    Twister), so a vectorised form reproduces the per-call answers draw for draw.  A seat's
    generator is built on its first draw (as ``self.rng`` is), and then draws ``length``
    numbers at once.
    """

    def __init__(
        self, match_entropies: Sequence[int], matches: np.ndarray, seats: np.ndarray, length: int
    ) -> None:
        """Local seat j sits in seat ``seats[j]`` of match ``matches[j]``, whose strategies are
        seeded from ``match_entropies[matches[j]]``; ``length``: most numbers a seat draws."""
        self.match_entropies = match_entropies
        self.matches = np.asarray(matches)
        self.seats = np.asarray(seats)
        self.length = max(int(length), 1)
        self.size = len(self.seats)
        self.uniforms = np.empty((self.length, self.size))  # draw k of seat j: [k, j]
        self.count = np.zeros(self.size, dtype=np.intp)
        self.ready = np.zeros(self.size, dtype=bool)
        #: draws every seat has made, while all have drawn together (None once they have not)
        self._together: int | None = 0

    def _fill(self, fresh: np.ndarray) -> None:
        self.uniforms[:, fresh] = mt_uniforms(
            [
                seat_seed_int(self.match_entropies[b], i)
                for b, i in zip(
                    self.matches[fresh].tolist(), self.seats[fresh].tolist(), strict=True
                )
            ],
            self.length,
        ).T
        self.ready[fresh] = True

    def next(self, which: np.ndarray) -> np.ndarray:
        """The next number of every seat in ``which`` (distinct local indices); advances them."""
        if self._together is not None:
            self.count[:] = self._together
            self._together = None
        fresh = which[~self.ready[which]]
        if len(fresh):
            self._fill(fresh)
        k = self.count[which]
        if len(k) and int(k.max()) >= self.length:
            raise RuntimeError("SeatStreams: a seat drew more numbers than its stream holds")
        self.count[which] = k + 1
        return self.uniforms[k, which]

    def next_all(self) -> np.ndarray:
        """The next number of every seat (one array operation when all always draw together)."""
        k = self._together
        if k is None:
            return self.next(np.arange(self.size))
        if k == 0:
            self._fill(np.arange(self.size))
        if k >= self.length:
            raise RuntimeError("SeatStreams: a seat drew more numbers than its stream holds")
        self._together = k + 1
        return self.uniforms[k]

    @property
    def used(self) -> np.ndarray:
        """(seats,) bool: which seats have drawn (the per-call ``used_rng``)."""
        if self._together is not None:
            return np.full(self.size, self._together > 0)
        return self.count > 0


class VectorForm:
    """The vectorised form of a strategy class: plays many seats of a batch at once.

    Built per batch for the seats (flat ``match * n + seat`` indices) holding strategies
    of the class, with one array per parameter name of :meth:`Strategy.vector_params`
    (one value per seat) and, if :attr:`RANDOM`, the seats' :class:`SeatStreams`.
    :meth:`act` is called once per round, in order, and must give exactly the answers
    the per-call ``act`` of every seat's own instance would, drawing the same numbers
    in the same order (so a seat's ``used_rng`` is ``streams.used``).
    """

    #: whether the strategies draw random numbers (then ``streams`` is given)
    RANDOM: ClassVar[bool] = False
    #: whether :meth:`act` reads last round's opponent cooperators (else it gets None)
    READS_HISTORY: ClassVar[bool] = True

    def __init__(
        self,
        game: GameDescription,
        params: Mapping[str, np.ndarray],
        streams: SeatStreams | None,
    ) -> None:
        self.game = game
        self.params = params
        self.streams = streams

    def act(self, t: int, last_opp: np.ndarray | None) -> np.ndarray:  # pragma: no cover
        """(seats,) bool: who cooperates in round ``t`` (0-based) given last round's opponent
        cooperator counts of these seats (None in the first round, or if not
        :attr:`READS_HISTORY`)."""
        raise NotImplementedError

    @property
    def used_rng(self) -> np.ndarray | bool:
        return False if self.streams is None else self.streams.used
