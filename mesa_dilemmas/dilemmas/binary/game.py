"""Shared machinery of the n-player binary-action games (paper 002, Sec. 3).

Three pieces, used by every C/D game alike (each game's package holds only its own rules):

* :class:`BinaryGame` -- a game's *rules*, written once, vectorised over a
  batch of matches: ``payoffs(cooperated[B, n], state[B])`` returns every
  player's payoff and the next state (the resource stock, for a game with one).
  Each game module subclasses it with its own payoff rule and the class attributes
  that tell the shared code what differs per game (``NAME``, ``TITLE``, ``HAS_STOCK``,
  ``ORDER``, ``PUBLISHED_AS``, ``example_params``); the list of C/D games is
  :func:`binary_games`, read from the registry.
* :func:`play_batch` -- the fast engine: B matches of n strategies played in
  lock-step.  Per round it makes one Python call per strategy, or, for strategies
  with a vectorised form (the reference strategies), a few numpy operations for all
  their seats at once; history, payoffs and bookkeeping are numpy operations on
  (B, n) arrays.  Self-play, cultural evolution and the behavioural analysis all run on it.
* :class:`BinaryDilemmaModel` -- the Mesa model: real ``DilemmaAgent`` agents
  whose policies answer ``<game>.action`` decisions through the broker, a
  ``DataCollector`` for the dashboard.  It applies the same ``BinaryGame``
  rules and the same history store, and seeds strategies the same way, so a
  model run and an engine run of the same strategies and seeds are identical
  (tested).

Seeding: the strategy in seat i of a match with entropy ``e`` draws from
``SeedSequence(e, spawn_key=(i,))`` (= ``SeedSequence(e).spawn(n)[i]``).

Untrusted strategies (code from files: ``entry.trusted`` is False) never run
here: a batch with any of them is played whole inside a sandbox worker
(``binary.sandboxed``), which returns every seat's actions; this process
then recomputes payoffs, stocks and history from those actions with its own
rules.  A strategy that fails there plays :data:`DEFAULT_ACTION` and is flagged
(``BatchResult.flags``) instead of ending the run.
"""

from __future__ import annotations

import gc
import inspect
import sys
from collections.abc import Iterator, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any, ClassVar

import mesa
import numpy as np
from mesa.agentset import AgentSet

from mesa_dilemmas.agents.base import DilemmaAgent
from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.persona import Persona
from mesa_dilemmas.agents.policy import Policy
from mesa_dilemmas.agents.population import Group, population_table
from mesa_dilemmas.dilemmas.base import DilemmaModel, params_model
from mesa_dilemmas.dilemmas.binary.engine import BatchResult, Lineups, play_in_process
from mesa_dilemmas.dilemmas.binary.rules import (
    ACTION_SPEC,
    DEFAULT_ROUNDS,
    BinaryGame,
)
from mesa_dilemmas.dilemmas.binary.sandboxed import play_sandboxed
from mesa_dilemmas.dilemmas.binary.strategies.base import GameDescription
from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore, PlayerHistory
from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry, resolve_strategy
from mesa_dilemmas.dilemmas.binary.strategies.policy import StrategyPolicy


def play_batch(
    game: BinaryGame,
    lineups: Sequence[Sequence[StrategyEntry | None]],
    entropies: Sequence[int],
    *,
    scripted: np.ndarray | None = None,
    rounds: int | None = None,
    keep_history: bool = False,
    vectorised: bool | None = None,
) -> BatchResult:
    """Play ``len(lineups)`` matches of ``game`` simultaneously.

    ``lineups[b][i]`` is the strategy in seat i of match b (``None`` for a
    scripted seat whose actions are ``scripted[b, i, t]`` -- the behavioural
    analysis scripts opponents).  ``entropies[b]`` seeds match b's strategies.
    ``rounds`` stops after that many rounds while strategies are still told the
    game lasts ``game.n_rounds`` (again for the analysis).  ``lineups`` may be a
    :class:`~mesa_dilemmas.dilemmas.binary.engine.Lineups` (indices into a palette).
    ``vectorised``: play strategies with a vectorised form in it (None: the engine's
    default, ``engine.VECTOR_FORMS``); the results are identical either way.
    """
    lineups = Lineups.of(lineups, game.n_players)  # checks the lineups' lengths
    if not all(e.trusted for e in lineups.used_entries()):
        return play_sandboxed(game, list(lineups), entropies, scripted, rounds, keep_history)
    # a batch allocates tens of thousands of small objects that all live until its end; the
    # cyclic GC would rescan them again and again (measured: up to 45% of the run time)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return play_in_process(
            game, lineups, entropies, scripted, rounds, keep_history, vectorised=vectorised
        )
    finally:
        if was_enabled:
            gc.enable()


