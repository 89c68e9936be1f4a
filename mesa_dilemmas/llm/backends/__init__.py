"""Backends: one class per provider, all turning a :class:`ChatRequest` into a :class:`ChatResponse`.

A backend only speaks its provider's API (through the official SDK, whose own
retry and timeout machinery handles 429 ``Retry-After``, 5xx and timeouts
where it can).  Retries, throttling, budgets, caching and recording are wrappers
around it, one file each, composed by :mod:`mesa_dilemmas.llm.client` (see
:mod:`mesa_dilemmas.llm.stack.language_model`), so they are the same for every provider.

SDK imports happen in the backend modules only, so ``import mesa_dilemmas.llm``
stays cheap and a missing optional package (``llama-cpp-python``) is reported
by :func:`mesa_dilemmas.llm.preflight`, not at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mesa_dilemmas.llm.backends.base import (
    Backend,
    PerLoop,
    RemoteBackend,
    retry_after_seconds,
    status_error,
    transport_errors,
)

if TYPE_CHECKING:
    from mesa_dilemmas.llm.settings import LLMSettings
    from mesa_dilemmas.llm.specs import ModelSpec

__all__ = [
    "Backend",
    "PerLoop",
    "RemoteBackend",
    "create_backend",
    "retry_after_seconds",
    "status_error",
    "transport_errors",
]


def create_backend(spec: ModelSpec, settings: LLMSettings) -> Backend:
    """The backend object for a parsed spec: its provider's record names the class (imported
    here, with the SDK it needs)."""
    from mesa_dilemmas.llm.providers import provider

    record = provider(spec.provider)
    if record is None:  # parse_spec prevents this
        raise ValueError(f"no backend for provider {spec.provider!r}")
    return record.backend_class()(spec, settings)
