"""Self-hosted servers: a server that answers one request at a time is sent one call at a time
with a timeout that covers queued calls; ranges and sums a server's grammar ignores are checked
by the client and re-asked like any parse failure."""

from __future__ import annotations

import asyncio
import json

import pytest
from llm_fixtures import llama_server_fixture, llm_env, needs_local  # noqa: F401
from llm_servers.responder import Reply
from llm_servers.wire import WireServer

from mesa_dilemmas.agents import Decision, NumberSpec, StructSpec
from mesa_dilemmas.agents.broker import DecisionBroker
from mesa_dilemmas.llm import make_policy
from mesa_dilemmas.llm.client import SERIAL_TIMEOUT_S

pytestmark = pytest.mark.usefixtures("llm_env")


@needs_local
def test_llama_cpp_python_server_is_served_one_call_at_a_time(llama_server):
    policy = make_policy(f"openai:smollm2@{llama_server}", cache=False)
    client = policy.client
    assert asyncio.run(client.backend.serving()) == (1, None)
    asyncio.run(client.fit_to_server())
    assert client.limiter.max_concurrency == 1
    assert client.backend.timeout == SERIAL_TIMEOUT_S


def test_a_server_that_says_nothing_keeps_its_concurrency():
    with WireServer() as server:
        policy = make_policy(f"openai:m@{server.url}/v1", cache=False)
        asyncio.run(policy.client.fit_to_server())
        assert policy.client.limiter.max_concurrency == 16 and server.state.requests == 0


def _out_of_range_then_valid(values):
    replies = iter(values)

    def respond(req):
        if req.schema and "ok" in req.schema.get("properties", {}):  # the endpoint's probe
            return Reply(text='{"ok": true}', data={"ok": True})
        value = next(replies)
        return Reply(text=json.dumps({"answer": value}), data={"answer": value})

    return respond


def test_out_of_range_answers_are_re_asked_not_accepted():
    """llama-cpp-python's server ignores schema limits (a 0-10 plan answered 21,679,530):
    the client's validator rejects it and re-asks."""
    with WireServer(responder=_out_of_range_then_valid([21679530, 7])) as server:
        policy = make_policy(
            f"openai:m@{server.url}/v1", cache=False, answer_mode="native", run_seed=1
        )
        broker = DecisionBroker(narrator=policy)
        try:
            (value,) = broker.ask_all(
                [Decision("unit.plan", NumberSpec(0, 10, integer=True), {}, None, 1, 0)]
            )
        finally:
            broker.close()
        assert value == 7 and broker.stats.total("parse_failures") == 1
        assert broker.stats.total("fallbacks") == 0


class BudgetSpec(StructSpec):
    """Two amounts that must add up to at most 10 (a game's own constraint)."""

    def validate(self, answer):
        from mesa_dilemmas.agents.decisions import InvalidAnswer

        value = super().validate(answer)
        if value["a"] + value["b"] > 10:
            raise InvalidAnswer(f"a + b must be at most 10, got {value['a'] + value['b']}")
        return value


def test_sums_are_checked_and_re_asked():
    spec = BudgetSpec({"a": NumberSpec(0, 10, integer=True), "b": NumberSpec(0, 10, integer=True)})
    answers = [{"a": 8, "b": 9}, {"a": 4, "b": 5}]
    with WireServer(responder=_out_of_range_then_valid(answers)) as server:
        policy = make_policy(
            f"openai:m@{server.url}/v1", cache=False, answer_mode="native", run_seed=1
        )
        broker = DecisionBroker(narrator=policy)
        try:
            (value,) = broker.ask_all([Decision("unit.split", spec, {}, None, 1, {"a": 0, "b": 0})])
        finally:
            broker.close()
    assert value == {"a": 4, "b": 5} and broker.stats.total("parse_failures") == 1
