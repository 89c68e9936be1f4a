"""Reference strategies (paper 002, Sec. 4.2) and n-player conditional cooperators.

Each is named by a short spec string, ``"name"`` or ``"name(arg, ...)"``:

=====================  ==============================================================
``all_c``              always cooperate (A-C)
``all_d``              always defect (A-D)
``rnd(p)``             cooperate with probability p (Rnd(p))
``cc(x)``              CC: cooperate first; then cooperate iff at least x opponents
                       cooperated last round
``cd(x)``              CD: defect first; then defect iff at least x opponents
                       cooperated last round
``tft(q)``             n-player tit-for-tat: cooperate first; then cooperate iff at
                       least a fraction q of opponents cooperated last round
``ptft``               proportional tit-for-tat: cooperate with probability equal to
                       last round's fraction of cooperating opponents
``gtft(q, g)``         generous tit-for-tat: as ``tft(q)``, but forgives (cooperates
                       anyway) with probability g
``tft_endgame(q, e)``  ``tft(q)`` that defects in the last e rounds
``grim(tol)``          grim trigger: cooperate until a round in which more than a
                       fraction tol of opponents defected, then defect forever
``threshold(x)``       threshold strategy (games with a threshold m): cooperate first; then
                       cooperate iff at least x opponents cooperated last round, so
                       that with me the threshold is reached; x defaults to m - 1
=====================  ==============================================================

In ``cc``, ``cd`` and ``threshold`` an integer argument is a count of
opponents and a float strictly between 0 and 1 is a fraction of the n - 1
opponents (rounded up), so one spec means the same at n = 4 and n = 256.

Every class here also has a vectorised form (:class:`~.base.VectorForm`) that plays all
its seats of a batch in a few numpy operations per round, with exactly the answers and
random draws of its ``act`` (tested: ``tests/test_binary_vector.py``): the conditional
rules (``all_c``, ``all_d``, ``cc``, ``cd``, ``tft``, ``gtft``, ``tft_endgame``,
``threshold``) share :class:`ConditionalForm`; ``rnd``, ``ptft`` and ``grim`` have their own.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.binary.strategies.base import (
    C,
    D,
    GameDescription,
    Strategy,
    VectorForm,
)
from mesa_dilemmas.dilemmas.binary.strategies.history import PlayerHistory


def _opponents_needed(x: float, n_players: int) -> int:
    """An opponent count from a count (int) or a fraction of the n - 1 opponents (0 < x < 1)."""
    if isinstance(x, float) and 0.0 < x < 1.0:
        return math.ceil(x * (n_players - 1) - 1e-9)
    return int(x)


# -- vectorised forms ------------------------------------------------------------------


class ConditionalForm(VectorForm):
    """The conditional rules, per seat: in round 1 cooperate iff ``first``; in the last
    ``endgame`` rounds defect (no draw); otherwise ``ok`` = at least ``needed`` opponents
    cooperated last round, answer ``ok`` (or ``not ok`` if ``invert``), and where ``forgive``
    (gtft) and not ``ok``, draw once and cooperate iff the number is below ``g``."""

    RANDOM = True  # only forgiving seats ever draw

    def __init__(self, game: GameDescription, params: Any, streams: Any) -> None:
        super().__init__(game, params, streams)
        self.first = params["first"].astype(bool)
        self.needed = params["needed"].astype(np.int64)
        self.invert = params["invert"].astype(bool)
        self.endgame = params["endgame"].astype(np.int64)
        self.forgive = np.flatnonzero(params["forgive"].astype(bool))
        self.g = params["g"][self.forgive]
        self.any_endgame = bool((self.endgame >= 1).any())

    def act(self, t: int, last_opp: np.ndarray | None) -> np.ndarray:
        if last_opp is None:
            out = self.first.copy()
        else:
            ok = last_opp >= self.needed
            out = ok ^ self.invert
            if len(self.forgive):
                unhappy = self.forgive[~ok[self.forgive]]
                if self.any_endgame:  # the endgame answers before anything is drawn
                    unhappy = unhappy[self.game.n_rounds - t > self.endgame[unhappy]]
                if len(unhappy):
                    assert self.streams is not None
                    u = self.streams.next(unhappy)
                    out[unhappy] = u < self.g[np.searchsorted(self.forgive, unhappy)]
        if self.any_endgame:
            out[self.game.n_rounds - t <= self.endgame] = False
        return out


class RandomForm(VectorForm):
    """``rnd(p)``: one draw per seat per round, cooperate iff it is below p."""

    RANDOM = True
    READS_HISTORY = False

    def __init__(self, game: GameDescription, params: Any, streams: Any) -> None:
        super().__init__(game, params, streams)
        self.p = params["p"].astype(np.float64)

    def act(self, t: int, last_opp: np.ndarray | None) -> np.ndarray:
        assert self.streams is not None
        return self.streams.next_all() < self.p


class ProportionalForm(VectorForm):
    """``ptft``: cooperate first; then draw once and cooperate with last round's opponent share."""

    RANDOM = True

    def __init__(self, game: GameDescription, params: Any, streams: Any) -> None:
        super().__init__(game, params, streams)
        self.size = len(params["ptft"])

    def act(self, t: int, last_opp: np.ndarray | None) -> np.ndarray:
        if t == 0:
            return np.ones(self.size, dtype=bool)
        assert self.streams is not None and last_opp is not None
        return self.streams.next_all() * (self.game.n_players - 1) < last_opp


