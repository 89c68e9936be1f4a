"""LLM backends and the machinery around calls (concurrency, caching, replay, accounting).

Its place in the design: an LLM policy is a ``mesa_dilemmas.agents.Policy`` with
``is_async = True`` whose ``adecide`` renders a prompt for the decision's kind,
calls a provider and parses the answer against the decision's spec.  The games
do not change when it arrives.

The parts the rest of the project uses:

- :func:`make_policy` -- ``make_policy("openai:gpt-4o")`` and friends (games call it);
- :func:`preflight` -- check keys, packages and model files before a run;
- :mod:`~mesa_dilemmas.llm.session` -- ``start_run`` / ``finish_run`` around a run, and
  ``with session.use(path):`` where its work continues in another process (the path of
  the run's session file travels with the work; no environment variable);
- :class:`LLMSettings` -- the scenario's ``[llm]`` table;
- :class:`LLMConfigError`, :class:`BudgetExceeded`, :class:`ReplayMiss`;
- :func:`register_templates` -- prompt templates per decision kind, each with its frozen
  wordings (``[llm] prompt_variant``; :func:`variant_system` gives a game's system text in one,
  :class:`VariantError` names a template that lacks it; see ``docs/prompt_variants.md``).

See ``docs/llm.md``.
"""

from __future__ import annotations

from typing import Any

from mesa_dilemmas.llm import session
from mesa_dilemmas.llm.checks import bundled_model_path, check_spec, preflight, resolve
from mesa_dilemmas.llm.errors import (
    BudgetExceeded,
    CallFailed,
    ContextOverflow,
    LLMConfigError,
    ProviderFailed,
    ProviderRejected,
    ReplayMiss,
)
from mesa_dilemmas.llm.policy import LLMPolicy
from mesa_dilemmas.llm.prompts import (
    Template,
    VariantError,
    register_template,
    register_templates,
    variant_system,
)
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import parse_spec

__all__ = [
    "BudgetExceeded",
    "CallFailed",
    "ContextOverflow",
    "LLMConfigError",
    "LLMPolicy",
    "LLMSettings",
    "ProviderFailed",
    "ProviderRejected",
    "ReplayMiss",
    "Template",
    "VariantError",
    "bundled_model_path",
    "make_policy",
    "parse_spec",
    "preflight",
    "register_template",
    "register_templates",
    "session",
    "variant_system",
]


def make_policy(
    spec: str = "local",
    *,
    settings: LLMSettings | dict[str, Any] | None = None,
    model: str | None = None,
    run_seed: int | None = None,
    check: bool = True,
    **overrides: Any,
) -> LLMPolicy:
    """An LLM policy for ``spec`` ("local", "openai:gpt-4o", "anthropic:claude-...", ...).

    Settings come from, in order: ``settings``, the active run session (what the
    scenario's ``[llm]`` table said), the defaults; keyword ``overrides`` replace
    single fields (``temperature=0.2``, ``answer_mode="native"``, ``prompt_variant=2``: the
    policy renders every prompt in that wording and the run record names it per call).  ``model``
    completes a bare provider (``make_policy("anthropic", model="claude-...")``:
    the scenario's ``provider = ...`` / ``model = ...`` pair).  ``run_seed`` is
    for a narrator policy, which has no model to read the seed from.  With
    ``check`` the spec is checked at once (key, package, model file) and an
    :class:`LLMConfigError` raised; nothing is loaded or called until the first
    decision, so the policy is cheap to build in every batch worker.
    """
    if isinstance(settings, dict):
        settings = LLMSettings.from_table(settings)
    base = settings or session.current_settings() or LLMSettings()
    if overrides:
        base = LLMSettings.from_table({**base.model_dump(exclude_unset=False), **overrides})
    text = spec.strip()
    if model:
        if ":" in text.removeprefix("replay:"):
            raise LLMConfigError(
                f"llm spec {spec!r} already names a model; got model={model!r} too"
            )
        text = f"{text}:{model}"
    resolved = resolve(text, base)
    if check and not base.dry_run:  # a dry run calls nothing: no key or model file needed
        check_spec(resolved, base)
    return LLMPolicy(resolved, base, run_seed=run_seed)
