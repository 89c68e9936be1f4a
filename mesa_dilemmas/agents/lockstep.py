"""Lockstep: several models played side by side, their asynchronous decisions on one event loop.

A model's :class:`~mesa_dilemmas.agents.broker.DecisionBroker` normally answers a phase's
asynchronous decisions (language models) on an event loop of its own.  :func:`run_in_lockstep`
plays several runs at once, each in a thread of its own, and every broker in those threads
sends its decisions to one shared event loop instead.  The runs then advance together: the
calls that the same phase of every run makes reach the same clients at the same moment, so a
client in batch mode (``[llm] batch``) sends them as one batch job instead of one job per run.

Each run keeps its own model, random generators and answers: running in lockstep changes
when calls are made, never what a run does.  Each run's thread runs in a copy of the caller's
:mod:`contextvars` context (a new thread starts with an empty one), so the runs see what the
caller set there -- the active LLM run of :mod:`mesa_dilemmas.llm.session` among others.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextvars import ContextVar
from typing import Any

_LOOP: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar(
    "mesa_dilemmas_lockstep_loop", default=None
)


def shared_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop the runs of this thread's lockstep share (None outside one)."""
    return _LOOP.get()


def run_on_shared_loop(coro: Any) -> Any:
    """Run ``coro`` on the shared loop and wait for its result (from a run's thread)."""
    loop = _LOOP.get()
    if loop is None:
        raise RuntimeError("run_on_shared_loop: not inside run_in_lockstep")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


def run_in_lockstep[T](tasks: Sequence[Callable[[], T]], max_threads: int | None = None) -> list[T]:
    """Each task (a whole run) in a thread of its own, all asynchronous decisions on one event
    loop; the results in task order.  The first task to fail stops the tasks not started yet
    and its error is raised once the running ones have ended.  Each task runs in a copy of the
    caller's context (its context variables: the active LLM run, ...)."""
    if not tasks:
        return []
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="lockstep-loop", daemon=True)
    thread.start()

    def in_lockstep(task: Callable[[], T]) -> Callable[[], T]:
        def run() -> T:
            token = _LOOP.set(loop)
            try:
                return task()
            finally:
                _LOOP.reset(token)

        return run

    workers = max(1, min(len(tasks), max_threads or len(tasks)))
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lockstep-run") as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, in_lockstep(task)) for task in tasks
            ]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                for f in futures:
                    f.cancel()
                wait(futures)
                raise failed[0].exception()  # type: ignore[misc]
            return [f.result() for f in futures]
    finally:
        try:
            asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            if not loop.is_running():
                loop.close()


async def _cancel_all() -> None:
    """Cancel what is left on the loop (a batch collector's timer task, a poll)."""
    me = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not me]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)
