"""Secrets never stored or printed: API keys are replaced by ``[redacted]``.

A secret is the value of any environment variable an LLM backend reads its key
from (the SDKs' usual names and any ``api_key_env`` configured) plus every key a
backend was built with in this process.  Servers sometimes echo the key in an
error body; :func:`redact` is applied to every error text, request and response
before it reaches the run record, the cache or the terminal.
"""

from __future__ import annotations

import os
import re

#: environment variables that hold provider keys by default
KEY_ENV_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
#: any other variable whose name says it holds a key, token or secret
_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET)$", re.IGNORECASE)
#: shorter values are not treated as secrets (they would redact ordinary words)
MIN_LENGTH = 8
MARK = "[redacted]"

_KNOWN: set[str] = set()


def register(secret: str | None) -> None:
    """Remember a secret this process uses (a backend's API key)."""
    if secret and len(secret) >= MIN_LENGTH:
        _KNOWN.add(secret)


def register_env(name: str | None) -> None:
    if name:
        register(os.environ.get(name))


#: the names of the environment's secret-holding variables, and the set of names they were
#: found among (scanning every variable's name is the costly part, done when names change)
_NAMES: tuple[frozenset[str], tuple[str, ...]] = (frozenset(), ())


def _secret_names() -> tuple[str, ...]:
    global _NAMES
    # CPython keeps the encoded names in os.environ._data: comparing those skips decoding
    # every name on every call
    names = frozenset(getattr(os.environ, "_data", os.environ))
    if names != _NAMES[0]:
        found = tuple(n for n in os.environ if n in KEY_ENV_NAMES or _SECRET_NAME.search(n))
        _NAMES = (names, found)
    return _NAMES[1]


def secrets() -> list[str]:
    """Every secret to hide: the keys backends registered, and the current values of the
    environment variables named like keys (read afresh on every call)."""
    found = set(_KNOWN)
    for name in _secret_names():
        value = os.environ.get(name)
        if value is not None and len(value) >= MIN_LENGTH:
            found.add(value)
    return sorted(found, key=len, reverse=True)  # longest first: a key containing another


def redact(text: str | None) -> str | None:
    """``text`` with every known secret replaced by ``[redacted]``."""
    if not text:
        return text
    for secret in secrets():
        if secret in text:
            text = text.replace(secret, MARK)
    return text
