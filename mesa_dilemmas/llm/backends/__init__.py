"""Backends: one class per provider, all turning a :class:`ChatRequest` into a :class:`ChatResponse`.

A backend only speaks its provider's API (through the official SDK, whose own
retry and timeout machinery handles 429 ``Retry-After``, 5xx and timeouts
where it can).  Retries, throttling, budgets, caching and recording are wrappers
around it, one file each, composed by :mod:`mesa_dilemmas.llm.client` (see
:mod:`mesa_dilemmas.llm.language_model`), so they are the same for every provider.

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
    """The backend object for a parsed spec (imports the SDK it needs)."""
    if spec.provider == "openai":
        from mesa_dilemmas.llm.backends.openai import OpenAIBackend

        return OpenAIBackend(spec, settings)
    if spec.provider == "anthropic":
        from mesa_dilemmas.llm.backends.anthropic import AnthropicBackend

        return AnthropicBackend(spec, settings)
    if spec.provider == "gemini":
        from mesa_dilemmas.llm.backends.gemini import GeminiBackend

        return GeminiBackend(spec, settings)
    if spec.provider == "local":
        from mesa_dilemmas.llm.backends.local import LocalBackend

        return LocalBackend(spec, settings)
    if spec.provider == "replay":
        from mesa_dilemmas.llm.backends.replay import ReplayBackend

        return ReplayBackend(spec, settings)
    raise ValueError(f"no backend for provider {spec.provider!r}")  # parse_spec prevents this
