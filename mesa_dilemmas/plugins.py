"""Loading what other packages (and this one) plug in: ``"package.module:attribute"`` paths.

A module of its own, importing nothing of the package, so the registry and the command line
can name plug-ins without importing Mesa or any game first."""

from __future__ import annotations

from importlib import import_module
from typing import Any


def load_object(path: str) -> Any:
    """Import ``"package.module:attribute"`` (absolute module names only)."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr or module.startswith("."):
        raise ValueError(f"{path!r}: expected 'package.module:attribute'")
    obj: Any = import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
