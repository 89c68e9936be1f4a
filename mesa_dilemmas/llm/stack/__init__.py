"""The wrapper stack: one :class:`~.language_model.LanguageModel` per concern around a provider's
backend, composed by :mod:`mesa_dilemmas.llm.client`, from the outside in: the run's record
(``recording``), the shared cache (``caching``), replay (``replay``), fitting a self-hosted
server (``server_fit``), the run budget (``budgeting``), pricing (``pricing``), concurrency and
rate limits (``rate_limiting``), and the backend call with retries (``retries``) or through a
batch API (``batching``, whose jobs ``batch_jobs`` collects).

What the wrappers keep lives elsewhere: the stores on disk in :mod:`mesa_dilemmas.llm.stores`,
prices, budgets and limits in :mod:`mesa_dilemmas.llm.accounting`.
"""
