"""Seats an RL learner controls: control inverted by running the model in a thread of its own.

A game asks its decisions from inside ``model.step()`` -- several phases per round, each with
its own decision kind, and decisions asked in turn, each depending on the answers before (a
trade offer's recipient answers it before the next offer is put) -- so the env cannot know in
advance what it will be asked.
Instead the model plays in a worker thread.  An RL seat's policy (:class:`ExternalPolicy`) is
asynchronous, so the broker gathers a phase's decisions of every RL seat together; each one is
posted to the :class:`Session` and waits.  Once every decision of the gather is posted (a
callback queued behind them on the broker's event loop), the session tells the env, which
returns those decisions' observations to the learner.  ``env.step(actions)`` answers them and
waits until the model has asked the next ones or the episode is over.

At every moment exactly one side runs -- the model thread or the learner -- so an episode is
as deterministic as the game: same seed and same actions, same episode.

A decision kind the RL side does not control (free text, lists, options that differ by seat;
:mod:`.spaces`) is answered at once inside the model thread by the seat's rule player (the
game's ``rule_players()["rule"]``), or, in a game without rule players, by the decision's
documented fallback.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.agents.policy import Policy

if TYPE_CHECKING:
    import mesa

    from mesa_dilemmas.agents.base import DilemmaAgent
    from mesa_dilemmas.agents.persona import Persona


class SessionClosed(Exception):
    """The env was reset or closed while the model still waited for an RL answer."""


@dataclass
class Pending:
    """One decision an RL seat has been asked and not yet answered."""

    seat: int
    decision: Decision
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop


@dataclass
class Record:
    """A decision an RL seat was asked in a probe episode (for deriving the spaces)."""

    seat: int
    decision: Decision


class ExternalPolicy(Policy):
    """The policy of a seat the RL side plays: decisions of the kinds it controls wait for the
    env's action; every other decision is answered by the seat's rule player (``delegate``)."""

    name = "external"
    is_async = True
    strict = True

    def __init__(self, session: Session, seat: int, delegate: Policy | None) -> None:
        self.session = session
        self.seat = seat
        self.delegate = delegate

    def bind(self, agent: DilemmaAgent | None) -> None:
        super().bind(agent)
        if self.delegate is not None:
            self.delegate.bind(agent)

    def answer_uncontrolled(self, decision: Decision) -> Any:
        if self.delegate is None:
            return decision.fallback
        try:
            return self.delegate.decide(decision)
        except NotImplementedError:
            return decision.fallback

    async def adecide(self, decision: Decision) -> Any:
        return await self.session.ask(self, decision)


#: the session whose model is being built (read by :func:`external_seat`, the population's
#: factory for RL seats)
_BUILDING: ContextVar[Session | None] = ContextVar("mesa_dilemmas_pettingzoo_session", default=None)


def external_seat(*, model: mesa.Model, seat: int | None, persona: Persona) -> Policy:
    """The population factory of an RL seat in a game without rule players (the C/D games:
    ``{ factory = "...:external_seat", seats = [..] }``): an :class:`ExternalPolicy` of the
    session building the model, answering uncontrolled decisions with their fallbacks."""
    session = _BUILDING.get()
    if session is None:
        raise RuntimeError(
            "external_seat: RL seats exist only inside mesa_dilemmas.pettingzoo envs"
        )
    if seat is None:
        raise ValueError("external_seat: an RL seat is a player's seat, not a model role")
    policy = ExternalPolicy(session, seat, None)
    session.policies[seat] = policy
    return policy


def take_seats(session: Session, model: mesa.Model, seats: Iterable[int]) -> None:
    """Make the agents at ``seats`` RL seats: a seat the population gave the game's rule
    player (the placeholder group of :func:`~.env.with_rl_seats`) keeps that player as the
    delegate of its new :class:`ExternalPolicy`, so the game treats the seat as a rule seat
    (a game may treat a seat of another policy kind differently: a rule seat's norms are
    numbers where a language model's are text, say)."""
    wanted = set(seats)
    for agent in model.agents:
        seat = int(getattr(agent, "slot", -1))
        if seat not in wanted:
            continue
        policy = agent.policy
        if not isinstance(policy, ExternalPolicy):
            policy = ExternalPolicy(session, seat, policy)
            policy.agent = agent  # the delegate is bound to the agent already
            agent.policy = policy
            session.policies[seat] = policy
        wanted.discard(seat)
    if wanted:
        raise ValueError(f"rl_seats: no agent sits at seat {sorted(wanted)[0]}")


@dataclass
class Session:
    """One episode: the model, its thread, and the RL decisions waiting for an answer.

    ``controlled(kind)`` says which decision kinds wait for the env (the rest are answered by
    the seat's delegate).  ``probe`` records every decision of an RL seat and answers it as an
    uncontrolled one (for deriving the spaces; :func:`mesa_dilemmas.pettingzoo.env.probe`)."""

    controlled: Callable[[str], bool]
    probe: bool = False
    max_rounds: int | None = None
    policies: dict[int, ExternalPolicy] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    model: Any = None
    error: BaseException | None = None
    done: bool = False
    truncated: bool = False
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _quiet: bool = False
    _flush_queued: bool = False
    _closing: bool = False
    _thread: threading.Thread | None = None

    # -- building and running --------------------------------------------------------------
    def build(self, factory: Callable[[], Any]) -> Any:
        """Build the model with ``factory()`` (RL seats find this session while it runs)."""
        token = _BUILDING.set(self)
        try:
            self.model = factory()
        finally:
            _BUILDING.reset(token)
        return self.model

    def start(self) -> None:
        """Play the episode in a thread; return once RL decisions wait or the episode ended."""
        self._thread = threading.Thread(target=self._play, name="pettingzoo-model", daemon=True)
        self._thread.start()
        self.wait()

    def _play(self) -> None:
        model = self.model
        try:
            while model.running:
                if self.max_rounds is not None and model.round >= self.max_rounds:
                    self.truncated = True
                    break
                model.step()
        except SessionClosed:
            pass
        except BaseException as exc:  # reported to the env's caller
            self.error = exc
        finally:
            close = getattr(getattr(model, "broker", None), "close", None)
            if close is not None:
                close()
            with self._cond:
                self.done = True
                self._cond.notify_all()

    def wait(self) -> None:
        """Block until the model waits for RL answers or has ended; re-raise its error."""
        with self._cond:
            while not (self._quiet or self.done):
                self._cond.wait()
        if self.error is not None:
            error, self.error = self.error, None
            raise RuntimeError(f"the game failed: {error!r}") from error

    # -- the model thread's side -----------------------------------------------------------
    async def ask(self, policy: ExternalPolicy, decision: Decision) -> Any:
        if self.probe:
            self.records.append(Record(policy.seat, decision))
            return policy.answer_uncontrolled(decision)
        if not self.controlled(decision.kind):
            return policy.answer_uncontrolled(decision)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._cond:
            if self._closing:
                raise SessionClosed
            self.pending.append(Pending(policy.seat, decision, future, loop))
            if not self._flush_queued:
                # queued behind the first steps of every task of this gather: when it runs,
                # every RL decision of the phase has been posted
                self._flush_queued = True
                loop.call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        with self._cond:
            self._flush_queued = False
            self._quiet = True
            self._cond.notify_all()

    # -- the env's side --------------------------------------------------------------------
    def waiting(self) -> dict[int, Pending]:
        """The first waiting decision of each RL seat."""
        out: dict[int, Pending] = {}
        with self._cond:
            for p in self.pending:
                out.setdefault(p.seat, p)
        return out

    def answer(self, answers: Mapping[int, Any]) -> None:
        """Answer the waiting decisions of these seats (validated answers), then wait."""
        if not answers:
            return
        with self._cond:
            chosen = []
            for seat, value in answers.items():
                p = next(p for p in self.pending if p.seat == seat)
                self.pending.remove(p)
                chosen.append((p, value))
            more = bool(self.pending)
            if not more:
                self._quiet = False
        if chosen:  # one callback: the gather sees every answer at once
            chosen[0][0].loop.call_soon_threadsafe(_resolve, [(p.future, v) for p, v in chosen])
        if not more:
            self.wait()

    def close(self) -> None:
        """End the episode's thread (its waiting decisions raise :class:`SessionClosed`)."""
        with self._cond:
            self._closing = True
            pending, self.pending = self.pending, []
        if pending:  # one callback: the first failure ends the model's thread and its loop
            # (a RuntimeError: the loop has closed, the thread has ended already)
            with contextlib.suppress(RuntimeError):
                pending[0].loop.call_soon_threadsafe(_fail, [p.future for p in pending])
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        self.error = None


def _resolve(answers: list[tuple[asyncio.Future[Any], Any]]) -> None:
    for future, value in answers:
        if not future.done():
            future.set_result(value)


def _fail(futures: list[asyncio.Future[Any]]) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(SessionClosed())
