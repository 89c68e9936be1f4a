"""The scenario's ``[llm]`` table: every knob of the LLM layer, each with a default.

An empty table is valid.  Unknown keys are errors (``extra="forbid"``), so a
typo in a scenario fails before a single call is paid for.  Example::

    [llm]
    answer_mode = "native"          # or "tags" (reasoning, then <answer>...</answer>)
    temperature = 0.7
    max_tokens = 400
    [llm.budget]
    max_cost_usd = 2.50
    [llm.providers.openai]
    base_url = "http://my-vllm:8000/v1"
    max_concurrency = 32
    requests_per_minute = 500
    [llm.prices."openai:my-finetune"]
    input = 0.30                    # USD per million input tokens
    output = 1.20
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from mesa_dilemmas.llm.errors import LLMConfigError

#: environment variable that overrides the cache directory (tests point it at a tmp dir)
CACHE_DIR_ENV = "MESA_DILEMMAS_CACHE_DIR"

#: default ``max_fallback_rate`` of the providers' own (paid) APIs
PAID_FALLBACK_RATE = 0.05
#: default ``max_fallback_rate`` of the embedded model and self-hosted servers. The bundled
#: SmolLM2-135M is a plumbing model: a few per cent of its answers fall back in one bundled
#: game, about 30% in another where it overspends its budget (measured in docs/llm.md,
#: "Fallbacks"), so 0.5 lets the bundled scenarios run while still stopping a model that mostly
#: fails; every fallback is flagged in the data either way
SELF_HOSTED_FALLBACK_RATE = 0.5

#: ``reasoning = "auto"`` on the embedded model (``local``, any GGUF): off, by measurement --
#: SmolLM2-135M, asked for a short reasoning or not on a game's decisions, failed as often
#: either way and took 38% more CPU with it (the game's docs, "Reasoning on the embedded model")
LOCAL_REASONING = False

PositiveFloat = Annotated[float, Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderSettings(_Strict):
    """Per-provider connection and throttling.  ``None`` means the provider's default.

    ``max_concurrency`` applies per process; requests and tokens per minute are shared by
    every process on the machine that uses the same endpoint and key (``ratelimit.sqlite``
    beside the cache), so set them to your account's limits."""

    base_url: str | None = None
    #: name of the environment variable holding the key (default: the SDK's usual one)
    api_key_env: str | None = None
    #: calls in flight at once (default 16; the local model is always serialised)
    max_concurrency: Annotated[int, Field(ge=1, le=1024)] | None = None
    requests_per_minute: PositiveFloat | None = None
    tokens_per_minute: PositiveFloat | None = None
    timeout_s: PositiveFloat | None = None
    max_retries: Annotated[int, Field(ge=0, le=20)] | None = None
    #: openai only -- how a server takes a JSON schema in native mode: "json_schema" (OpenAI,
    #: vLLM, llama.cpp's llama-server, OpenRouter) or "json_object" (``{"type": "json_object",
    #: "schema": ...}``, as llama-cpp-python's server wants)
    schema_format: Literal["json_schema", "json_object"] = "json_schema"


class BudgetSettings(_Strict):
    """Per-run limits on provider calls (cache hits are free).  ``None``: unlimited.

    ``max_calls`` is exact (reserved before each call, across worker processes);
    tokens and cost are known only after a call, so they can be overshot by the
    calls already in flight when the limit is reached."""

    max_calls: Annotated[int, Field(ge=0)] | None = None
    max_tokens: Annotated[int, Field(ge=0)] | None = None
    max_cost_usd: Annotated[float, Field(ge=0)] | None = None


class PriceEntry(_Strict):
    """USD per million tokens: list prices, and where the provider has them, cached input
    (a prompt-cache read), cache writes (Anthropic) and the batch APIs' prices (None: half of
    the list price, as OpenAI, Anthropic and Gemini charge)."""

    input: Annotated[float, Field(ge=0)]
    output: Annotated[float, Field(ge=0)]
    cached_input: Annotated[float, Field(ge=0)] | None = None
    cache_write: Annotated[float, Field(ge=0)] | None = None
    batch_input: Annotated[float, Field(ge=0)] | None = None
    batch_output: Annotated[float, Field(ge=0)] | None = None


