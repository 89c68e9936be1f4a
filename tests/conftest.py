"""Project-wide test set-up.

On CI the embedded local model must be installed: a test that would otherwise *skip* for lack
of the ``local`` extra fails the run instead, so a broken install step cannot pass as green.
"""

from __future__ import annotations

import importlib.util
import os

import pytest


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("CI") and importlib.util.find_spec("llama_cpp") is None:
        raise pytest.UsageError(
            "CI=true but llama-cpp-python is missing: install the 'local' extra (scripts/test.sh does)"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests in ``*_browser.py`` files drive a real Chromium against a live dashboard and wait
    for the page's own clock (Mesa's Play loop): they carry the ``browser`` mark, and
    ``scripts/test.sh`` runs them in a pass of their own, one at a time, after the rest ran on
    two workers."""
    for item in items:
        if item.path.name.endswith("_browser.py"):
            item.add_marker(pytest.mark.browser)
