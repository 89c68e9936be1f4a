"""Unit tests of the LLM layer's parts that need no model and no server."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from pathlib import Path

import pytest
from llm_fixtures import llm_env  # noqa: F401

from mesa_dilemmas.agents import (
    ChoiceSpec,
    Decision,
    InvalidAnswer,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.dilemmas.fishery.persona import VillagerPersona
from mesa_dilemmas.dilemmas.port_of_mars.persona import CrewPersona
from mesa_dilemmas.llm import (
    BudgetExceeded,
    LLMConfigError,
    LLMSettings,
    make_policy,
    parse_spec,
    preflight,
    prompts,
)
from mesa_dilemmas.llm.accounting import PriceTable
from mesa_dilemmas.llm.accounting.budget import Budget
from mesa_dilemmas.llm.accounting.ratelimit import ProviderLimiter
from mesa_dilemmas.llm.answers import (
    corrective_message,
    native_schema,
    parse_native,
    parse_tags,
    tags_instructions,
)
from mesa_dilemmas.llm.request import (
    CallContext,
    ChatRequest,
    ChatResponse,
    Message,
    call_key,
)
from mesa_dilemmas.llm.settings import BudgetSettings
from mesa_dilemmas.llm.stores.cache import ResponseCache
from mesa_dilemmas.llm.stores.recorder import RunRecorder

# -- settings ---------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("llm_env")


def test_empty_table_is_valid_and_unknown_keys_fail_in_one_line() -> None:
    s = LLMSettings.from_table({})
    assert s.answer_mode == "tags" and s.cache and s.budget.max_calls is None
    with pytest.raises(LLMConfigError, match=r"^llm\.budget\.max_call: unknown key$"):
        LLMSettings.from_table({"budget": {"max_call": 3}})
    with pytest.raises(LLMConfigError, match=r"^llm\.answer_mode: .*'xml'"):
        LLMSettings.from_table({"answer_mode": "xml"})
    with pytest.raises(LLMConfigError, match=r"^llm\.providers\.mistral"):
        LLMSettings.from_table({"providers": {"mistral": {}}})


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MESA_DILEMMAS_CACHE_DIR", str(tmp_path / "env"))
    assert LLMSettings().resolved_cache_dir() == tmp_path / "env"
    assert LLMSettings(cache_dir=str(tmp_path / "set")).resolved_cache_dir() == tmp_path / "set"
    monkeypatch.delenv("MESA_DILEMMAS_CACHE_DIR")
    assert "mesa-dilemmas" in str(LLMSettings().resolved_cache_dir())


# -- specs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "provider", "model", "url"),
    [
        ("local", "local", "", None),
        ("local:/m/x.gguf", "local", "/m/x.gguf", None),
        ("openai:gpt-4o", "openai", "gpt-4o", None),
        (
            "openai:llama3:8b@http://127.0.0.1:8000/v1",
            "openai",
            "llama3:8b",
            "http://127.0.0.1:8000/v1",
        ),
        ("anthropic", "anthropic", "claude-3-5-haiku-latest", None),
        ("gemini:gemini-2.0-flash", "gemini", "gemini-2.0-flash", None),
    ],
)
def test_parse_spec(text: str, provider: str, model: str, url: str | None) -> None:
    spec = parse_spec(text)
    assert (spec.provider, spec.model, spec.base_url) == (provider, model, url)
    assert parse_spec(str(spec)) == spec


def test_replay_spec_keys_like_the_replayed_model() -> None:
    spec = parse_spec("replay:openai:gpt-4o")
    assert spec.provider == "replay" and spec.label == "openai:gpt-4o"
    assert parse_spec("replay").replay_of.provider == "local"
    with pytest.raises(LLMConfigError, match="unknown provider"):
        parse_spec("mistral:large")
    with pytest.raises(LLMConfigError, match="unknown provider"):
        parse_spec("replayx")


# -- answers ----------------------------------------------------------------------

NUM = NumberSpec(0, 10, integer=True)
CHOICE = ChoiceSpec(("Same", "Same goal", "Cooperate", "Defect"))
STRUCT = StructSpec(
    {"offer": NumberSpec(0, 5, integer=True), "resource": ChoiceSpec(("science", "culture"))}
)


@pytest.mark.parametrize(
    ("text", "spec", "value"),
    [
        ("I think... <answer>7</answer>", NUM, 7),
        ("<ANSWER> **7 coins** </ANSWER>", NUM, 7),
        ("first <answer>3</answer> then finally <answer>4</answer>", NUM, 4),
        ("so <answer>cooperate.</answer>", CHOICE, "Cooperate"),
        ("<answer>I will Defect</answer>", CHOICE, "Defect"),
        ("<answer>Same goal</answer>", CHOICE, "Same goal"),
        (
            '<answer>{"offer": "2", "resource": "Science"}</answer>',
            STRUCT,
            {"offer": 2, "resource": "science"},
        ),
        (
            "<answer><offer>1</offer><resource>culture</resource></answer>",
            STRUCT,
            {"offer": 1, "resource": "culture"},
        ),
        ("<answer>```json\n[0.5, 1]\n```</answer>", ListSpec(NumberSpec(0, 1)), [0.5, 1.0]),
        ("<answer> Fish less. </answer>", TextSpec(50), "Fish less."),
    ],
)
def test_parse_tags_accepts_unambiguous_answers(text: str, spec, value) -> None:
    assert parse_tags(text, spec).value == value


@pytest.mark.parametrize(
    ("text", "spec", "error"),
    [
        ("I would say 7", NUM, "no <answer>"),
        ("<answer>3 or 4</answer>", NUM, "several numbers"),
        ("<answer>11</answer>", NUM, r"\[0, 10\]"),
        ("<answer>maybe</answer>", CHOICE, "expected one of"),
        ("<answer>cooperate or defect</answer>", CHOICE, "expected one of"),
        ('<answer>{"offer": 9, "resource": "science"}</answer>', STRUCT, "offer"),
    ],
)
def test_parse_tags_rejects_ambiguous_or_invalid(text: str, spec, error: str) -> None:
    with pytest.raises(InvalidAnswer, match=error):
        parse_tags(text, spec)


def test_parse_tags_custom_tag_and_truncation_message() -> None:
    assert parse_tags("thinking <HEALTH>4</HEALTH>", NUM, tag="HEALTH").value == 4
    with pytest.raises(InvalidAnswer, match="cut off"):
        parse_tags("a long ramble that never", NUM, truncated=True)


def test_parse_native() -> None:
    schema = native_schema(STRUCT)
    assert schema["required"] == ["reasoning", "answer"] and schema["additionalProperties"] is False
    r = ChatResponse(text='{"reasoning": "r", "answer": {"offer": 3, "resource": "culture"}}')
    parsed = parse_native(r, STRUCT)
    assert parsed.value == {"offer": 3, "resource": "culture"} and parsed.reasoning == "r"
    assert parse_native(ChatResponse(text="", data={"answer": "defect"}), CHOICE).value == "Defect"
    assert parse_native(ChatResponse(text="5"), NUM).value == 5
    with pytest.raises(InvalidAnswer, match='no "answer"'):
        parse_native(ChatResponse(text='{"reasoning": "r"}'), NUM)
    with pytest.raises(InvalidAnswer, match="cut off"):
        parse_native(ChatResponse(text='{"reasoning": "r", "ans', finish_reason="length"), NUM)


def test_native_schema_without_reasoning() -> None:
    schema = native_schema(NUM, reasoning=False)
    assert schema["required"] == ["answer"] and list(schema["properties"]) == ["answer"]
    assert parse_native(ChatResponse(text='{"answer": 4}'), NUM).value == 4


def test_instructions_and_corrections_state_the_spec() -> None:
    text = tags_instructions(NUM)
    assert "a whole number between 0 and 10" in text and "<answer>" in text and "</answer>" in text
    fix = corrective_message("no <answer>...</answer> tags in the reply", NUM, "tags")
    assert "could not be used" in fix and "<answer>3</answer>" in fix


# -- prompts ----------------------------------------------------------------------


def test_generic_prompt_renders_persona_observation_and_instructions() -> None:
    # a game's persona type adds its own fields and sentences to the shared ones
    persona = CrewPersona(
        svo_angle=60,
        cultural_group="Egalitarian Communitarian",
        traits=("cautious", "fair"),
        strategy_text="Never take more than my share.",
    )
    d = Decision(
        "toy.effort",  # a kind with no registered template: the generic renderer
        NUM,
        {"lake_stock": 120.5, "history": [1, 2], "others": {"a": 1}},
        None,
        3,
        5,
    )
    p = prompts.render(d, mode="tags", persona=persona, round_=3)
    assert "(altruistic)" in p.system and "60 degrees" in p.system  # one svo_category
    assert "You care about the welfare" not in p.system  # no other game's fields
    villager = prompts.render(d, mode="tags", persona=VillagerPersona(disposition="altruistic"))
    assert "You care about the welfare of the whole group" in villager.system
    assert "SVO" not in villager.system
    # generic wording only: a game's own persona texts live beside the game
    assert "cultural group: Egalitarian Communitarian." in p.system
    assert "cautious, fair" in p.system and "Never take more" in p.system
    assert "Round 3" in p.user and "- lake stock: 120.5" in p.user and "history: 1, 2" in p.user
    assert "a whole number between 0 and 10" in p.user and p.schema is None
    native = prompts.render(d, mode="native", persona=persona, round_=3)
    assert native.schema["properties"]["answer"] == NUM.json_schema() and '"answer"' in native.user


def test_template_registry_txt_and_toml(tmp_path: Path) -> None:
    (tmp_path / "health.toml").write_text(
        'tag = "HEALTH"\nsystem = "You are the {p.disposition} player."\n'
        'user = "Port health is {obs[health]}.\\n{instructions}"\n'
    )
    (tmp_path / "plain.txt").write_text("Observation:\n{observation}\nDecide.")
    kinds = prompts.register_templates("toygame", tmp_path)
    assert sorted(kinds) == ["toygame.health", "toygame.plain"]
    d = Decision("toygame.health", NUM, {"health": 47}, None, 1, 0)
    p = prompts.render(d, mode="tags", persona=VillagerPersona(disposition="selfish"))
    assert p.system == "You are the selfish player." and p.tag == "HEALTH"
    assert p.user.startswith("Port health is 47.") and "<HEALTH>" in p.user
    p2 = prompts.render(Decision("toygame.plain", NUM, {"x": 1}, None, 1, 0), mode="tags")
    assert "- x: 1" in p2.user and p2.user.rstrip().endswith("</answer>.")  # instructions appended
    (tmp_path / "bad.txt").write_text("{nope}")
    prompts.register_templates("toygame", tmp_path)
    with pytest.raises(ValueError, match="bad.txt.*nope"):
        prompts.render(Decision("toygame.bad", NUM, {}, None, 1, 0), mode="tags")


# -- prices -----------------------------------------------------------------------


def test_prices_longest_prefix_and_overrides() -> None:
    table = PriceTable()
    assert table.price("anthropic:claude-3-5-haiku-20241022").input == 0.80
    assert table.price("openai:gpt-4o-mini-2024-07-18").output == 0.60
    assert table.price("openai:gpt-4o-2024-08-06").output == 10.00
    assert table.price("openai:my-finetune") is None
    assert table.cost("local:SmolLM2-135M-Instruct.Q4_1.gguf", 1000, 1000) == 0.0
    custom = PriceTable(
        LLMSettings.from_table({"prices": {"openai:my-finetune": {"input": 1, "output": 2}}}).prices
    )
    assert custom.cost("openai:my-finetune", 1_000_000, 500_000) == pytest.approx(2.0)


# -- rate limits ------------------------------------------------------------------


def test_concurrency_limit_bounds_calls_in_flight() -> None:
    limiter = ProviderLimiter(max_concurrency=3)

    async def one() -> None:
        async with limiter.slot():
            await asyncio.sleep(0.02)

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(12)))

    asyncio.run(main())
    assert limiter.peak_in_flight == 3
    asyncio.run(main())  # a second event loop gets its own semaphore and works


def test_requests_per_minute_spaces_out_calls() -> None:
    limiter = ProviderLimiter(max_concurrency=10, requests_per_minute=600)  # 10/s, burst 600
    limiter.requests.level = 0.0  # an exhausted bucket: the next calls must wait for refill

    async def main() -> float:
        start = time.monotonic()

        async def one() -> None:
            async with limiter.slot():
                pass

        await asyncio.gather(*(one() for _ in range(3)))
        return time.monotonic() - start

    assert asyncio.run(main()) >= 0.25  # 3 requests at 10/s from empty


def test_tokens_per_minute_waits_for_big_requests() -> None:
    limiter = ProviderLimiter(tokens_per_minute=6000)  # 100 tokens/s
    limiter.tokens.level = 50.0

    async def main() -> float:
        start = time.monotonic()
        async with limiter.slot(est_tokens=80):
            pass
        return time.monotonic() - start

    assert 0.25 <= asyncio.run(main()) < 2.0  # 30 missing tokens at 100/s


# -- cache, recorder, budget --------------------------------------------------------


def _request(n: int = 0) -> ChatRequest:
    return ChatRequest((Message("user", f"hello {n}"),), temperature=0.5, max_tokens=10, seed=1)


def test_once_a_call_stops_the_run_no_other_call_of_the_run_is_sent() -> None:
    """A rejection stops the run: a call of the run that reaches the budget guard afterwards
    (one the stop left waiting) is refused with the same stop, not sent; outside a run the
    client's own budget is not stopped."""
    from types import SimpleNamespace

    from mesa_dilemmas.llm import ProviderRejected
    from mesa_dilemmas.llm.stack.budgeting import BudgetGuard
    from mesa_dilemmas.llm.stack.language_model import Call

    sent: list[str] = []

    class Rejecting:  # the layers below the guard, as an unknown model answers them
        async def complete(self, call: Call):
            sent.append(call.key)
            await asyncio.sleep(0)
            raise ProviderRejected("openai: HTTP 404: unknown model", 404)

    guard = BudgetGuard(Rejecting(), Budget(BudgetSettings()), time_limit=1.0)
    run = SimpleNamespace(budget=Budget(BudgetSettings()))

    def call(key: str, in_run: bool = True) -> Call:
        return Call(_request(), CallContext(key), key, {}, run if in_run else None, None)

    for key in ("first", "later"):
        with pytest.raises(ProviderRejected, match="HTTP 404") as stop:
            asyncio.run(guard.complete(call(key)))
        assert stop.value.status == 404
    assert sent == ["first"] and run.budget.stopped is not None
    for key in ("outside", "outside again"):
        with pytest.raises(ProviderRejected):
            asyncio.run(guard.complete(call(key, in_run=False)))
    assert sent == ["first", "outside", "outside again"]