class GrimForm(VectorForm):
    """``grim(tol)``: cooperate until more than ``allowed`` opponents defect in a round."""

    def __init__(self, game: GameDescription, params: Any, streams: Any) -> None:
        super().__init__(game, params, streams)
        self.allowed = params["allowed"].astype(np.int64)
        self.triggered = np.zeros(len(self.allowed), dtype=bool)

    def act(self, t: int, last_opp: np.ndarray | None) -> np.ndarray:
        if last_opp is not None:
            self.triggered |= (self.game.n_players - 1 - last_opp) > self.allowed
        return ~self.triggered


def _count(x: int) -> float:
    """A count compared with opponent counts or rounds left, clipped to where the comparison
    still means the same (so that it fits the forms' integer arrays exactly)."""
    return float(max(-1, min(int(x), 1 << 40)))


def _conditional(
    first: bool, needed: int, invert: bool = False, endgame: int = 0, g: float | None = None
) -> dict[str, float]:
    return {
        "first": float(first),
        "needed": _count(needed),
        "invert": float(invert),
        "endgame": _count(endgame),
        "forgive": float(g is not None),
        "g": 0.0 if g is None else float(g),
    }


class AlwaysCooperate(Strategy):
    """Cooperates in every round."""

    name = "all_c"
    description = "Always cooperate."

    def act(self, history: PlayerHistory) -> str:
        return C

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=True, needed=0)


class AlwaysDefect(Strategy):
    """Defects in every round."""

    name = "all_d"
    description = "Always defect."

    def act(self, history: PlayerHistory) -> str:
        return D

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=False, needed=0, invert=True)


class RandomStrategy(Strategy):
    """Rnd(p): cooperates with probability p each round, independently."""

    name = "rnd"
    description = "Cooperate with probability p in every round, independently of the history."

    def __init__(self, game: GameDescription, p: float = 0.5) -> None:
        super().__init__(game)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"rnd: p must be in [0, 1], got {p}")
        self.p = float(p)

    def act(self, history: PlayerHistory) -> str:
        return C if self.rng.random() < self.p else D

    vector_form = RandomForm

    def vector_params(self) -> dict[str, float]:
        return {"p": self.p}


