"""Every registered game as a PettingZoo ``ParallelEnv`` (and, through PettingZoo's converter, an
AEC env).

The env is built from the game's public interface only: :func:`build_model` with the game's
parameters and a population in which the RL seats are an :class:`~.seats.ExternalPolicy`
group (rule, strategy and LLM groups fill the other seats as in any run), ``model.step()`` in
the session's thread (:mod:`.seats`), the decisions' answer specs for the action spaces and
their observations for the observation spaces (:mod:`.spaces`), and each seat's running score
for the rewards (:func:`seat_score`).

Which kinds an RL seat controls, and the numbers it observes, are found once per game and
parameters by *probe* episodes (seeds :data:`PROBE_SEEDS`, at most :data:`PROBE_ROUNDS` rounds, the
RL seats answered by their rule player or the decisions' fallbacks): every decision an RL seat
is asked there is recorded.

One env step answers the decisions the RL seats are asked at one moment of the game: a phase's
decisions (asked of every seat at once) or a single one asked in turn (the answer to a trade
offer).  Every RL agent gets an action each step; its observation's ``_decision=KIND`` feature
(and ``info["decision"]``) says which decision its action answers -- none (``None``) when it was not
asked this step and its action is ignored.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from mesa_dilemmas.agents.decisions import InvalidAnswer
from mesa_dilemmas.agents.population import Group, Population, population_table
from mesa_dilemmas.dilemmas.base import build_model, expand_params
from mesa_dilemmas.dilemmas.registry import game_model
from mesa_dilemmas.pettingzoo.seats import Session, take_seats
from mesa_dilemmas.pettingzoo.spaces import Codec, categories, codec_for, numbers_of

#: the seeds of the probe episodes that find each RL seat's decision kinds and observed numbers
PROBE_SEEDS = (0, 1, 2)
#: at most this many rounds are probed (a game that runs until it collapses may run long)
PROBE_ROUNDS = 100
#: the population factory of an RL seat
EXTERNAL_FACTORY = "mesa_dilemmas.pettingzoo.seats:external_seat"
#: the feature every observation has first: the round being played
ROUND = "_round"


def seat_score(model: Any, agent: Any) -> float:
    """A seat's running total of its game's payoff: ``model.total_payoffs()[slot]`` (the C/D
    games), else the agent's ``points``, ``wealth`` (the games that keep them on their agents),
    ``score`` or ``payoff``."""
    totals = getattr(model, "total_payoffs", None)
    if callable(totals):
        return float(totals()[agent.slot])
    for name in ("points", "wealth", "score", "payoff"):
        value = getattr(agent, name, None)
        if isinstance(value, int | float | np.number) and not isinstance(value, bool):
            return float(value)
    raise TypeError(
        f"{type(model).__name__}: no per-seat score found (model.total_payoffs(), or an agent "
        "attribute points / wealth / score / payoff); pass score=fn(model, agent) to the env"
    )


@dataclass(frozen=True)
class Interface:
    """What the RL seats of a game with given parameters face (found by the probe)."""

    #: decision kind -> its codec, for the kinds an RL seat answers
    codecs: dict[str, Codec]
    #: decision kinds an RL seat was asked that the seat's rule player answers
    uncontrolled: tuple[str, ...]
    #: the numbers an RL seat observes, in order (the first is the round)
    features: tuple[str, ...]


def _probe(
    model_cls: type, params: Mapping[str, Any], seats: Sequence[int], max_rounds: int | None
) -> Interface:
    session = Session(controlled=lambda kind: False, probe=True)
    limit = PROBE_ROUNDS if max_rounds is None else min(max_rounds, PROBE_ROUNDS)
    for seed in PROBE_SEEDS:
        model = session.build(lambda seed=seed: build_model(model_cls, params, rng=seed))
        take_seats(session, model, seats)
        try:
            while model.running and model.round < limit:
                model.step()
        finally:
            model.broker.close()
    specs: dict[str, list[Any]] = {}
    for r in session.records:
        specs.setdefault(r.decision.kind, []).append(r.decision.spec)
    codecs: dict[str, Codec] = {}
    uncontrolled = []
    for kind in sorted(specs):
        codec = codec_for(specs[kind])
        if codec is None:
            uncontrolled.append(kind)
        else:
            codecs[kind] = codec
    keys: set[str] = set()
    for r in session.records:
        if r.decision.kind in codecs:
            keys.update(numbers_of(r.decision.observation))
    keys.discard(ROUND)
    keys -= categories(keys)
    return Interface(codecs, tuple(uncontrolled), (ROUND, *sorted(keys)))


_PROBED: dict[str, Interface] = {}


def _seat_count(model_cls: type, params: Mapping[str, Any]) -> int:
    model = build_model(model_cls, params, rng=PROBE_SEEDS[0])
    try:
        slots = [int(getattr(a, "slot", -1)) for a in model.agents]
    finally:
        model.broker.close()
    if not slots or max(slots) < 0:
        raise ValueError(f"{type(model).__name__}: the game seats no players")
    return max(slots) + 1


def with_rl_seats(
    model_cls: type, params: Mapping[str, Any], seats: Sequence[int]
) -> dict[str, Any]:
    """``params`` whose population claims ``seats`` for the RL side before its own groups: the
    game's rule player sits there (replaced by :func:`~.seats.take_seats` once the model is
    built), or, in a game without rule players, an :class:`~.seats.ExternalPolicy` from the
    population factory :func:`~.seats.external_seat`."""
    out = dict(params)
    table = population_table(out.get("players"))
    if "rule" in model_cls.rule_players():
        rl = Group(rule="rule", seats=list(seats), label="rl")
    else:
        rl = Group(factory=EXTERNAL_FACTORY, seats=list(seats), label="rl")
    out["players"] = Population(
        groups=[rl, *table.groups], placement=table.placement, roles=dict(table.roles)
    )
    return out


class DilemmaParallelEnv(ParallelEnv):
    """A game of the platform as a PettingZoo parallel env (:func:`parallel_env`)."""

    metadata = {"name": "mesa_dilemmas", "render_modes": [], "is_parallelizable": True}
    render_mode = None

    def __init__(
        self,
        game: str,
        *,
        rl_seats: int | Iterable[int] | None = None,
        max_rounds: int | None = 100,
        score: Callable[[Any, Any], float] | None = None,
        **params: Any,
    ) -> None:
        self.game = game
        self.model_cls = game_model(game)
        self.metadata = {**self.metadata, "name": f"mesa_dilemmas_{game}"}
        self.max_rounds = max_rounds
        self.score = score or seat_score
        base = expand_params(self.model_cls, params)
        n = _seat_count(self.model_cls, base)
        if rl_seats is None:
            seats = list(range(n))
        elif isinstance(rl_seats, int):
            seats = list(range(rl_seats))
        else:
            seats = sorted(set(int(s) for s in rl_seats))
        if not seats or seats[0] < 0 or seats[-1] >= n:
            raise ValueError(f"rl_seats: give seats among 0..{n - 1} (the game has {n} seats)")
        #: the seats the RL side plays
        self.rl_seats: tuple[int, ...] = tuple(seats)
        self.params = with_rl_seats(self.model_cls, base, seats)
        key = repr((game, sorted(self.params.items(), key=lambda kv: kv[0]), max_rounds))
        if key not in _PROBED:
            _PROBED[key] = _probe(self.model_cls, self.params, seats, max_rounds)
        #: what the RL seats face: kinds with their codecs, the kinds left to rules, features
        self.interface = _PROBED[key]
        self.kinds: tuple[str, ...] = tuple(self.interface.codecs)
        self.possible_agents = [f"seat_{s}" for s in seats]
        self.agents: list[str] = []
        self._seat = {a: s for a, s in zip(self.possible_agents, seats, strict=True)}
        #: what each number of an observation is: the round, which decision is asked (one-hot
        #: ``_decision=KIND``), then the numbers of the decision's observation (:mod:`.spaces`)
        self.feature_names: tuple[str, ...] = (
            ROUND,
            *(f"_decision={k}" for k in self.kinds),
            *self.interface.features[1:],
        )
        observation_space = spaces.Box(
            -np.inf, np.inf, shape=(len(self.feature_names),), dtype=np.float32
        )
        codecs = self.interface.codecs
        if not codecs:
            action: spaces.Space = spaces.Discrete(1)
        elif len(codecs) == 1:
            action = next(iter(codecs.values())).space
        else:
            action = spaces.Dict({k: c.space for k, c in codecs.items()})
        self._action_space = action
        # a space object of its own per agent and env (seeding one must not move another's)
        self.observation_spaces = {
            a: copy.deepcopy(observation_space) for a in self.possible_agents
        }
        self.action_spaces = {a: copy.deepcopy(action) for a in self.possible_agents}
        self.session: Session | None = None
        self.model: Any = None
        self._scores: dict[str, float] = {}
        self._features: dict[str, np.ndarray] = {}

    # -- spaces ----------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def controls(self) -> dict[str, str]:
        """What an RL seat's action means, per decision kind it answers."""
        return {k: c.meaning for k, c in self.interface.codecs.items()}

    # -- episodes --------------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self.close()
        codecs = self.interface.codecs
        session = Session(controlled=codecs.__contains__, max_rounds=self.max_rounds)
        rng = None if seed is None else int(seed)
        self.model = session.build(lambda: build_model(self.model_cls, self.params, rng=rng))
        take_seats(session, self.model, self.rl_seats)
        self.session = session
        self.agents = list(self.possible_agents)
        self._scores = {a: self.score_of(a) for a in self.agents}
        self._features = {
            a: np.zeros(len(self.interface.features) - 1, dtype=np.float32) for a in self.agents
        }
        session.start()
        observations, infos = self._observe()
        if session.done:
            self.agents = []
        return observations, infos

    def seat_agent(self, agent: str) -> Any:
        """The Mesa agent at ``agent``'s seat in the current episode."""
        assert self.session is not None
        return self.session.policies[self._seat[agent]].agent

    def score_of(self, agent: str) -> float:
        """``agent``'s running score now (its rewards so far add up to its change)."""
        return float(self.score(self.model, self.seat_agent(agent)))

    def _observe(self) -> tuple[dict[str, Any], dict[str, Any]]:
        assert self.session is not None
        waiting = self.session.waiting()
        index = {k: i + 1 for i, k in enumerate(self.kinds)}
        names = self.interface.features[1:]
        observations, infos = {}, {}
        for agent in self.agents:
            p = waiting.get(self._seat[agent])
            features = self._features[agent]
            if p is not None:
                seen = numbers_of(p.decision.observation)
                features = np.array([seen.get(k, 0.0) for k in names], dtype=np.float32)
            self._features[agent] = features
            kind = None if p is None else p.decision.kind
            asked = np.zeros(1 + len(self.kinds), dtype=np.float32)
            asked[0] = float(self.model.round)
            if kind is not None:
                asked[index[kind]] = 1.0
            observations[agent] = np.concatenate([asked, features])
            infos[agent] = {"decision": kind, "round": int(self.model.round)}
        return observations, infos

    def _check(self, agent: str, action: Any) -> None:
        space = self._action_space
        if isinstance(space, spaces.Dict):
            if not isinstance(action, Mapping):
                raise ValueError(
                    f"{agent}: expected an action dict with keys among {list(space.spaces)}, "
                    f"got {action!r}"
                )
            for key, sub in action.items():
                if key not in space.spaces:
                    raise ValueError(
                        f"{agent}: unknown decision kind {key!r} in the action; "
                        f"allowed: {list(space.spaces)}"
                    )
                _check_in(agent, sub, space.spaces[key], key)
        else:
            _check_in(agent, action, space, None)

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        if self.session is None or not self.agents:
            raise RuntimeError("step() before reset() or after the episode ended: call reset()")
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(
                f"actions for agents not in play: {sorted(unknown)}; in play: {self.agents}"
            )
        waiting = self.session.waiting()
        answers: dict[int, Any] = {}
        delegated: set[str] = set()
        for agent in self.agents:
            action = actions.get(agent)
            if action is not None:
                self._check(agent, action)
            p = waiting.get(self._seat[agent])
            if p is None:
                continue
            kind = p.decision.kind
            if action is None:
                raise ValueError(f"{agent} was asked {kind!r} and was given no action")
            if isinstance(self._action_space, spaces.Dict):
                if kind not in action:
                    raise ValueError(f"{agent} was asked {kind!r}: its action needs that key")
                action = action[kind]
            value = self.interface.codecs[kind].decode(action, p.decision.spec)
            try:
                value = p.decision.validate(value)
            except InvalidAnswer:  # this seat's options differ from the probe's: its rule answers
                value = self.session.policies[p.seat].answer_uncontrolled(p.decision)
                delegated.add(agent)
            answers[p.seat] = value
        self.session.answer(answers)
        observations, infos = self._observe()
        rewards = {}
        for agent in self.agents:
            now = self.score_of(agent)
            rewards[agent] = now - self._scores[agent]
            self._scores[agent] = now
            if agent in delegated:
                infos[agent]["delegated"] = True
        done = self.session.done
        truncated = done and self.session.truncated
        terminations = {a: done and not truncated for a in self.agents}
        truncations = {a: truncated for a in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> None:
        return None

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def __del__(self) -> None:  # an env dropped mid-episode: end its model's thread
        with contextlib.suppress(Exception):
            self.close()


def _check_in(agent: str, action: Any, space: spaces.Space, kind: str | None) -> None:
    value = action
    if isinstance(space, spaces.Box):
        try:
            value = np.asarray(action, dtype=space.dtype)
        except (TypeError, ValueError):
            value = None
        ok = value is not None and value.shape == space.shape and bool(np.all(np.isfinite(value)))
        ok = ok and space.contains(value)
    elif isinstance(space, spaces.Discrete):
        ok = isinstance(action, int | np.integer) and not isinstance(action, bool)
        ok = ok and space.contains(np.int64(action))
    elif isinstance(space, spaces.Dict):
        ok = isinstance(action, Mapping) and set(action) == set(space.spaces)
        if ok:
            for key, sub in action.items():
                _check_in(agent, sub, space.spaces[key], kind)
    else:
        ok = space.contains(action)
    if not ok:
        where = f" for {kind!r}" if kind else ""
        raise ValueError(f"{agent}: action {action!r}{where} is not in its action space {space}")


def parallel_env(game: str, **params: Any) -> DilemmaParallelEnv:
    """A registered game (or ``"package.module:Model"``) as a PettingZoo parallel env.

    ``rl_seats``: the seats the RL side plays (a count of the first seats or a list; default
    every seat); the game's ``players`` population fills the others.  ``max_rounds`` (default
    100): the episode is truncated after that many rounds if the game has not ended (None: no
    limit).  ``score=fn(model, agent)``: a seat's running score when :func:`seat_score` does
    not find it.  Every other keyword is a game parameter."""
    return DilemmaParallelEnv(game, **params)


def env(game: str, **params: Any) -> Any:
    """The same game as a PettingZoo AEC env (PettingZoo's ``parallel_to_aec``)."""
    return parallel_to_aec(parallel_env(game, **params))


__all__ = ["DilemmaParallelEnv", "Interface", "env", "parallel_env", "seat_score"]