class BinaryObservation(Mapping[str, Any]):
    """A decision's observation: the game and history objects, plain data derived on access.

    Strategy policies read ``"history"`` (a :class:`PlayerHistory`) and
    ``"game"``; an LLM template reads the plain keys, computed only if asked.  Only the plain
    keys are listed (iterated): what renders the whole observation -- the generic LLM prompt,
    a record -- sees data, never the two objects, whose text would hold their memory address
    and so differ in every process (no cached answer could ever be found again).
    """

    __slots__ = ("game", "history")
    _PLAIN = ("round", "n_rounds", "n_players", "my_actions", "my_payoffs", "opponent_cooperators")
    _KEYS = ("params", *_PLAIN, "stock")

    def __init__(self, game: GameDescription, history: PlayerHistory) -> None:
        self.game = game
        self.history = history

    def __getitem__(self, key: str) -> Any:
        if key == "game":
            return self.game
        if key == "history":
            return self.history
        if key == "params":
            return self.game.as_dict()
        if key == "stock":
            return self.history.stock
        if key in self._PLAIN:
            return self.history.as_dict()[key]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


class SandboxedStrategyPolicy(StrategyPolicy):
    """An untrusted strategy in the Mesa model: each decision replays its match so far in the sandbox.

    The worker rebuilds the strategy from its seed and plays it against the
    other seats' recorded actions up to the current round, so its answer is
    the one it would give in a continuous match (quadratic in the rounds, which
    is fine at the model's scale; experiments use the batch engine).
    Misbehaviour is recorded in ``flags`` and answered with the default action.
    """

    def __init__(self, entry: StrategyEntry, rules: BinaryGame) -> None:
        super().__init__(entry)
        self.rules = rules
        self.seed: tuple[int, tuple[int, ...]] | None = None
        self.flags: list[Any] = []

    def start_match(self, game: GameDescription, seed: tuple[int, tuple[int, ...]] | None) -> None:
        self.seed = seed

    def decide(self, decision: Decision) -> Any:
        history: PlayerHistory = decision.observation["history"]
        store, me, t = history._store, history.me, history.round_number
        scripted = store.actions[history.match : history.match + 1].astype(np.int8)
        lineup: list[StrategyEntry | None] = [None] * self.rules.n_players
        lineup[me] = self.entry
        entropy = 0 if self.seed is None else self.seed[0]
        result = play_batch(
            self.rules, [lineup], [entropy], scripted=scripted, rounds=t + 1, keep_history=True
        )
        seen = {(f.strategy, f.reason) for f in self.flags}  # each decision replays the match
        self.flags.extend(f for f in result.flags if (f.strategy, f.reason) not in seen)
        assert result.store is not None
        return "C" if result.store.actions[0, me, t] else "D"


