"""Has untrusted code patched what the trusted code relies on?  A cheap identity check per round.

At the worker's start (before any strategy code is loaded) :func:`watch`
records, for a fixed list of namespaces -- builtins, ``random``, numpy's top
level, and those its caller adds (a game engine's and its strategy base's modules
and classes) -- the object bound to every name.  :func:`changed` then says which name, if any, is now
bound to something else; :func:`restore` puts them back so the worker can still
report before the run replaces it.  Names added later (numpy's lazy
submodules) are not watched, so the engine's own lazy imports never trip it.
It sees rebinding and monkey-patching, not writes through ctypes or into
objects' internals (docs/sandbox.md).
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import numpy as np

# (label, owner, namespace, name, object)
Watched = list[tuple[str, Any, Any, str, Any]]
_MISSING = object()


def watch(extra: Iterable[ModuleType | type] = ()) -> Watched:
    """A snapshot of the watched bindings: builtins, ``random``, numpy and ``extra`` (the
    modules and classes of the trusted code, in the order they are checked)."""
    owners: list[Any] = [builtins, random, np, np.random, *extra]
    out: Watched = []
    for owner in owners:
        ns = owner.__dict__
        label = getattr(owner, "__name__", repr(owner))
        out.extend((label, owner, ns, key, value) for key, value in list(ns.items()))
    return out


def changed(watched: Watched) -> str | None:
    """The first watched name now bound to another object (``"numpy.sum"``), or None."""
    for label, _owner, ns, key, value in watched:
        if ns.get(key, _MISSING) is not value:
            return f"{label}.{key}"
    return None


def restore(watched: Watched) -> None:
    """Put every watched binding back."""
    for _label, owner, ns, key, value in watched:
        if ns.get(key, _MISSING) is not value:
            if isinstance(owner, type):
                type.__setattr__(owner, key, value)
            else:
                ns[key] = value
