"""Secrets never reach the run's outputs: API keys are replaced by ``[redacted]``.

A shared layer below every other: the LLM layer hides keys with it in every error text,
request and response before it reaches the run record, the cache or the terminal, and the
sandbox's pool (which may not import the LLM layer) in every text a worker sends back -- the
same rules and the same registry of keys (:func:`register`: every key a backend was built
with).

A secret is the value of any environment variable an LLM backend reads its key
from (the SDKs' usual names and any ``api_key_env`` configured) plus every key a
backend was built with in this process.  Servers sometimes echo the key in an
error body -- whole, its first characters, or base64-encoded -- and strategy
code may print it, so what is hidden is

* the key itself and any run of at least :data:`MIN_LENGTH` of its first
  characters (``sk-proj-abcd1234...`` echoed as ``sk-proj-abcd1234``);
* its base64 (standard and URL-safe alphabets, at each of the three byte
  alignments it can have inside a longer encoded text, such as a Basic
  ``Authorization`` header), and any run of at least :data:`MIN_LENGTH` of
  its first characters.

:func:`redact` does this to one text; :func:`redact_value` to every string in
a JSON-like value (a summary, a sandbox worker's answer); :func:`redact_frame`
to every text cell of a table before it is written.
"""

from __future__ import annotations

import base64
import os
import re
from functools import lru_cache
from typing import Any

#: environment variables that hold provider keys by default
KEY_ENV_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
#: any other variable whose name says it holds a key, token or secret
SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET)$", re.IGNORECASE)
#: shorter values are not treated as secrets, and shorter prefixes are not hidden (they would
#: redact ordinary words)
MIN_LENGTH = 8
MARK = "[redacted]"

KNOWN: set[str] = set()


def register(secret: str | None) -> None:
    """Remember a secret this process uses (a backend's API key)."""
    if secret and len(secret) >= MIN_LENGTH:
        KNOWN.add(secret)


#: the names of the environment's secret-holding variables, and the set of names they were
#: found among (scanning every variable's name is the costly part, done when names change)
_NAMES: tuple[frozenset[str], tuple[str, ...]] = (frozenset(), ())


def _secret_names() -> tuple[str, ...]:
    global _NAMES
    # CPython keeps the encoded names in os.environ._data: comparing those skips decoding
    # every name on every call
    names = frozenset(getattr(os.environ, "_data", os.environ))
    if names != _NAMES[0]:
        found = tuple(n for n in os.environ if n in KEY_ENV_NAMES or SECRET_NAME.search(n))
        _NAMES = (names, found)
    return _NAMES[1]


def secrets() -> list[str]:
    """Every secret to hide: the keys backends registered, and the current values of the
    environment variables named like keys (read afresh on every call)."""
    found = set(KNOWN)
    for name in _secret_names():
        value = os.environ.get(name)
        if value is not None and len(value) >= MIN_LENGTH:
            found.add(value)
    return sorted(found, key=len, reverse=True)  # longest first: a key containing another


def variants(secret: str) -> list[str]:
    """The forms of ``secret`` whose prefixes (of :data:`MIN_LENGTH` or more) are hidden."""
    raw = secret.encode()
    out = {secret}
    for shift in range(3):  # the key's bytes at each alignment inside a longer base64 text
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        whole = (shift + len(raw)) // 3 * 4  # characters that depend on full 3-byte groups only
        core = encoded[4 if shift else 0 : whole]
        if shift == 0:
            core = encoded.rstrip("=")  # the key alone: its own padding is part of the echo
        for text in (core, core.replace("+", "-").replace("/", "_")):
            if len(text) >= MIN_LENGTH:
                out.add(text)
    return sorted(out, key=len, reverse=True)


@lru_cache(maxsize=16)
def _matcher(found: tuple[str, ...]) -> tuple[re.Pattern[str], dict[str, list[str]]]:
    """A pattern for the first MIN_LENGTH characters of every variant, and the variants by head."""
    heads: dict[str, list[str]] = {}
    for secret in found:
        for form in variants(secret):
            heads.setdefault(form[:MIN_LENGTH], []).append(form)
    pattern = re.compile("|".join(re.escape(h) for h in sorted(heads, key=len, reverse=True)))
    return pattern, heads


def _common(text: str, start: int, form: str) -> int:
    """How many characters of ``form`` ``text`` repeats from ``start``."""
    n = 0
    for a, b in zip(text[start : start + len(form)], form, strict=False):
        if a != b:
            break
        n += 1
    return n


def redact(text: str | None) -> str | None:
    """``text`` with every known secret, each run of its first characters (at least
    :data:`MIN_LENGTH`) and its base64 forms replaced by ``[redacted]``."""
    if not text:
        return text
    found = secrets()
    if not found:
        return text
    pattern, heads = _matcher(tuple(found))
    match = pattern.search(text)
    if match is None:
        return text
    parts = []
    pos = 0
    while match is not None:
        start = match.start()
        end = start + max(_common(text, start, form) for form in heads[match.group()])
        parts += [text[pos:start], MARK]
        pos = end
        match = pattern.search(text, pos)
    parts.append(text[pos:])
    return "".join(parts)


def redact_value(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, strings, numbers) with every string redacted,
    dictionary keys included; other objects are returned as they are."""
    if not secrets():
        return value
    return _redact_tree(value)


def _redact_tree(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {_redact_tree(k): _redact_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redact_tree(v) for v in value)
    return value


def redact_frame(frame: Any) -> Any:
    """A pandas DataFrame with every text cell (and text inside list/dict cells, and the
    column names) redacted; the frame itself when there is nothing to hide (no copy)."""
    if not secrets():
        return frame
    columns = [
        c
        for c in frame.columns
        if frame[c].dtype == object or str(frame[c].dtype) in ("string", "str")
    ]
    renamed = {c: redact(c) for c in frame.columns if isinstance(c, str) and redact(c) != c}
    if not columns and not renamed:
        return frame
    out = frame.copy()
    for col in columns:
        out[col] = out[col].map(_redact_tree)
    return out.rename(columns=renamed) if renamed else out


_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(text: str) -> str:
    """``text`` with lone surrogates (which no file or terminal can encode) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def safe_value(value: Any) -> Any:
    """``value`` (JSON-like) with :func:`safe_text` applied to every string, keys included."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_value(k): safe_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(safe_value(v) for v in value)
    return value
