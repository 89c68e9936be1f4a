"""People at the table: a policy whose answers come from a person, through a seat's inbox.

A hosted session (``mesa-dilemmas host``) owns one :class:`Hub` per group (one model).  While
the group's model is built (:func:`use_hub`), every ``{ human = "NAME", count = N }`` seat of its
population gets a :class:`Seat` on that hub, found by a join code, and a :class:`HumanPolicy`.

When the game asks, the policy *posts* the decision to its seat (:meth:`Seat.post`) and waits
for the answer; the page that shows the seat (``mesa_dilemmas.viz.host``) reads the pending
decision from the hub and hands the person's answer back with :meth:`Seat.submit`.  The answer
is validated by the decision's own spec: an invalid one is returned to the page with the
spec's message and the decision stays open (it is never coerced; every attempt is counted).
The policy is asynchronous, so the broker gathers a phase's human seats with the other
asynchronous ones (language models) and every ask of a phase goes out at once; rule seats
have answered before.

Each decision has a time limit (``time_limit_s``).  What expiry means is the hub's
``on_timeout``, and every time-out is recorded as such on the seat's record
(``timed_out = True``), whatever follows:

``"wait"`` (the default)
    the decision stays open: the page shows it as overdue and the phase waits for the person
    (or for the experimenter to stop the group).
``"stop"``
    the group stops at this decision (:class:`HumanTimeout` is raised out of the model's step);
    the rounds played so far are kept.
``"fallback"``
    the game's documented fallback for this decision (``Decision.fallback``) is used, flagged
    ``fell_back`` in the record and counted by the broker as a fallback; a decision without a
    documented fallback stops the group as ``"stop"`` does.  (A game's fallback is its own
    choice of a safe answer -- for some decisions that is what its rule player would do -- so
    this is opt-in.)

Nothing here imports the dashboard: the hub is plain thread-safe data.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mesa_dilemmas.agents.decisions import AnswerSpec, Decision, InvalidAnswer
from mesa_dilemmas.agents.policy import Answer, Policy

if TYPE_CHECKING:
    import mesa

    from mesa_dilemmas.agents.persona import Persona
    from mesa_dilemmas.agents.population import Group

OnTimeout = Literal["wait", "stop", "fallback"]
ON_TIMEOUT: tuple[str, ...] = ("wait", "stop", "fallback")
#: the letters of a join code (no 0/O, 1/I/L: codes are read aloud and typed)
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


class HumanTimeout(RuntimeError):
    """A person did not answer in time and the group stops (``on_timeout = "stop"``)."""


class SeatClosed(RuntimeError):
    """The session was stopped while a person was deciding."""


def new_code(taken: set[str] | frozenset[str] = frozenset(), length: int = 6) -> str:
    """A fresh join code (not derived from any game's generator: codes never change a game)."""
    while True:
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))
        if code not in taken:
            return code


def plain(value: Any, depth: int = 0) -> Any:
    """An observation as plain data (numbers, text, lists, dicts) for a page to show: objects
    with ``as_dict()`` become their dict, anything else its text; keys that cannot be read are
    left out."""
    if depth > 6:
        return str(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        return plain(value.item(), depth + 1)
    if hasattr(value, "tolist") and callable(value.tolist):
        return plain(value.tolist(), depth + 1)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in list(value):
            try:
                out[str(key)] = plain(value[key], depth + 1)
            except Exception:  # noqa: BLE001 - a derived key that cannot be computed now
                continue
        return out
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v, depth + 1) for v in value]
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):
        with contextlib.suppress(Exception):
            return plain(as_dict(), depth + 1)
    return str(value)


@dataclass
class Pending:
    """A decision posted to a seat and not yet answered."""

    id: int
    kind: str
    step: int
    spec: AnswerSpec
    observation: dict[str, Any]
    posted: float
    deadline: float | None
    has_fallback: bool
    future: Future = field(default_factory=Future)
    #: the last invalid answer's message (shown on the page), and how many there were
    error: str | None = None
    invalid: int = 0
    timed_out: bool = False
    #: what the page's form holds (kept on the server: a reload shows the same draft)
    draft: Any = None

    def remaining(self, now: float | None = None) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - (time.monotonic() if now is None else now)


