"""Benchmark: a Port of Mars game with five LLM players and the LLM meeting writer against the
loopback OpenAI-wire test server with a fixed latency per request (200 ms by default).

The calls of one phase go out concurrently (the broker gathers them), so a game should take
about (sequential round-trips) x latency, not (calls) x latency.  A round-trip is one broker
request that contains at least one LLM decision: a simultaneous phase (``ask_all``), or one
decision asked in turn (each trade answer, the two meeting calls).  Prints the wall time, the
bound 1.25 x (round-trips + corrective re-asks) x latency, the calls per round, the tokens
of the game (the loopback server reports usage at ~4 characters a token) and the process's
CPU time (client and the in-process server together).  The game runs in a run session, as a
real run does, so every call is cached and recorded.

Run:  python benchmarks/bench_port_of_mars_llm.py [--rounds 9] [--latency 0.2] [--seed 1]
Nothing leaves the machine: the server listens on 127.0.0.1 and answers from a script.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback wire-format test server

from llm_servers.responder import NormalizedRequest, Reply, scripted_reply  # noqa: E402
from llm_servers.wire import WireServer  # noqa: E402

from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel  # noqa: E402
from mesa_dilemmas.llm import LLMSettings, session  # noqa: E402
from mesa_dilemmas.llm.accounting import load_calls  # noqa: E402
from mesa_dilemmas.llm.checks import resolve  # noqa: E402
from mesa_dilemmas.llm.client import get_client  # noqa: E402
from mesa_dilemmas.llm.request import ChatRequest, Message  # noqa: E402


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
    run_dir = Path(tempfile.mkdtemp(prefix="bench-pom-run-"))
    with WireServer(latency_s=args.latency, responder=caretaker) as server:
        session.start_run(LLMSettings(), run_dir, resume=False)
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
        windows: list[tuple[float, float]] = []  # (start, end) of every LLM round-trip
        ask_all = model.broker.ask_all

        def counted(decisions):
            if not any(model.broker.policy_for(d).is_async for d in decisions):
                return ask_all(decisions)
            begin = time.time()
            try:
                return ask_all(decisions)
            finally:
                windows.append((begin, time.time()))

        model.broker.ask_all = counted
        # start-up is not the game: load the SDK and open a connection with one call first
        # (the SDK's import and platform probe take 0.3-2 s, once per process)
        warm = get_client(resolve(llm, LLMSettings()), LLMSettings())
        asyncio.run(warm.call_uncached(ChatRequest((Message("user", "Hi."),), 0.0, 4, 0)))
        warmup_calls = server.state.requests
        start, cpu_start = time.perf_counter(), time.process_time()
        while model.running:
            model.step()
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        calls = server.state.requests - warmup_calls
        peak = server.state.peak_in_flight
        summary = session.finish_run()
    rounds = model.round
    asked = sum(r["asked"] for r in model.broker.stats.records())
    reasks = sum(r["retries"] for r in model.broker.stats.records())
    # the sequential round-trips: every broker request with an LLM decision is one, and a
    # corrective re-ask one more after it (re-asks of the same request overlap: a request
    # whose deepest decision needed two re-asks costs three round-trips, however many asked)
    attempts = [(c["ts"], c["attempt"]) for c in load_calls(run_dir) if c["source"] == "provider"]
    phases = len(windows)
    trips = sum(
        1 + max((a for t, a in attempts if begin <= t <= end), default=0) for begin, end in windows
    )
    bound = 1.25 * trips * args.latency
    print(f"rounds played          {rounds}  (collapsed: {model.collapsed})")
    print(f"decisions asked        {asked}  ({asked / rounds:.1f} a round)")
    print(f"provider calls         {calls}  ({calls / rounds:.1f} a round, re-asks included)")
    print(f"corrective re-asks     {reasks}")
    print(f"most calls in flight   {peak}  (the server's count: a phase's calls go out together)")
    print(
        f"broker requests        {phases}  ({phases / rounds:.1f} a round, LLM decisions in each)"
    )
    print(f"sequential round-trips {trips}  ({trips / rounds:.1f} a round, re-ask depth included)")
    tokens_in, tokens_out = summary.get("tokens_in", 0), summary.get("tokens_out", 0)
    print(f"tokens                 {tokens_in} in, {tokens_out} out (server's usage)")
    print(f"wall time              {wall:.2f} s")
    print(f"CPU time               {cpu:.2f} s  ({1000 * cpu / max(calls, 1):.1f} ms a call)")
    print(f"pure latency: round-trips x latency = {trips * args.latency:.2f} s")
    verdict = "OK" if wall <= bound else "SLOW"
    print(
        f"bound 1.25 x round-trips x latency = {bound:.2f} s  -> {verdict}  ({wall / max(bound / 1.25, 1e-9):.2f}x)"
    )
    print(f"all calls one after another would take {calls * args.latency:.1f} s")


if __name__ == "__main__":
    main()
