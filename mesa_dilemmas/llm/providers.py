"""Providers as records: one :class:`Provider` per backend says everything the LLM layer needs
to know about it -- the backend class, its SDK, default model, key variables, where its API reads
the answer schema, batch and caching support, and (for a provider from another package) its
prices.

The built-in providers are the records below; an installed package adds one through the entry
point group ``mesa_dilemmas.providers`` (an entry point naming a :class:`Provider`), with no
edit of ours::

    [project.entry-points."mesa_dilemmas.providers"]
    mistral = "my_package.provider:MISTRAL"

Everything that used to be a list of provider names (spec parsing, the key check, the SDK
check, which calls are paid, the shared-schema and schema-as-text rules, the settings' per-
provider tables, the dashboard's provider choice) reads these records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_dilemmas.llm.backends.base import Backend

#: the entry point group a package adds a provider through
GROUP = "mesa_dilemmas.providers"


@dataclass(frozen=True)
class Provider:
    """One provider of language models, as the LLM layer sees it."""

    #: the spec prefix (``name:model``); lower-case letters
    name: str
    #: the backend class, ``"package.module:Class"`` (a :class:`~.backends.base.Backend`
    #: subclass), imported only when a model of this provider is used
    backend: str
    #: the model a bare ``name`` spec takes ("" : the spec must name one)
    default_model: str = ""
    #: the environment variables its SDK reads for the key, in the order it reads them (none:
    #: no key is ever asked for)
    key_envs: tuple[str, ...] = ()
    #: ``(module, pip package)``: the SDK a run checks for before it starts (None: nothing)
    sdk: tuple[str, str] | None = None
    #: its own endpoint is billed per token (a server named by URL never is)
    paid: bool = True
    #: a spec may name a server: ``name:model@http://...``
    takes_url: bool = True
    #: its own API reads the answer schema before the messages (a schema that differs by seat
    #: would make every prompt start differently: prompts send one phase-wide schema)
    schema_first: bool = False
    #: its own API shows the model the answer schema it is sent (the instructions need not
    #: repeat it as text)
    shows_schema: bool = False
    #: its backend has a batch API (``submit_batch``); what ``[llm] batch = true`` uses
    batch: bool = False
    #: how it caches repeated prompt prefixes, in a few words (documentation)
    caching: str = ""
    #: model-name prefix -> price fields (USD per million tokens: ``input``, ``output``,
    #: optionally ``cached_input``, ``cache_write``, ``batch_input``, ``batch_output``), for a
    #: provider whose prices are not in the bundled ``prices.toml``
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def backend_class(self) -> type[Backend]:
        module, _, attr = self.backend.partition(":")
        return getattr(import_module(module), attr)


OPENAI = Provider(
    "openai",
    "mesa_dilemmas.llm.backends.openai:OpenAIBackend",
    default_model="gpt-4o-mini",
    key_envs=("OPENAI_API_KEY",),
    sdk=("openai", "openai"),
    schema_first=True,
    shows_schema=True,
    batch=True,
    caching="automatic, prefixes of 1,024 tokens and more",
)
ANTHROPIC = Provider(
    "anthropic",
    "mesa_dilemmas.llm.backends.anthropic:AnthropicBackend",
    default_model="claude-3-5-haiku-latest",
    key_envs=("ANTHROPIC_API_KEY",),
    sdk=("anthropic", "anthropic"),
    schema_first=True,
    shows_schema=True,
    batch=True,
    caching="cache_control breakpoints the backend sets",
)
GEMINI = Provider(
    "gemini",
    "mesa_dilemmas.llm.backends.gemini:GeminiBackend",
    default_model="gemini-2.0-flash",
    key_envs=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    sdk=("google.genai", "google-genai"),
    shows_schema=True,
    batch=True,
    caching="implicit, on the newer models",
)
LOCAL = Provider(
    "local",
    "mesa_dilemmas.llm.backends.local:LocalBackend",
    sdk=("llama_cpp", "llama-cpp-python"),
    paid=False,
    takes_url=False,
    caching="llama.cpp's own prefix cache",
)
#: answers only from recorded calls (``replay:<spec>``); never a provider of its own
REPLAY = Provider(
    "replay",
    "mesa_dilemmas.llm.backends.replay:ReplayBackend",
    paid=False,
    takes_url=False,
)
BUILT_IN: dict[str, Provider] = {p.name: p for p in (OPENAI, ANTHROPIC, GEMINI, LOCAL, REPLAY)}


def _registered() -> list[EntryPoint]:
    """The entry points of :data:`GROUP` (a test may add one at test time)."""
    return list(entry_points(group=GROUP))


@cache
def providers() -> dict[str, Provider]:
    """Every provider by name: the built-in records, then those installed packages add.

    A registered record that is not a :class:`Provider`, or whose name is not its entry point's
    or is taken, is an error that names the entry point (one line)."""
    found = dict(BUILT_IN)
    for ep in _registered():
        record = ep.load()
        if not isinstance(record, Provider):
            raise TypeError(f"{GROUP} entry point {ep.name!r} ({ep.value}) is not a Provider")
        if record.name != ep.name or not record.name.isalpha() or not record.name.islower():
            raise ValueError(
                f"{GROUP} entry point {ep.name!r}: its Provider is named {record.name!r} "
                "(the entry point's name, lower-case letters)"
            )
        if record.name in found:
            raise ValueError(f"{GROUP} entry point {ep.name!r}: provider name already taken")
        found[record.name] = record
    return found


def provider(name: str) -> Provider | None:
    """The record of ``name`` (None: no such provider)."""
    return providers().get(name)


def names(*, real: bool = True) -> tuple[str, ...]:
    """The provider names a spec may start with; ``real``: without ``replay``."""
    return tuple(n for n in providers() if not (real and n == "replay"))


def remote(name: str) -> bool:
    """Whether ``name`` is a remote provider: a key, an SDK and (on its own endpoint) a bill."""
    record = provider(name)
    return record is not None and record.paid


def extra_prices() -> dict[str, dict[str, Any]]:
    """``provider -> {model prefix: price fields}`` of the providers that bring their own."""
    return {
        p.name: {k: dict(v) for k, v in p.prices.items()} for p in providers().values() if p.prices
    }


__all__ = [
    "BUILT_IN",
    "GROUP",
    "Provider",
    "extra_prices",
    "names",
    "provider",
    "providers",
    "remote",
]