class ConditionalCooperator(Strategy):
    """CC(x): cooperates first, then iff at least x opponents cooperated last round."""

    name = "cc"
    description = (
        "Cooperate in the first round; afterwards cooperate if at least x opponents "
        "cooperated in the previous round, otherwise defect."
    )

    def __init__(self, game: GameDescription, x: float = 1) -> None:
        super().__init__(game)
        self.needed = _opponents_needed(x, game.n_players)

    def act(self, history: PlayerHistory) -> str:
        last = history.last_opponent_cooperators
        return C if last is None or last >= self.needed else D

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=True, needed=self.needed)


class ConditionalDefector(ConditionalCooperator):
    """CD(x): the mirror of CC(x) -- defects first, then defects iff at least x opponents
    cooperated last round."""

    name = "cd"
    description = (
        "Defect in the first round; afterwards defect if at least x opponents cooperated "
        "in the previous round (exploit them), otherwise cooperate."
    )

    def act(self, history: PlayerHistory) -> str:
        last = history.last_opponent_cooperators
        return D if last is None or last >= self.needed else C

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=False, needed=self.needed, invert=True)


class TitForTat(ConditionalCooperator):
    """n-player tit-for-tat: CC with the threshold a fraction q of the opponents."""

    name = "tft"
    description = (
        "Cooperate in the first round; afterwards cooperate if at least a fraction q of the "
        "opponents cooperated in the previous round, otherwise defect."
    )

    def __init__(self, game: GameDescription, q: float = 0.5) -> None:
        Strategy.__init__(self, game)
        self.needed = max(0, math.ceil(q * (game.n_players - 1) - 1e-9))

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=True, needed=self.needed)


class ProportionalTitForTat(Strategy):
    """Cooperates with probability equal to last round's fraction of cooperating opponents."""

    name = "ptft"
    description = (
        "Cooperate in the first round; afterwards cooperate with probability equal to the "
        "fraction of opponents who cooperated in the previous round."
    )

    def act(self, history: PlayerHistory) -> str:
        last = history.last_opponent_cooperators
        if last is None:
            return C
        return C if self.rng.random() * (history.n_players - 1) < last else D

    vector_form = ProportionalForm

    def vector_params(self) -> dict[str, float]:
        return {"ptft": 1.0}


class GenerousTitForTat(TitForTat):
    """``tft(q)`` that forgives a defecting group with probability g."""

    name = "gtft"
    description = (
        "Cooperate in the first round; afterwards cooperate if at least a fraction q of the "
        "opponents cooperated in the previous round, and otherwise still cooperate with "
        "probability g."
    )

    def __init__(self, game: GameDescription, q: float = 0.5, g: float = 0.1) -> None:
        super().__init__(game, q)
        self.g = float(g)

    def act(self, history: PlayerHistory) -> str:
        last = history.last_opponent_cooperators
        if last is None or last >= self.needed:
            return C
        return C if self.rng.random() < self.g else D

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=True, needed=self.needed, g=self.g)


class EndgameTitForTat(TitForTat):
    """``tft(q)`` that defects in the last e rounds, when retaliation can no longer follow."""

    name = "tft_endgame"
    description = (
        "Play n-player tit-for-tat with fraction q, but defect in the last e rounds of the game."
    )

    def __init__(self, game: GameDescription, q: float = 0.5, e: int = 1) -> None:
        super().__init__(game, q)
        self.e = int(e)

    def act(self, history: PlayerHistory) -> str:
        if history.rounds_left <= self.e:
            return D
        return super().act(history)

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=True, needed=self.needed, endgame=self.e)


class GrimTrigger(Strategy):
    """Cooperates until more than a fraction ``tol`` of opponents defect in a round, then never again."""

    name = "grim"
    description = (
        "Cooperate until a round in which more than a fraction tol of the opponents defected; "
        "from then on defect forever."
    )

    def __init__(self, game: GameDescription, tol: float = 0.0) -> None:
        super().__init__(game)
        self.allowed = math.floor(tol * (game.n_players - 1) + 1e-9)
        self.triggered = False

    def act(self, history: PlayerHistory) -> str:
        if not self.triggered:
            last = history.last_opponent_cooperators
            if last is not None and history.n_players - 1 - last > self.allowed:
                self.triggered = True
        return D if self.triggered else C

    vector_form = GrimForm

    def vector_params(self) -> dict[str, float]:
        return {"allowed": _count(self.allowed)}