class BinaryDilemmaModel(DilemmaModel):
    """A Mesa model of one match of a binary-action game: ``step()`` plays one round.

    Players are ``DilemmaAgent`` agents; ``strategies`` (spec strings, cycled
    over the seats) build :class:`StrategyPolicy` players, and ``players`` (a
    :class:`~mesa_dilemmas.agents.population.Population`) seats strategies,
    language models or a factory's policies by group, as in every game.
    """

    PHASES = ("act",)
    #: a C/D seat is a strategy, a language model or a factory's policy (no rule players)
    POLICY_KINDS: ClassVar[tuple[str, ...]] = ("strategy", "llm", "factory")

    @staticmethod
    def check_strategy(spec: str) -> None:
        """Raise when ``spec`` names no strategy (an unknown name, a missing set file)."""
        resolve_strategy(spec)

    #: reporters a batch run aggregates per grid cell (the last round's values)
    RUN_METRICS: ClassVar[tuple[str, ...]] = (
        "normalised_payoff",
        "cooperation_rate",
        "mean_payoff",
    )

    def player(self, seat: int) -> DilemmaAgent:
        """The agent at ``seat``."""
        return self._by_seat[seat]

    @classmethod
    def rules_of(cls, p: Any) -> BinaryGame:
        """The game's rules for these parameters (each game says how its own are made)."""
        raise NotImplementedError

    def __init__(self, *, rng: Any = None, **params: Any) -> None:
        super().__init__(rng=rng, **params)
        self.rules = rules = self.rules_of(self.p)
        self.description = rules.description()
        n = rules.n_players
        self.store = HistoryStore(1, n, rules.n_rounds, with_stock=rules.HAS_STOCK)
        self.state = rules.initial_state(1)
        if self.state is not None:
            self.store.set_initial_stock(self.state)
        #: entropy of this match's strategy generators (seat i: SeedSequence(e, spawn_key=(i,)))
        self.strategy_entropy = int(self.rng.integers(2**63))
        self.population = population_table(self.p.players)
        self.views: list[PlayerHistory] = []
        entries = [resolve_strategy(s) for s in self.p.strategies]

        def strategy_of(seat: int, group: Group | None, persona: Persona) -> Policy | None:
            if group is None:  # the scenario's strategies, in turn over the seats
                if not entries:
                    raise ValueError(
                        "strategies: give at least one strategy spec (or seat every player "
                        "through players)"
                    )
                return self._strategy_policy(entries[seat % len(entries)], rules)
            if group.kind == "strategy":
                return self._strategy_policy(resolve_strategy(group.value), rules)
            return None  # a language model or a factory's policy: the population builds it

        self._by_seat: list[DilemmaAgent] = self.seat_players(n, rules={}, policy_of=strategy_of)
        #: the seated players as an AgentSet in seat order (one seat: :meth:`player`)
        self.seats: AgentSet[DilemmaAgent] = AgentSet(self._by_seat, random=self.random)
        for i, agent in enumerate(self._by_seat):
            self.views.append(PlayerHistory(self.store, 0, i))
            start = getattr(agent.policy, "start_match", None)
            if start is not None:
                start(self.description, (self.strategy_entropy, (i,)))
        self._observations = [BinaryObservation(self.description, v) for v in self.views]
        reporters: dict[str, Any] = {
            "cooperation_rate": BinaryDilemmaModel.last_cooperation_rate,
            "mean_payoff": BinaryDilemmaModel.last_mean_payoff,
            "normalised_payoff": BinaryDilemmaModel.normalised_payoff,
        }
        if rules.HAS_STOCK:
            reporters["stock"] = BinaryDilemmaModel.current_stock
        self.datacollector = mesa.DataCollector(model_reporters=reporters)
        self.running = True

    @staticmethod
    def _strategy_policy(entry: StrategyEntry, rules: BinaryGame) -> Policy:
        """Trusted (built-in) strategies play in-process; code from files in the sandbox."""
        return StrategyPolicy(entry) if entry.trusted else SandboxedStrategyPolicy(entry, rules)

    @classmethod
    def run_notes(cls, params: dict[str, Any]) -> list[str]:
        """Strategies cycled over the seats beyond the last seat are never played: say which."""
        full = {**_defaults(cls), **params}
        strategies, n = list(full.get("strategies", ())), int(full.get("n_players", 2))
        if len(strategies) <= n:
            return []
        unseated = strategies[n:]
        return [
            f"strategies: {len(strategies)} given for {n} seats; "
            f"{len(unseated)} never play: {', '.join(map(str, unseated))}"
        ]

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> None:
        """The checks ``__init__`` would make (the rules' cross-field ones such as
        ``1 < k < n_players``, strategy specs that resolve), without building a model."""
        full = {**_defaults(cls), **params}
        strategies = full.pop("strategies", ())
        if not strategies:
            raise ValueError("strategies: give at least one strategy spec")
        for spec in strategies:
            _check_strategy_spec(spec)
        population_table(full.get("players")).check(int(full.get("n_players", 2)), roles=None)
        rules_cls = getattr(sys.modules[cls.__module__], "RULES", None)
        if rules_cls is not None:
            rule_params = tuple((k, full[k]) for k in _rule_keys(rules_cls) if k in full)
            _check_rules(
                rules_cls, full.get("n_players", 2), full.get("rounds", DEFAULT_ROUNDS), rule_params
            )

    # -- play ------------------------------------------------------------
    def phase_act(self) -> None:
        """All players choose C or D at once; payoffs and the next state follow the rules."""
        if self.store.round >= self.rules.n_rounds:
            self.running = False
            return
        kind = f"{self.GAME}.action"
        decisions = [
            Decision(kind, ACTION_SPEC, obs, agent=agent, step=self.round, fallback="D")
            for agent, obs in zip(self._by_seat, self._observations, strict=True)
        ]
        answers = self.ask_all(decisions)
        cooperated = np.array([[a == "C" for a in answers]], dtype=bool)
        pay, self.state = self.rules.payoffs(cooperated, self.state)
        self.store.record(cooperated, pay, self.state)

    def end_of_round(self) -> None:
        super().end_of_round()
        if self.store.round >= self.rules.n_rounds:
            self.running = False

    # -- reporters -------------------------------------------------------
    def last_cooperation_rate(self) -> float:
        t = self.store.round
        return float("nan") if t == 0 else float(self.store.coop[0, t - 1]) / self.rules.n_players

    def last_mean_payoff(self) -> float:
        t = self.store.round
        return float("nan") if t == 0 else float(self.store.payoffs[0, :, t - 1].mean())

    def normalised_payoff(self) -> float:
        """Mean payoff per player per round so far (the paper's normalised reward)."""
        t = self.store.round
        return (
            float("nan")
            if t == 0
            else float(self.store.totals()[0].sum()) / (self.rules.n_players * t)
        )

    def current_stock(self) -> float:
        return (
            float("nan")
            if self.store.stock is None
            else float(self.store.stock[0, self.store.round])
        )

    # -- results -----------------------------------------------------------
    @property
    def actions(self) -> np.ndarray:
        """(rounds played, n) bool."""
        return self.store.actions[0, :, : self.store.round].T

    @property
    def payoffs(self) -> np.ndarray:
        """(rounds played, n) float."""
        return self.store.payoffs[0, :, : self.store.round].T

    def total_payoffs(self) -> np.ndarray:
        return self.store.totals()[0]

    def final_metrics(self) -> dict[str, Any]:
        t = max(self.store.round, 1)
        n = self.rules.n_players
        low, high = self.rules.welfare_bounds()
        mean = float(self.store.totals()[0].sum()) / (n * t)
        out: dict[str, Any] = {
            "rounds_played": self.store.round,
            "normalised_payoff": mean,
            "cooperation_rate": float(self.store.coop[0, : self.store.round].sum()) / (n * t),
            "welfare_efficiency": (mean - low) / (high - low) if high > low else float("nan"),
        }
        if self.store.stock is not None:
            out["final_stock"] = float(self.store.stock[0, self.store.round])
        if any(isinstance(p.policy, SandboxedStrategyPolicy) for p in self.seats):
            flags = self.sandbox_flags
            out["flagged_strategies"] = len({f.strategy for f in flags})
            out["flag_reasons"] = "; ".join(f"{f.strategy}: {f.reason}" for f in flags)[:2000]
        return out

    @property
    def sandbox_flags(self) -> list[Any]:
        """What the sandbox flagged in this match (strategy, round, reason), over all seats."""
        return [
            f
            for p in self.seats
            if isinstance(p.policy, SandboxedStrategyPolicy)
            for f in p.policy.flags
        ]


# -- parameter checks (cached: a large grid repeats the same values) -----


@cache
def _defaults(cls: type[DilemmaModel]) -> dict[str, Any]:
    """The game's parameter defaults (its ``Parameters`` fields)."""
    return {
        name: info.default
        for name, info in params_model(cls).model_fields.items()
        if not info.is_required()
    }


@cache
def _rule_keys(rules_cls: type[BinaryGame]) -> tuple[str, ...]:
    """The rules' own parameters (besides the group size and the number of rounds)."""
    names = inspect.signature(rules_cls.__init__).parameters
    return tuple(sorted(set(names) - {"self", "n_players", "n_rounds"}))


@lru_cache(maxsize=4096)
def _check_strategy_spec(spec: str) -> None:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"strategies: {spec!r} is not a strategy spec")
    try:
        resolve_strategy(spec)
    except (ValueError, KeyError, LookupError, OSError, ImportError, TypeError) as exc:
        text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        raise ValueError(f"strategies: {spec!r}: {' '.join(text.split())}") from None


@lru_cache(maxsize=65536)
def _check_rules(
    rules_cls: type[BinaryGame], n_players: int, rounds: int, params: tuple[tuple[str, Any], ...]
) -> None:
    rules_cls(n_players, rounds, **dict(params))
