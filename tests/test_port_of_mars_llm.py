"""Port of Mars for LLM players: the prompts as data, legal examples, precise corrective re-asks
(through a loopback OpenAI-wire server, no model), one SVO category, the meeting writer."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from llm_fixtures import llm_env  # noqa: E402, F401, F811
from llm_servers.responder import NormalizedRequest, Reply, scripted_reply
from llm_servers.wire import WireServer

from mesa_dilemmas.agents.decisions import Decision, InvalidAnswer
from mesa_dilemmas.dilemmas.port_of_mars import persona as persona_mod
from mesa_dilemmas.dilemmas.port_of_mars import players
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.dilemmas.port_of_mars.specs import budget_spec
from mesa_dilemmas.dilemmas.port_of_mars.trade import offer_spec
from mesa_dilemmas.llm import prompts
from mesa_dilemmas.llm.answers import parse_tags
from mesa_dilemmas.llm.population import register_game_prompts
from mesa_dilemmas.llm.specs import parse_spec, schema_in_text, shares_schema

TAGS = {
    "port_of_mars.health_plan": "HEALTH",
    "port_of_mars.goal_plan": "GOAL",
    "port_of_mars.invest": "RESOURCE",
    "port_of_mars.trade_offer": "TRADE",
    "port_of_mars.trade_accept": "ACCEPT",
    "port_of_mars.purchase": "PURCHASE",
    "port_of_mars.discard": "DISCARD",
    "port_of_mars.vote": "VOTE",
    "port_of_mars.event_choice": "CHOICE",
    "port_of_mars.keep_resources": "KEEP",
    "port_of_mars.meeting": "MEETING",
    "port_of_mars.meeting_summaries": "SUMMARIES",
    "port_of_mars.speak": "SAY",
}


def collected_decisions(seeds=range(6), rounds: int = 4) -> dict[str, list[Decision]]:
    """Every decision rule games ask, by kind (events from round 1, meeting on)."""
    out: dict[str, list[Decision]] = {}
    for seed in seeds:
        m = PortOfMarsModel(
            rng=seed, events_in_first_round=True, leadership="announce", meeting_turns=seed % 2
        )
        m.texts_for_all = True
        ask_all = m.broker.ask_all

        def spy(ds, ask_all=ask_all):
            for d in ds:
                out.setdefault(d.kind, []).append(d)
            return ask_all(ds)

        m.broker.ask_all = spy
        for _ in range(rounds):
            if m.running:
                m.step()
    return out


@pytest.fixture(scope="module")
def decisions() -> dict[str, list[Decision]]:
    register_game_prompts(PortOfMarsModel)
    return collected_decisions()


def test_every_decision_kind_has_a_template_with_its_own_tag(decisions):
    assert set(decisions) == set(TAGS)  # the collection covers every kind the game asks
    for kind, tag in TAGS.items():
        template = prompts.template_for(kind)
        assert template is not None and template.tag == tag, kind
        d = decisions[kind][0]
        persona = getattr(d.agent, "persona", None)
        p = prompts.render(d, mode="tags", persona=persona, round_=1)
        assert f"<{tag}>" in p.user and p.tag == tag
        native = prompts.render(d, mode="native", persona=persona, round_=1)
        assert native.schema is not None and "{" not in native.system[:1]


def test_the_player_is_told_the_game(decisions):
    d = decisions["port_of_mars.invest"][0]
    p = prompts.render(d, mode="tags", persona=d.agent.persona, round_=1)
    text = f"{p.system}\n{p.user}".lower()  # the rules in the system prompt, the seat's own last
    for fact in (
        "port health",
        "wear and tear",
        "every player finishes with 0 points",  # collapse
        "harm the port",  # dirty accomplishments
        "not told how many rounds",
        "trading",
        "one if port health is 65 or more",  # event counts by health
        "your role is",
        "social value orientation",  # the persona
    ):
        assert fact in text, fact
    assert "you have 10 coins" in p.user.lower() and "your accomplishments" in p.user.lower()


def test_leadership_changes_what_each_player_is_told():
    def told(variant: str, seat: int) -> str:
        m = PortOfMarsModel(rng=1, leadership=variant, leader_seat=2)
        m.time = 1
        m.phase_new_round()
        return m.player_texts(seat, m.observe(seat))["briefing"]

    assert "You have been made the leader" in told("vanilla", 2)
    assert "leader" not in told("vanilla", 0)
    assert "every player knows" in told("announce", 0)
    assert "leader" not in told("unaware", 2)
    assert "does not know this" in told("unaware", 0)
    assert "leader" not in told("none", 2)


def _example(text: str, tag: str) -> str:
    return re.search(rf"for example <{tag}>(.*?)</{tag}>", text, re.S).group(1)


def test_examples_are_legal_and_neutral(decisions):
    for kind in ("port_of_mars.invest", "port_of_mars.trade_offer", "port_of_mars.keep_resources"):
        for d in decisions[kind][:10]:
            tag = TAGS[kind]
            p = prompts.render(d, mode="tags", persona=None, round_=1)
            shown = _example(p.user, tag)
            value = parse_tags(f"<{tag}>{shown}</{tag}>", d.spec, tag).value
            assert d.spec.validate(value) == value  # legal, and validation is idempotent
            if kind == "port_of_mars.trade_offer" and value:  # a fair 1-for-1, not a request
                give, receive = value[0]["give"], value[0]["receive"]
                assert sum(give.values()) == sum(receive.values()) == 1


def test_corrective_messages_say_exactly_what_was_wrong():
    spec = budget_spec({"port_health": 1, "science": 2, "culture": 3}, 10)
    with pytest.raises(InvalidAnswer, match=r"you spent 13 of your 10 coins"):
        spec.validate({"port_health": 4, "science": 3, "culture": 1})
    offer = offer_spec(
        ["Curator"], {"culture": 2, "finance": 0, "government": 0, "legacy": 0, "science": 1}
    )
    with pytest.raises(InvalidAnswer, match="science is on both sides"):
        offer.validate({"to": "Curator", "give": {"science": 1}, "receive": {"science": 2}})
    with pytest.raises(InvalidAnswer, match="you offered 3 culture but hold only 2"):
        offer.validate({"to": "Curator", "give": {"culture": 3}, "receive": {"legacy": 1}})
    with pytest.raises(InvalidAnswer, match="you offered 1 finance but hold only 0"):
        offer.validate({"to": "Curator", "give": {"finance": 1}, "receive": {"legacy": 1}})


def test_one_svo_category_with_the_standard_boundaries():
    assert not hasattr(players, "svo_category")  # one definition, in personas
    assert not hasattr(prompts, "CULTURAL_GROUPS") and not hasattr(prompts, "SVO_PREAMBLE")
    cat = persona_mod.svo_category
    assert [cat(a) for a in (-30, -12.04, -12, 22.45, 22.5, 57.15, 57.2)] == [
        "competitive",
        "competitive",
        "individualistic",
        "individualistic",
        "prosocial",
        "prosocial",
        "altruistic",
    ]


def test_meeting_writer_is_an_explicit_parameter():
    pop = PortOfMarsModel.population_from_params({"llm_players": 2})
    assert pop.roles["meeting"].kind == "rule"  # LLM players no longer imply an LLM writer
    pop = PortOfMarsModel.population_from_params({"llm_players": 2, "meeting_writer": "llm"})
    assert pop.roles["meeting"].llm == "local"
    pop = PortOfMarsModel.population_from_params(
        {"players": {"roles": {"meeting": {"llm": "openai:x"}}}, "meeting_writer": "rule"}
    )
    assert pop.roles["meeting"].llm == "openai:x"  # the population's role wins
    with pytest.raises(ValueError, match="meeting_writer"):
        PortOfMarsModel.population_from_params({"meeting_writer": "gpt"})


def _over_budget_then_legal(log: list[str]):
    def respond(req: NormalizedRequest) -> Reply:
        if "<RESOURCE>" not in req.last_user and "you spent" not in req.last_user:
            return scripted_reply(req)
        log.append(req.last_user)
        if len(log) == 1:  # 9 coins to port health + 2 units of the specialty at 2 = 13
            told = "\n".join([req.system, *(t for _, t in req.messages)])
            specialty = re.search(r"specialty resource is (\w+)", told).group(1).lower()
            answer = {"port_health": 9, specialty: 2}
        else:
            answer = {"port_health": 4}
        return Reply(f"I plan. <RESOURCE>{json.dumps(answer)}</RESOURCE>")

    return respond


def test_an_over_budget_answer_gets_a_precise_corrective_reask(llm_env):  # noqa: F811
    log: list[str] = []
    with WireServer(responder=_over_budget_then_legal(log)) as server:
        llm = f"openai:test-model@{server.url}/v1"
        population = {
            "groups": [{"llm": llm, "seats": [0], "llm_options": {"answer_mode": "tags"}}]
        }
        m = PortOfMarsModel(rng=2, players=population, meeting=False, n_rounds=1)
        m.step()
    assert len(log) == 2
    assert "you spent 13 of your 10 coins" in log[1]
    assert '<RESOURCE>{"port_health": 3' in log[1]  # the legal example, not the generic one
    stats = {
        r["kind"]: r for r in m.broker.stats.records() if r["agent_id"] == m.player(0).unique_id
    }
    invest = stats["port_of_mars.invest"]
    assert (invest["parse_failures"], invest["retries"], invest["fallbacks"]) == (1, 1, 0)
    assert m.player(0).health_coins_total == 4


def _meeting_writer_that_fails(req: NormalizedRequest) -> Reply:
    if "<MEETING>" in req.last_user or "could not be used" in req.last_user:
        return Reply("We talked a lot.")  # never tagged: the meeting falls back
    return scripted_reply(req)


def test_a_failed_llm_meeting_is_counted_and_reported(llm_env):  # noqa: F811
    with WireServer(responder=_meeting_writer_that_fails) as server:
        llm = f"openai:test-model@{server.url}/v1"
        m = PortOfMarsModel(
            rng=2,
            n_rounds=1,
            players={"roles": {"meeting": {"llm": llm, "llm_options": {"answer_mode": "tags"}}}},
        )
        m.step()
    metrics = m.final_metrics()
    assert metrics["meeting_fallbacks"] == 1 and metrics["meetings_held"] == 0
    assert not m.meeting_held and "meeting_fallbacks" in PortOfMarsModel.RUN_METRICS


def _summaries(req: NormalizedRequest) -> Reply:
    if "<SUMMARIES>" in req.last_user:  # per-role tags inside the answer tag
        roles = re.search(r"For each player \(([^)]*)\)", req.last_user).group(1).split(", ")
        inner = "".join(
            f"<{r}>You said you would give {i} coins.</{r}>" for i, r in enumerate(roles)
        )
        return Reply(f"<SUMMARIES>{inner}</SUMMARIES>")
    if "<MEETING>" in req.last_user:
        return Reply('<MEETING>{"conversation": "Curator: I give 5. Pioneer: I give 3."}</MEETING>')
    return scripted_reply(req)


def test_llm_meeting_two_calls_with_per_role_tags(llm_env):  # noqa: F811
    with WireServer(responder=_summaries) as server:
        llm = f"openai:test-model@{server.url}/v1"
        m = PortOfMarsModel(
            rng=2,
            n_rounds=2,
            players={"roles": {"meeting": {"llm": llm, "llm_options": {"answer_mode": "tags"}}}},
        )
        m.step()
    assert m.meeting_conversation.startswith("Curator: I give 5.")
    assert len(m.meeting_summaries) == 5
    seat = m.roles.index("Pioneer")
    assert m.observe(seat)["meeting_summary"].startswith("You said you would give")
    assert m.last_round["meeting_summaries"] == m.meeting_summaries
    assert m.meeting_fallbacks == 0 and m.meetings_held == 1


def test_turn_by_turn_meeting_every_player_speaks_then_notes_are_written():
    m = PortOfMarsModel(rng=5, meeting_turns=2, n_rounds=2)
    m.step()
    lines = m.meeting_conversation.splitlines()
    assert [line.split(": ")[0] for line in lines] == [p.role for p in m.seats] * 2
    assert m.pledges is None and m.meetings_held == 1
    for p in m.seats:
        note = m.meeting_summaries[p.role]
        assert note.startswith("You said: I plan to put") and len(note) <= m.p.summary_chars
    seat_stats = m.broker.stats.by_kind()
    assert seat_stats["port_of_mars.speak"]["asked"] == 10
    assert "port_of_mars.meeting" not in seat_stats  # the writer only writes the notes


def test_no_event_decisions_after_the_port_collapsed():
    asked_after: list[str] = []
    for seed in range(40):
        m = PortOfMarsModel(
            rng=seed, events_in_first_round=True, preset="traits", traits=["selfish"] * 5
        )
        ask_all = m.broker.ask_all

        def spy(ds, m=m, ask_all=ask_all):
            if m.health <= 0:
                asked_after.extend(d.kind for d in ds)
            return ask_all(ds)

        m.broker.ask_all = spy
        while m.running:
            m.step()
    assert asked_after == []


def test_dirty_cards_round_counts_cards():
    m = PortOfMarsModel(rng=0)
    p = m.player(0)
    p.dirty_cards_round = 2
    assert m.final_metrics()["dirty_cards_round"] == 2


GRAMMAR_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from test_port_of_mars_llm import collected_decisions
from mesa_dilemmas.llm import bundled_model_path
from mesa_dilemmas.llm.answers import native_schema
from mesa_dilemmas.llm.backends.local import grammar_schema, load_model

llm, lock = load_model(str(bundled_model_path()), 512, 1, 64)
built = []
for kind, ds in sorted(collected_decisions().items()):
    for d in ds[:2]:
        schema = grammar_schema(native_schema(d.spec, reasoning=True, max_chars=800))
        llm.reset()
        llm.create_chat_completion(
            messages=[{"role": "user", "content": "ok"}], max_tokens=1,
            response_format={"type": "json_object", "schema": schema},
        )
    built.append(kind)
print("BUILT", json.dumps(built))
"""


