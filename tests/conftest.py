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