class ThresholdCooperator(Strategy):
    """Threshold games: cooperate iff last round's cooperators would, with me, reach the threshold."""

    name = "threshold"
    description = (
        "Cooperate in the first round; afterwards cooperate if at least x opponents "
        "cooperated in the previous round (by default x = m - 1, so that together with me the "
        "threshold m is reached), otherwise defect."
    )

    def __init__(self, game: GameDescription, x: float | None = None) -> None:
        super().__init__(game)
        if x is None:
            m = game.m if game.m is not None else math.ceil(game.n_players / 2)
            self.needed = max(0, m - 1)
        else:
            self.needed = _opponents_needed(x, game.n_players)

    def act(self, history: PlayerHistory) -> str:
        last = history.last_opponent_cooperators
        return C if last is None or last >= self.needed else D

    vector_form = ConditionalForm

    def vector_params(self) -> dict[str, float]:
        return _conditional(first=True, needed=self.needed)


#: spec name -> strategy class
REFERENCE: dict[str, type[Strategy]] = {
    cls.name: cls  # type: ignore[misc]
    for cls in (
        AlwaysCooperate,
        AlwaysDefect,
        RandomStrategy,
        ConditionalCooperator,
        ConditionalDefector,
        TitForTat,
        ProportionalTitForTat,
        GenerousTitForTat,
        EndgameTitForTat,
        GrimTrigger,
        ThresholdCooperator,
    )
}

#: paper labels for plots
LABELS: dict[str, Callable[[list[Any]], str]] = {
    "all_c": lambda a: "A-C",
    "all_d": lambda a: "A-D",
    "rnd": lambda a: f"Rnd({a[0] if a else 0.5:g})",
    "cc": lambda a: f"CC({a[0] if a else 1:g})",
    "cd": lambda a: f"CD({a[0] if a else 1:g})",
}

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$")


def parse_spec(spec: str) -> tuple[str, list[Any]]:
    """``"cc(2)"`` -> ``("cc", [2])``; raises ValueError naming the known strategies."""
    match = _SPEC.match(spec)
    if not match:
        raise ValueError(f"strategy spec {spec!r}: expected 'name' or 'name(arg, ...)'")
    name, args_text = match.group(1), match.group(2)
    if name not in REFERENCE:
        raise ValueError(
            f"strategy spec {spec!r}: unknown reference strategy; known: {', '.join(sorted(REFERENCE))}"
        )
    args: list[Any] = []
    if args_text and args_text.strip():
        try:
            parsed = ast.literal_eval(f"({args_text},)")
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"strategy spec {spec!r}: arguments must be literals") from exc
        args = list(parsed)
    return name, args


def reference_params(spec: str) -> tuple[type[Strategy], dict[str, Any]]:
    """The class and keyword parameters of a reference spec (positional args mapped by name)."""
    import inspect

    name, args = parse_spec(spec)
    cls = REFERENCE[name]
    names = [
        p.name
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name not in ("self", "game")
    ]
    if len(args) > len(names):
        raise ValueError(f"strategy spec {spec!r}: {name} takes at most {len(names)} argument(s)")
    params = dict(zip(names, args, strict=False))
    for key in FRACTIONS & set(params):  # shares and probabilities
        value = params[key]
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"strategy spec {spec!r}: {key} must be a number from 0 to 1")
    return cls, params


#: reference-strategy parameters that are shares or probabilities (q, p, g in [0, 1])
FRACTIONS = frozenset({"q", "p", "g"})


def reference_label(spec: str) -> str:
    name, args = parse_spec(spec)
    fmt = LABELS.get(name)
    return fmt(args) if fmt else spec.strip()