@dataclass
class Seat:
    """One person's place at one group's table: a join code, a state and an inbox of one."""

    code: str
    seat: int
    label: str
    hub: Hub
    agent_id: int | None = None
    #: a session-local participant id (set when someone first opens the join link; no personal data)
    participant: str | None = None
    consented: bool = False
    instructed: bool = False
    pending: Pending | None = None
    #: one record per decision answered (or timed out): what goes into the run's tables
    records: list[dict[str, Any]] = field(default_factory=list)

    # -- the page's side -----------------------------------------------------
    def join(self) -> str:
        """The participant id of whoever holds this seat's code (the same one after a reload)."""
        with self.hub.lock:
            if self.participant is None:
                self.participant = f"P{self.hub.next_participant()}"
                self.hub.changed()
            return self.participant

    def agree(self) -> None:
        with self.hub.lock:
            self.consented = True
            self.hub.changed()

    def ready(self) -> None:
        with self.hub.lock:
            self.instructed = True
            self.hub.changed()

    def keep_draft(self, draft: Any) -> None:
        with self.hub.lock:
            if self.pending is not None:
                self.pending.draft = draft

    def submit(self, answer: Any, pending_id: int | None = None) -> str | None:
        """Hand in an answer to the pending decision; None if accepted, else why not (the
        spec's own message; the decision stays open)."""
        with self.hub.lock:
            pending = self.pending
            if pending is None or (pending_id is not None and pending.id != pending_id):
                return "this decision is no longer open"
            try:
                value = pending.spec.validate(answer)
            except InvalidAnswer as exc:
                pending.invalid += 1
                pending.error = str(exc)
                self.hub.changed()
                return pending.error
            self._close(pending, value, answered=True)
            return None

    @property
    def state(self) -> str:
        """``deciding`` (a decision is open), ``waiting`` (for others or the game), ``joined``,
        ``open`` (nobody has opened the link), or the group's end state."""
        if self.hub.finished:
            return self.hub.finished
        if self.pending is not None:
            return "deciding"
        if self.participant is None:
            return "open"
        return "waiting" if self.hub.started else "joined"

    # -- the policy's side ---------------------------------------------------
    def post(self, decision: Decision, time_limit_s: float | None) -> Pending:
        with self.hub.lock:
            if self.hub.finished:
                raise SeatClosed(f"seat {self.code}: the session is {self.hub.finished}")
            now = time.monotonic()
            pending = Pending(
                id=self.hub.next_decision(),
                kind=decision.kind,
                step=int(decision.step),
                spec=decision.spec,
                observation=plain(decision.observation),
                posted=now,
                deadline=None if time_limit_s is None else now + float(time_limit_s),
                has_fallback=decision.fallback is not None,
            )
            self.pending = pending
            self.hub.changed()
            return pending

    def time_out(self, pending: Pending) -> None:
        """Record that ``pending`` ran past its time limit (it may stay open: ``"wait"``)."""
        with self.hub.lock:
            if pending.future.done() or pending.timed_out:
                return
            pending.timed_out = True
            self.hub.timeouts += 1
            self.hub.changed()

    def give_up(self, pending: Pending, value: Any) -> None:
        """Close ``pending`` without a person's answer (a fallback or a stop), recorded so."""
        with self.hub.lock:
            if not pending.future.done():
                self._close(pending, value, answered=False)

    def _close(self, pending: Pending, value: Any, *, answered: bool) -> None:
        now = time.monotonic()
        self.records.append(
            {
                "seat": self.seat,
                "code": self.code,
                "label": self.label,
                "participant": self.participant,
                "AgentID": self.agent_id,
                "Step": pending.step,
                "kind": pending.kind,
                "answered": answered,
                "timed_out": pending.timed_out,
                "invalid_answers": pending.invalid,
                "response_time_s": round(now - pending.posted, 3) if answered else None,
                "waited_s": round(now - pending.posted, 3),
                "answer": value,
            }
        )
        self.pending = None
        pending.future.set_result(value)
        self.hub.changed()

    def close(self, reason: str) -> None:
        with self.hub.lock:
            pending, self.pending = self.pending, None
            if pending is not None and not pending.future.done():
                pending.future.set_exception(SeatClosed(reason))


