"""Benchmark: a Port of Mars game with five LLM players and the LLM meeting writer against the
loopback OpenAI-wire test server with a fixed latency per request (200 ms by default).

The calls of one phase go out concurrently (the broker gathers them), so a game should take
about (sequential round-trips) x latency, not (calls) x latency.  A round-trip is one broker
request that contains at least one LLM decision: a simultaneous phase (``ask_all``), or one
decision asked in turn (each trade answer, the two meeting calls).  Prints the wall time, the
bound 1.25 x (round-trips + corrective re-asks) x latency and the calls per round.

Run:  python benchmarks/bench_port_of_mars_llm.py [--rounds 9] [--latency 0.2] [--seed 1]
Nothing leaves the machine: the server listens on 127.0.0.1 and answers from a script.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback wire-format test server

from llm_servers.responder import NormalizedRequest, Reply, scripted_reply  # noqa: E402
from llm_servers.wire import WireServer  # noqa: E402

from mesa_dilemmas.dilemmas.port_of_mars import PortOfMarsModel  # noqa: E402


def caretaker(req: NormalizedRequest) -> Reply:
    """The scripted responder, except that every player plans and puts 6 coins into port
    health (random answers let the port collapse within a few rounds)."""
    if "<RESOURCE>" in req.last_user:
        return Reply('<RESOURCE>{"port_health": 6}</RESOURCE>')
    if "<HEALTH>" in req.last_user:
        return Reply("<HEALTH>6</HEALTH>")
    return scripted_reply(req)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.environ["MESA_DILEMMAS_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-pom-cache-")
    with WireServer(latency_s=args.latency, responder=caretaker) as server:
        llm = f"openai:bench-model@{server.url}/v1"
        options = {"answer_mode": "tags"}
        model = PortOfMarsModel(
            rng=args.seed,
            n_rounds=args.rounds,
            players={
                "groups": [{"llm": llm, "count": 5, "llm_options": options}],
                "roles": {"meeting": {"llm": llm, "llm_options": options}},
            },
        )
        trips = 0
        ask_all = model.broker.ask_all

        def counted(decisions):
            nonlocal trips
            if any(model.broker.policy_for(d).is_async for d in decisions):
                trips += 1
            return ask_all(decisions)

        model.broker.ask_all = counted
        start = time.perf_counter()
        while model.running:
            model.step()
        wall = time.perf_counter() - start
        calls = server.state.requests
    rounds = model.round
    asked = sum(r["asked"] for r in model.broker.stats.records())
    # a corrective re-ask is one more call after the first one in its round-trip (an upper
    # bound on the extra sequential time: re-asks of the same phase also overlap)
    reasks = sum(r["retries"] for r in model.broker.stats.records())
    bound = 1.25 * (trips + reasks) * args.latency
    print(f"rounds played          {rounds}  (collapsed: {model.collapsed})")
    print(f"decisions asked        {asked}  ({asked / rounds:.1f} a round)")
    print(f"provider calls         {calls}  ({calls / rounds:.1f} a round, re-asks included)")
    print(f"sequential round-trips {trips}  ({trips / rounds:.1f} a round)")
    print(f"corrective re-asks     {reasks}")
    print(f"wall time              {wall:.2f} s")
    print(f"pure latency: trips x latency = {trips * args.latency:.2f} s")
    verdict = "OK" if wall <= bound else "SLOW"
    print(f"bound 1.25 x (trips + re-asks) x latency = {bound:.2f} s  -> {verdict}")
    print(f"all calls one after another would take {calls * args.latency:.1f} s")


if __name__ == "__main__":
    main()