class LocalSettings(_Strict):
    """The embedded llama.cpp model (``local``)."""

    #: a GGUF file used by the bare spec ``local`` instead of the bundled SmolLM2-135M
    model_path: str | None = None
    #: the context window in tokens, or "auto": the smallest power of two (at least
    #: AUTO_MIN_CTX) that holds the longest prompt so far plus max_tokens and room for a
    #: corrective re-ask, capped at the model's trained context (8192 for SmolLM2); the
    #: window grows (the model is reloaded) when a later prompt needs more.  A prompt that
    #: does not fit stops the run with a ContextOverflow before anything is generated.
    n_ctx: Annotated[int, Field(ge=256, le=131072)] | Literal["auto"] = "auto"
    #: CPU threads for llama.cpp (default: half the cores, at most 4)
    n_threads: Annotated[int, Field(ge=1, le=256)] | None = None
    n_batch: Annotated[int, Field(ge=8, le=8192)] = 512


class LLMSettings(_Strict):
    """Everything the ``[llm]`` table can say.  All fields have defaults."""

    #: "tags": reasoning, then the answer between XML tags (paper 001, Appendix D);
    #: "native": the provider's structured output (JSON schema / tool use / response schema / grammar)
    answer_mode: Literal["tags", "native"] = "tags"
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    max_tokens: Annotated[int, Field(ge=1, le=65536)] = 512
    #: corrective re-asks after an invalid answer, before the decision's fallback is used
    answer_retries: Annotated[int, Field(ge=0, le=10)] = 2
    #: stop the run when more than this share of a model's decisions fall back to the rule
    #: (answers still unusable after the re-asks; counted per process, from the 10th decision
    #: on); 1 never stops.  Default (None): PAID_FALLBACK_RATE for the providers' own APIs,
    #: SELF_HOSTED_FALLBACK_RATE for the embedded model and self-hosted servers
    max_fallback_rate: Annotated[float, Field(ge=0, le=1)] | None = None
    #: a call that still fails after its transport retries (429, 5xx, timeouts): "stop" the
    #: run resumably (exit 3, ``--resume DIR`` continues it), or "wait": keep backing off and
    #: trying until the provider answers.  Never the rule's answer in the model's seat
    on_provider_error: Literal["stop", "wait"] = "stop"
    #: transport retries (429 honouring Retry-After, 5xx, timeouts, malformed bodies)
    max_retries: Annotated[int, Field(ge=0, le=20)] = 4
    #: seconds per HTTP attempt
    timeout_s: PositiveFloat = 60.0
    #: reasoning models of OpenAI (gpt-5*, o1/o3/o4*): how hard they think; sent as
    #: ``reasoning_effort`` (None: the provider's default).  Other models refuse it
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    #: Claude and Gemini thinking: a budget of thinking tokens (None: off for Claude, the
    #: model's default for Gemini; 0 turns Gemini 2.5 Flash's thinking off).  Claude with
    #: thinking takes no temperature/top_p and no forced tool, so it needs answer_mode "tags"
    thinking_budget: Annotated[int, Field(ge=0, le=128000)] | None = None
    #: native mode: ask for a short "reasoning" field before "answer": true, false, or "auto"
    #: (on for the providers' APIs and OpenAI-compatible servers, ``LOCAL_REASONING`` for the
    #: embedded model, see ``reasoning_for``).  Tags mode always asks for reasoning in prose
    reasoning: bool | Literal["auto"] = "auto"
    #: the longest reasoning field; a decision gets less when its longest answer leaves less
    #: room in max_tokens (never under MIN_REASONING_CHARS: see llm/answers.py, reasoning_room)
    reasoning_max_chars: Annotated[int, Field(ge=20, le=20000)] = 800
    #: shared response cache (content-addressed, keyed by request + sample id)
    cache: bool = True
    #: default: $MESA_DILEMMAS_CACHE_DIR, else the user's cache dir / mesa-dilemmas / llm
    cache_dir: str | None = None
    #: extra system text added after the persona (applies to every LLM agent of the run)
    system_prompt: str | None = None
    #: a directory of prompt templates (``<decision kind>.txt`` / ``.toml``) overriding built-ins
    templates_dir: str | None = None
    #: which frozen wording of every decision template: 0 the base template, 1..k its variants
    #: (a factor like any parameter: a grid axis, ``--set llm.prompt_variant=2``, a group's
    #: ``llm_options``); the run record names the variant of every call
    prompt_variant: Annotated[int, Field(ge=0, le=99)] = 0
    #: refuse to run unless every LLM model of the run has passed ``mesa-dilemmas personas
    #: check`` for the run's game (the check's cached result)
    require_persona_check: bool = False
    #: the lowest comprehension accuracy (``mesa-dilemmas comprehension``) a model needs for the
    #: run's game; None: not checked
    min_comprehension: Annotated[float, Field(ge=0, le=1)] | None = None
    #: what a model below ``min_comprehension`` does to the run: stop it, or warn and go on
    on_low_comprehension: Literal["stop", "warn"] = "stop"
    #: send the calls made at once (a phase; ``strategies generate``'s descriptions and each
    #: round of implementations) as one batch job -- OpenAI's Batch API, Anthropic's Message
    #: Batches -- at batch prices; a run killed with a batch pending resumes by polling it
    batch: bool = False
    #: seconds between polls of a pending batch job
    batch_poll_s: PositiveFloat = 30.0
    #: no provider is called: every decision's prompt is rendered and recorded with its token
    #: count and answered at random from its spec (what ``mesa-dilemmas estimate`` runs)
    dry_run: bool = False
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    #: "provider:model" (or a model-name prefix) -> USD per million tokens; overrides prices.toml
    prices: dict[str, PriceEntry] = Field(default_factory=dict)
    #: per-provider tables, by provider name (the records of :mod:`~.providers`)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)

    @field_validator("providers")
    @classmethod
    def _known_providers(cls, tables: dict[str, ProviderSettings]) -> dict[str, ProviderSettings]:
        from mesa_dilemmas.llm.providers import names

        allowed = [n for n in names() if n != "replay"]
        for name in tables:
            if name not in allowed:
                raise PydanticCustomError(
                    "unknown_provider",
                    "unknown provider; allowed: {allowed}",
                    {"name": name, "allowed": ", ".join(allowed)},
                )
        return tables

    local: LocalSettings = Field(default_factory=LocalSettings)

    def reasoning_for(self, spec: Any) -> bool:
        """Whether a native-mode reply of this model (a :class:`ModelSpec`) carries a reasoning
        field: the setting when true or false; with "auto", on for every remote provider
        (openai, anthropic, gemini, OpenAI-compatible servers) and ``LOCAL_REASONING`` for the
        embedded model.  A replay decides as the replayed model did (same prompts, same keys)."""
        if self.reasoning != "auto":
            return bool(self.reasoning)
        spec = getattr(spec, "replay_of", None) or spec
        return LOCAL_REASONING if getattr(spec, "provider", "local") == "local" else True

    def fallback_limit(self, paid: bool) -> float:
        """The fallback share above which a model's run stops (see ``max_fallback_rate``)."""
        if self.max_fallback_rate is not None:
            return self.max_fallback_rate
        return PAID_FALLBACK_RATE if paid else SELF_HOSTED_FALLBACK_RATE

    def provider(self, name: str) -> ProviderSettings:
        """This provider's settings (all defaults when the table does not name it)."""
        return self.providers.get(name) or ProviderSettings()  # type: ignore[call-overload]

    def resolved_cache_dir(self) -> Path:
        """Where the shared cache lives: setting, then environment, then the user cache dir."""
        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        env = os.environ.get(CACHE_DIR_ENV)
        if env:
            return Path(env).expanduser()
        return default_cache_root() / "llm"

    @classmethod
    def from_table(cls, table: dict[str, Any] | None) -> LLMSettings:
        """Validate a scenario's ``[llm]`` table; errors are one line naming the key."""
        try:
            return cls.model_validate(table or {})
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            if first["type"] == "extra_forbidden":
                raise LLMConfigError(f"llm.{loc}: unknown key") from None
            if first["type"] == "unknown_provider":
                raise LLMConfigError(f"llm.{loc}.{first['ctx']['name']}: {first['msg']}") from None
            raise LLMConfigError(
                f"llm.{loc}: {first['msg']} (got {first.get('input')!r})"
            ) from None


def default_cache_root() -> Path:
    """The per-user cache directory of mesa-dilemmas (platformdirs when present)."""
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("mesa-dilemmas"))
    except ImportError:  # pragma: no cover - platformdirs ships with most environments
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(base) / "mesa-dilemmas"