@pytest.mark.slow
def test_every_decision_grammar_builds_on_the_local_model():
    """llama.cpp crashes (segfault) on a grammar it cannot build, e.g. a 20,000-character
    string: build every Port of Mars decision's grammar in a child process."""
    import subprocess

    from llm_fixtures import LOCAL_MISSING

    if LOCAL_MISSING:
        pytest.skip(LOCAL_MISSING)
    tests = Path(__file__).parent
    env = {**__import__("os").environ, "PYTHONPATH": str(tests.parent)}
    result = subprocess.run(
        [sys.executable, "-c", GRAMMAR_SCRIPT, str(tests)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    built = json.loads(result.stdout.split("BUILT", 1)[1])
    assert set(built) == set(TAGS)


def test_api_providers_get_one_schema_per_phase_and_each_seat_keeps_its_limits(decisions):
    """Providers that read the schema before the messages (OpenAI's and Anthropic's own APIs)
    get the schema a phase shares across seats, so every seat's prompt starts the same way; the
    seat's own limits still decide what is valid.  Everyone else gets the seat's own schema."""
    assert shares_schema(parse_spec("openai:gpt-4o")) and shares_schema(parse_spec("anthropic:x"))
    assert shares_schema(parse_spec("replay:openai:gpt-4o"))  # renders what the run sent
    for spec in ("local", "gemini:gemini-2.5-flash", "openai:m@http://127.0.0.1:8000/v1"):
        assert not shares_schema(parse_spec(spec)), spec
    narrowed = 0
    for kind in ("invest", "trade_offer", "health_plan", "goal_plan", "purchase", "discard"):
        ds = decisions[f"port_of_mars.{kind}"][:10]
        assert all(d.shown is not None for d in ds), kind
        shared = [prompts.render(d, mode="native", shared_schema=True) for d in ds]
        own = [prompts.render(d, mode="native") for d in ds]
        assert len({json.dumps(p.schema, sort_keys=True) for p in shared}) == 1, kind
        narrowed += len({json.dumps(p.schema, sort_keys=True) for p in own}) > 1
        for d, p in zip(ds, shared, strict=True):  # tags mode: the seat's own legal example last
            tags = prompts.render(d, mode="tags", shared_schema=True)
            tag = TAGS[d.kind]
            last = tags.user.rstrip().splitlines()[-1]
            assert last.startswith("Answer in that format, for example"), last
            example = parse_tags(f"<{tag}>{_example(last, tag)}</{tag}>", d.spec, tag).value
            assert d.spec.validate(example) == example
            assert p.system == prompts.render(d, mode="native").system
    assert narrowed >= 3  # the seats' own schemas differ (coins, cards, holdings)
    # what the shared schema allows but the seat's own spec refuses is asked again
    d = next(
        d for d in decisions["port_of_mars.trade_offer"] if sum(d.observation["resources"].values())
    )
    held = d.observation["resources"]
    extra = next(r for r in held if held[r] < 20)
    offer = [{"to": d.observation["role"], "give": {extra: held[extra] + 1}, "receive": {}}]
    d.shown.validate(offer)  # legal under the phase's schema ...
    with pytest.raises(InvalidAnswer):
        d.validate(offer)  # ... not for this seat (itself as partner, more than it holds)


def test_the_schema_is_repeated_as_text_only_where_the_model_would_not_see_it(decisions):
    """A provider's own API shows the model the schema it is sent; the embedded model and a
    server named by URL (llama-cpp-python's takes it in JSON mode only) get it as text too."""
    for spec in ("openai:gpt-4o", "anthropic:x", "gemini:gemini-2.5-flash", "replay:openai:gpt-4o"):
        assert not schema_in_text(parse_spec(spec)), spec
    for spec in ("local", "openai:m@http://127.0.0.1:8000/v1", "replay:local"):
        assert schema_in_text(parse_spec(spec)), spec
    d = decisions["port_of_mars.invest"][0]
    with_text = prompts.render(d, mode="native")
    without = prompts.render(d, mode="native", schema_text=False)
    assert "JSON schema:" in with_text.user and "JSON schema:" not in without.user
    assert with_text.schema == without.schema  # the request carries the schema either way
    assert len(without.user) < len(with_text.user)