def test_cache_key_includes_request_and_sample() -> None:
    a = call_key("openai:m", _request(0), "1/0/r1/s1/k/n0/a0")
    assert a == call_key("openai:m", _request(0), "1/0/r1/s1/k/n0/a0")
    assert a != call_key("openai:m", _request(1), "1/0/r1/s1/k/n0/a0")
    assert a != call_key("openai:m", _request(0), "2/0/r1/s1/k/n0/a0")  # another replication
    assert a != call_key("openai:other", _request(0), "1/0/r1/s1/k/n0/a0")


def test_cache_put_get_stats_clear(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    assert cache.get("k") is None and cache.stats()["entries"] == 0
    cache.put("k1", "openai:a", {"x": 1}, ChatResponse("hi", 3, 1, "stop"))
    cache.put("k2", "openai:b", {"x": 2}, ChatResponse("yo", 3, 1, "stop"))
    cache.put("k1", "openai:a", {"x": 1}, ChatResponse("changed", 3, 1, "stop"))  # first write wins
    assert cache.get("k1").text == "hi"
    assert cache.stats()["by_model"] == {"openai:a": 1, "openai:b": 1}
    assert cache.clear("openai:a") == 1 and cache.get("k1") is None and cache.get("k2") is not None
    assert cache.clear() == 1 and cache.stats()["entries"] == 0


def _writer(directory: str, start: int) -> None:
    cache = ResponseCache(Path(directory))
    for i in range(start, start + 40):
        cache.put(f"key{i}", "openai:m", {"i": i}, ChatResponse(f"r{i}"))


def test_cache_is_safe_with_concurrent_processes(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), k * 20)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = ResponseCache(tmp_path)
    assert cache.stats()["entries"] == 80  # keys 0..79, overlapping writes deduplicated
    assert cache.get("key79").text == "r79"


