"""The exceptions of the LLM layer, each meaning one thing the caller can act on."""

from __future__ import annotations


class LLMConfigError(ValueError):
    """A run that cannot start: missing API key, model file or package. One line, says the fix."""


class BudgetExceeded(RuntimeError):
    """A run budget (calls, tokens, cost) is reached; the runner saves what it has and stops.

    Picklable (only a message), so it crosses from a batch worker to the parent."""


class ReplayMiss(LookupError):
    """The replay backend was asked for a call that was never recorded; names the call."""


class CallFailed(RuntimeError):
    """A provider call failed for good (after the SDK's and our own retries)."""


class TransientCallError(RuntimeError):
    """A provider call failed in a way worth retrying (malformed body, 429/5xx not retried by
    the SDK); ``retry_after`` is the server's requested wait in seconds, when it gave one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
