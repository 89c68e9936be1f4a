"""Project-wide test set-up.

On CI the embedded local model must be installed: a test that would otherwise *skip* for lack
of the ``local`` extra fails the run instead, so a broken install step cannot pass as green.
"""

from __future__ import annotations

import importlib.util
import os

import pytest
from dashboard_fixtures import dashboard_url_fixture  # noqa: F401 - one dashboard per session

# Ray starts its workers at low priority (nice 15): beside the other test workers its tasks got
# almost no CPU (a four-villager run on Ray: 286 s beside two busy processes, 17 s with this).
# Every Ray instance a test starts, in this process or a child, runs its workers at normal
# priority; what the tests check (results, limits, retries) does not depend on it.
os.environ.setdefault("RAY_worker_niceness", "0")


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("CI") and importlib.util.find_spec("llama_cpp") is None:
        raise pytest.UsageError(
            "CI=true but llama-cpp-python is missing: install the 'local' extra (scripts/test.sh does)"
        )


#: the test files that take longest, longest first (per-file totals of a ``--durations=0`` run
#: with ``--junitxml``: the documentation build, the embedded model's end-to-end runs, Ray),
#: collected first so that the workers, which take whole files in collection order
#: (``scripts/test.sh`` turns off xdist's own reordering by test count), start them at once
#: instead of ending on them; speed only, no test depends on the order
LONGEST_FIRST = (
    "test_docs_site.py",
    "test_strategy_writing.py",
    "test_fishery_llm_e2e.py",
    "test_llm_batch.py",
    "test_llm_local.py",
    "test_port_of_mars_llm_e2e.py",
    "test_execution_ray.py",
    "test_llm_failures.py",
    "test_llm_estimate.py",
    "test_reproduce.py",
    "test_sandbox_protocol.py",
    "test_llm_e2e.py",
    "test_persona_check.py",
    "test_sandbox_escape.py",
    "test_llm_wire.py",
    "test_sandbox_tampering.py",
    "test_sandbox_time.py",
    "test_sandbox.py",
    "test_say_vs_do.py",
    "test_figures_print.py",
    "test_variant_analysis.py",
    "test_published_sets.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests in ``*_browser.py`` files drive a real Chromium against a live dashboard and wait
    for the page's own clock (Mesa's Play loop): they carry the ``browser`` mark, and
    ``scripts/test.sh`` runs them in a pass of their own, one at a time, after the rest ran on
    three workers.  The longest files come first (:data:`LONGEST_FIRST`)."""
    for item in items:
        if item.path.name.endswith("_browser.py"):
            item.add_marker(pytest.mark.browser)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept
