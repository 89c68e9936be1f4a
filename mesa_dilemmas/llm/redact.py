"""Secrets never stored or printed: API keys are replaced by ``[redacted]``.

A secret is the value of any environment variable an LLM backend reads its key
from (the SDKs' usual names and any ``api_key_env`` configured) plus every key a
backend was built with in this process (:func:`register`).  Hidden are the key,
any run of at least 8 of its first characters, and its base64 forms (a server
echoing a prefix or an ``Authorization`` header in a 401 body).

* :func:`redact` -- one text: every error text, request and response before it
  reaches the run record, the cache or the terminal;
* :func:`redact_value` -- every string in a JSON-like value (a summary; the
  sandbox applies it to everything a worker sends back);
* :func:`redact_frame` -- every text cell of a table, before it is written.

The implementation is :mod:`mesa_dilemmas.agents.strategies.sandbox.redaction`
(the lowest layer, so that the sandbox uses the same rules and the same
registry of keys); this module is the LLM layer's name for it.
"""

from __future__ import annotations

from mesa_dilemmas.agents.strategies.sandbox.redaction import (
    _KNOWN,
    _SECRET_NAME,
    KEY_ENV_NAMES,
    MARK,
    MIN_LENGTH,
    redact,
    redact_frame,
    redact_value,
    register,
    secrets,
    variants,
)

__all__ = [
    "KEY_ENV_NAMES",
    "MARK",
    "MIN_LENGTH",
    "_KNOWN",
    "_SECRET_NAME",
    "redact",
    "redact_frame",
    "redact_value",
    "register",
    "secrets",
    "variants",
]
