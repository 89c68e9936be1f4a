"""Execution settings and the Ray run's LLM gate are carried by the context, not by a module
global or an environment variable: two runs in two threads each see their own, and a task
carries the gate it was sent with into the worker (``_call``, what the process pool and Ray
run)."""

from __future__ import annotations

import os
import threading

from mesa_dilemmas.llm.accounting.cluster import gate_name, use_gate
from mesa_dilemmas.scenarios import execution
from mesa_dilemmas.scenarios.execution import ExecutionSettings, _call, current


def _seen(_: object) -> tuple[str | None, str]:
    return gate_name(), current().engine


def test_two_runs_in_two_threads_each_see_their_own_settings_and_gate() -> None:
    seen: dict[str, tuple[str | None, str]] = {}
    ready = threading.Barrier(2)

    def run(name: str, engine: str) -> None:
        with execution.use(ExecutionSettings(engine=engine)), use_gate(f"gate-{name}"):
            ready.wait(timeout=10)  # both runs are inside their settings at once
            seen[name] = _seen(None)

    threads = [
        threading.Thread(target=run, args=("a", "mesa")),
        threading.Thread(target=run, args=("b", "vector")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert seen == {"a": ("gate-a", "mesa"), "b": ("gate-b", "vector")}
    assert _seen(None) == (None, "auto")  # nothing leaked into this context
    assert not [k for k in os.environ if "GATE" in k]


def test_a_task_runs_inside_the_gate_it_was_sent_with() -> None:
    with use_gate("driver"):
        assert _call(_seen, None, None, "sent-with-the-task")[0] == "sent-with-the-task"
        assert gate_name() == "driver"
    assert _call(_seen, None)[0] is None
