"""The decision broker: the only path from a game's question to an agent's answer.

Games call ``ask`` for a decision taken in turn and ``ask_all`` for the
decisions of a phase taken at once.  The broker never tells the game which kind
of policy answered.  Synchronous policies (rules, strategies) are answered in
order with no event-loop cost; asynchronous ones (LLM backends) are gathered on
one persistent event loop so a phase costs one round-trip, not N (or, for runs played in
lockstep, on the loop they share: :mod:`mesa_dilemmas.agents.lockstep`).  Every answer
is validated against its spec; invalid answers of lenient policies become the
decision's documented fallback and are counted, per agent and per decision kind.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mesa_dilemmas.agents.decisions import Decision, InvalidAnswer
from mesa_dilemmas.agents.lockstep import run_on_shared_loop, shared_loop
from mesa_dilemmas.agents.policy import Answer, Policy

COUNTERS = ("asked", "parse_failures", "retries", "fallbacks")


class DecisionStats:
    """Counters keyed by (agent id or -1 for the narrator, decision kind).

    Plain lists in ``COUNTERS`` order: this sits on every decision's path."""

    def __init__(self) -> None:
        self.counts: dict[tuple[int, str], list[int]] = {}

    def add(
        self,
        agent_id: int | None,
        kind: str,
        asked: int = 0,
        parse_failures: int = 0,
        retries: int = 0,
        fallbacks: int = 0,
    ) -> None:
        key = (-1 if agent_id is None else agent_id, kind)
        row = self.counts.get(key)
        if row is None:
            row = self.counts[key] = [0, 0, 0, 0]
        row[0] += asked
        if parse_failures or retries or fallbacks:
            row[1] += parse_failures
            row[2] += retries
            row[3] += fallbacks

    def total(self, name: str) -> int:
        i = COUNTERS.index(name)
        return sum(row[i] for row in self.counts.values())

    def by_kind(self) -> dict[str, dict[str, int]]:
        out: dict[str, list[int]] = {}
        for (_, kind), row in self.counts.items():
            acc = out.setdefault(kind, [0, 0, 0, 0])
            for i, v in enumerate(row):
                acc[i] += v
        return {k: dict(zip(COUNTERS, v, strict=True)) for k, v in sorted(out.items())}

    def records(self) -> list[dict[str, Any]]:
        return [
            {"agent_id": aid, "kind": kind, **dict(zip(COUNTERS, row, strict=True))}
            for (aid, kind), row in sorted(self.counts.items())
        ]


async def _gather(coroutines: list[Any]) -> list[Any]:
    # gather inside the running loop, so its futures belong to the broker's loop
    return await asyncio.gather(*coroutines)


class DecisionBroker:
    """Routes decisions to policies, validates answers and keeps the counts."""

    def __init__(self, narrator: Policy | None = None) -> None:
        self.narrator = narrator
        self.stats = DecisionStats()
        self._loop: asyncio.AbstractEventLoop | None = None

    def policy_for(self, decision: Decision) -> Policy:
        if decision.agent is not None:
            return decision.agent.policy
        if self.narrator is None:
            raise RuntimeError(
                f"model-level decision {decision.kind!r} but the model has no narrator"
            )
        return self.narrator

    def ask(self, decision: Decision) -> Any:
        """One decision, answered now (turn-taking: the next request may depend on it)."""
        return self.ask_all([decision])[0]

    def ask_all(self, decisions: Sequence[Decision]) -> list[Any]:
        """All decisions of a phase, answered as if simultaneously; order is preserved."""
        policies = [self.policy_for(d) for d in decisions]
        raw: list[Any] = [None] * len(decisions)
        pending = []
        for i, (d, p) in enumerate(zip(decisions, policies, strict=True)):
            if p.is_async:
                pending.append(i)
            else:
                raw[i] = p.decide(d)
        if pending:
            results = self._run(_gather([policies[i].adecide(decisions[i]) for i in pending]))
            for i, r in zip(pending, results, strict=True):
                raw[i] = r
        return [self._accept(d, p, r) for d, p, r in zip(decisions, policies, raw, strict=True)]

    def _accept(self, decision: Decision, policy: Policy, result: Any) -> Any:
        answer = result if isinstance(result, Answer) else Answer(result)
        fell_back = answer.fell_back
        try:
            value = decision.validate(answer.value) if not fell_back else decision.fallback
        except InvalidAnswer as exc:
            if policy.strict:
                raise InvalidAnswer(
                    f"{policy.name} policy gave an invalid answer to {decision.kind!r}: {exc}"
                ) from exc
            value, fell_back = decision.fallback, True
            answer.parse_failures += 1
        self.stats.add(
            decision.agent_id,
            decision.kind,
            asked=1,
            parse_failures=answer.parse_failures,
            retries=answer.retries,
            fallbacks=int(fell_back),
        )
        return value

    def _run(self, coro: Any) -> Any:
        if shared_loop() is not None:  # played in lockstep with other runs (lockstep.py)
            return run_on_shared_loop(coro)
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the usual case: no loop runs in this thread
            return self._loop.run_until_complete(coro)
        # stepped from code that already runs an event loop in this thread (a Jupyter cell,
        # an async application): the phase's decisions run on this broker's loop in a helper
        # thread, in a copy of this thread's context (the active LLM run and its settings)
        context = contextvars.copy_context()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="broker") as pool:
            return pool.submit(context.run, self._loop.run_until_complete, coro).result()

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_loop"] = None
        return state