class Hub:
    """The seats of one group (one model), thread-safe: the model's thread posts decisions,
    pages read them and submit answers.  ``version`` grows with every change (pages wait on
    :meth:`wait_change`)."""

    def __init__(
        self,
        *,
        time_limit_s: float | None = 60.0,
        on_timeout: OnTimeout = "wait",
        taken_codes: set[str] | None = None,
        participants: Any = None,
    ) -> None:
        if on_timeout not in ON_TIMEOUT:
            raise ValueError(f"on_timeout: {on_timeout!r} is not one of {', '.join(ON_TIMEOUT)}")
        if time_limit_s is not None and not time_limit_s > 0:
            raise ValueError(f"time_limit_s: must be > 0 (got {time_limit_s})")
        self.time_limit_s = time_limit_s
        self.on_timeout: OnTimeout = on_timeout
        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)
        self.version = 0
        self.seats: list[Seat] = []
        self.started = False
        #: None while the group can still play; else "finished", "stopped", "error"
        self.finished: str | None = None
        self.timeouts = 0
        self._decisions = 0
        self._taken = taken_codes if taken_codes is not None else set()
        #: a shared counter of participants (a session numbers people across its groups)
        self._participants = participants if participants is not None else _Counter()

    # -- seats -----------------------------------------------------------------
    def add_seat(self, seat: int, label: str) -> Seat:
        with self.lock:
            code = new_code(self._taken)
            self._taken.add(code)
            made = Seat(code=code, seat=seat, label=label, hub=self)
            self.seats.append(made)
            self.changed()
            return made

    def seat(self, code: str) -> Seat | None:
        code = code.strip().upper()
        return next((s for s in self.seats if s.code == code), None)

    def next_decision(self) -> int:
        self._decisions += 1
        return self._decisions

    def next_participant(self) -> int:
        return self._participants.next()

    def records(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r for s in self.seats for r in s.records]

    # -- changes ---------------------------------------------------------------
    def changed(self) -> None:
        with self._changed:
            self.version += 1
            self._changed.notify_all()

    def wait_change(self, version: int, timeout: float) -> int:
        """Block until ``version`` is out of date or ``timeout`` passes; the current version."""
        with self._changed:
            if self.version == version:
                self._changed.wait(timeout)
            return self.version

    def close(self, state: str = "stopped") -> None:
        """End the group: open decisions fail with :class:`SeatClosed`."""
        with self.lock:
            if self.finished is None:
                self.finished = state
            for s in self.seats:
                s.close(f"the session is {self.finished}")
            self.changed()


class _Counter:
    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._n += 1
            return self._n


_ACTIVE_HUB: contextvars.ContextVar[Hub | None] = contextvars.ContextVar(
    "mesa_dilemmas_human_hub", default=None
)


@contextlib.contextmanager
def use_hub(hub: Hub) -> Iterator[Hub]:
    """Build a model inside this block: its human seats sit on ``hub``."""
    token = _ACTIVE_HUB.set(hub)
    try:
        yield hub
    finally:
        _ACTIVE_HUB.reset(token)


class HumanPolicy(Policy):
    """A seat answered by a person through its :class:`Seat` (see the module doc)."""

    is_async = True
    reads_text = True

    def __init__(self, seat: Seat) -> None:
        self.seat = seat
        self.name = f"human:{seat.label}"
        #: the game's fallback may be used on a time-out (the broker then counts it)
        self.strict = seat.hub.on_timeout != "fallback"

    def bind(self, agent: Any) -> None:
        super().bind(agent)
        self.seat.agent_id = None if agent is None else agent.unique_id

    def decide(self, decision: Decision) -> Any:  # a broker always awaits adecide
        return asyncio.run(self.adecide(decision))

    async def adecide(self, decision: Decision) -> Any:
        hub = self.seat.hub
        pending = self.seat.post(decision, hub.time_limit_s)
        answer = asyncio.wrap_future(pending.future)
        done, _ = await asyncio.wait({answer}, timeout=hub.time_limit_s)
        if done:
            return answer.result()
        self.seat.time_out(pending)
        if hub.on_timeout == "wait":
            return await answer
        if hub.on_timeout == "fallback" and decision.fallback is not None:
            self.seat.give_up(pending, decision.fallback)
            await answer
            return Answer(decision.fallback, fell_back=True, error="time-out")
        self.seat.give_up(pending, None)
        await answer
        raise HumanTimeout(
            f"seat {self.seat.code} ({self.seat.label}) did not answer {decision.kind!r} "
            f"within {hub.time_limit_s:g} s (round {decision.step})"
        )


def build_human_policy(
    value: str, *, group: Group, model: mesa.Model, seat: int | None, persona: Persona
) -> HumanPolicy:
    """The ``human`` policy kind (entry point ``mesa_dilemmas.policies``): a seat on the hub of
    the session building this model."""
    hub = _ACTIVE_HUB.get()
    if hub is None:
        raise ValueError(
            f"population: human = {value!r} seats people, who join a hosted session: "
            "start it with `mesa-dilemmas host SCENARIO` (a simulated run cannot seat them)"
        )
    if seat is None:
        raise ValueError(f"population.roles: human = {value!r} can sit at a seat, not a role")
    return HumanPolicy(hub.add_seat(seat, value))


__all__ = [
    "ON_TIMEOUT",
    "Hub",
    "HumanPolicy",
    "HumanTimeout",
    "Pending",
    "Seat",
    "SeatClosed",
    "build_human_policy",
    "plain",
    "use_hub",
]
