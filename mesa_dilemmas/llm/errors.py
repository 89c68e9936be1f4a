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
    """A provider call failed for good (after our retries); the decision falls back.

    ``status``: the HTTP status when there was one; ``malformed_request``: the server
    rejected the request itself (400/422, or a 500 whose body is a validation error),
    which no retry fixes -- the client stops the run after a few identical ones."""

    def __init__(
        self, message: str, status: int | None = None, malformed_request: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.malformed_request = malformed_request

    def __reduce__(self) -> tuple:  # picklable across batch workers
        return (type(self), (str(self), self.status, self.malformed_request))


class TransientCallError(RuntimeError):
    """A provider call failed in a way worth retrying (429, 5xx, timeouts, connection errors,
    malformed bodies); ``retry_after`` is the server's requested wait in seconds, when it gave
    one; ``status`` the HTTP status, when there was one; ``unreachable``: no connection at all."""

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        status: int | None = None,
        unreachable: bool = False,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status
        self.unreachable = unreachable


class ProviderRejected(RuntimeError):
    """The provider refuses the run in a way no retry and no fallback should hide: a rejected
    key (401/403), an unknown model (404), an unreachable endpoint, requests rejected as
    malformed again and again, or too many fallbacks.  The run stops (exit 3), saving what it
    has.  Picklable, so it crosses from a batch worker to the parent."""

    #: whether ``--resume`` after the cause is fixed continues the run (the runner says so)
    resumable = False

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self) -> tuple:
        return (type(self), (str(self), self.status))


class ProviderFailed(ProviderRejected):
    """A call still failed after its transport retries (429, 5xx, timeouts).  Its decision
    must not silently become the rule's answer, so the run stops (exit 3) -- resumably:
    ``--resume DIR`` pays nothing twice and asks again what failed.  With ``[llm]
    on_provider_error = "wait"`` the client keeps backing off instead of raising it."""

    resumable = True


class ContextOverflow(ProviderRejected):
    """A prompt (or a corrective re-ask) does not fit the model's context window, found by
    counting its tokens before the call: nothing was generated.  A run stops on it (exit 3),
    like any :class:`ProviderRejected`; the message names the decision, the token counts and
    the setting that fixes it.  ``tokens``: the prompt's tokens plus ``max_tokens``;
    ``window``: the context window it had to fit."""

    def __init__(self, message: str, tokens: int | None = None, window: int | None = None) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.window = window

    def __reduce__(self) -> tuple:
        return (type(self), (str(self), self.tokens, self.window))