def test_memory_budget() -> None:
    budget = Budget(BudgetSettings(max_calls=2, max_tokens=100))
    budget.reserve()
    budget.charge(60, 0.0)
    budget.reserve()
    with pytest.raises(BudgetExceeded, match="max_calls = 2"):
        budget.reserve()
    budget = Budget(BudgetSettings(max_tokens=100))
    budget.reserve()
    budget.charge(120, None)
    with pytest.raises(BudgetExceeded, match="max_tokens = 100"):
        budget.reserve()


def _reserve_many(run_dir: str, n: int, out: mp.Queue) -> None:
    budget = Budget(BudgetSettings(max_calls=25), RunRecorder(Path(run_dir)))
    got = 0
    for _ in range(n):
        try:
            budget.reserve()
            got += 1
        except BudgetExceeded:
            pass
    out.put(got)


def test_run_budget_is_exact_across_processes(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_reserve_many, args=(str(tmp_path), 20, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    totals = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    assert sum(totals) == 25  # 60 attempts, exactly max_calls granted
    assert Budget(BudgetSettings(), RunRecorder(tmp_path)).spent()["calls"] == 25


def test_budget_exceeded_pickles() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(BudgetExceeded("llm budget reached: x")))
    assert isinstance(err, BudgetExceeded) and "budget" in str(err)


def test_recorder_lookup_finds_successful_responses(tmp_path: Path) -> None:
    rec = RunRecorder(tmp_path)
    ctx = CallContext("k", agent_id=1, round=2)
    rec.record_call(
        ctx,
        key="a",
        label="x",
        source="provider",
        request={},
        response=None,
        latency_s=1,
        cost_usd=None,
        error="boom",
    )
    assert rec.lookup("a") is None
    rec.record_call(
        ctx,
        key="a",
        label="x",
        source="provider",
        request={},
        response=ChatResponse("ok"),
        latency_s=1,
        cost_usd=0,
    )
    assert rec.lookup("a").text == "ok"


# -- preflight / make_policy --------------------------------------------------------


def test_preflight_names_missing_key() -> None:
    with pytest.raises(
        LLMConfigError, match=r"^llm: OPENAI_API_KEY is not set \(needed by openai:gpt-4o\)$"
    ):
        preflight({"openai:gpt-4o"}, LLMSettings())
    with pytest.raises(LLMConfigError, match="ANTHROPIC_API_KEY"):
        preflight({"anthropic:claude-3-5-haiku-latest"}, LLMSettings())
    with pytest.raises(LLMConfigError, match="GEMINI_API_KEY"):
        preflight({"gemini:gemini-2.0-flash"}, LLMSettings())
    with pytest.raises(LLMConfigError, match="MY_KEY"):
        preflight(
            {"openai:gpt-4o"},
            LLMSettings.from_table({"providers": {"openai": {"api_key_env": "MY_KEY"}}}),
        )
    # a custom base URL (vLLM, llama.cpp) needs no key; replay needs nothing
    preflight({"openai:m@http://127.0.0.1:9/v1", "replay:openai:gpt-4o"}, LLMSettings())


def test_preflight_key_present_and_price_needed_for_cost_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "x")
    preflight({"gemini:gemini-2.0-flash"}, LLMSettings())
    budget = LLMSettings.from_table({"budget": {"max_cost_usd": 1.0}})
    with pytest.raises(LLMConfigError, match=r'llm.prices."openai:m"'):
        preflight({"openai:m@http://127.0.0.1:9/v1"}, budget)


def test_preflight_local_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMConfigError, match=r"model file not found: .*nope\.gguf"):
        preflight({f"local:{tmp_path / 'nope.gguf'}"}, LLMSettings())
    from mesa_dilemmas.llm import checks

    # pretend llama-cpp-python is absent: the message must say which extra to install
    monkeypatch.setattr(checks, "_has_module", lambda name: name != "llama_cpp")
    with pytest.raises(
        LLMConfigError, match=r"llama-cpp-python is not installed.*mesa-dilemmas\[local\]"
    ):
        preflight({"local"}, LLMSettings())


def test_make_policy() -> None:
    pol = make_policy("openai", model="m@http://127.0.0.1:9/v1", temperature=0.1)
    assert pol.is_async and not pol.strict and pol.settings.temperature == 0.1
    assert pol.spec.model == "m" and pol.name == "llm:openai:m"
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        make_policy("openai:gpt-4o")
    with pytest.raises(LLMConfigError, match="already names a model"):
        make_policy("openai:gpt-4o", model="x")
    import pickle

    clone = pickle.loads(pickle.dumps(pol))
    assert clone.spec == pol.spec and clone.settings == pol.settings
