"""Benchmarks of the LLM layer.

1. Phase concurrency: 10 agents x 4 decisions per round (four phases, every agent
   answering each phase at once through the broker) against a loopback
   OpenAI-wire test server that waits 200 ms per request.  With phases gathered
   concurrently a round should take about 4 x 200 ms, not 40 x 200 ms; the same
   40 calls are also made one after another for the ratio.

2. Local model throughput: generated tokens per second of the bundled
   SmolLM2-135M through this layer (prompt rendering, cache lookup, throttle,
   recording, parsing) against raw ``llama-cpp-python`` on the very same
   requests (messages, sampling seed, max_tokens, context reset).  The layer's calls are
   in the default "tags" mode with no re-ask, which SmolLM2-135M seldom satisfies: their
   fallbacks are counted and reported (``max_fallback_rate = 1``), not a reason to stop.

Each part prints the machine's load average (``os.getloadavg``) before and after it: the
numbers mean little on a machine that was busy with other work.

Run:  python benchmarks/bench_llm.py [--rounds 3] [--local-calls 6] [--skip-local | --only-local]
Nothing leaves the machine: the server listens on 127.0.0.1, the model is local.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback wire-format test server

from llm_servers.wire import WireServer  # noqa: E402

from mesa_dilemmas.agents import ChoiceSpec, Decision, DilemmaAgent, NumberSpec, Persona  # noqa: E402
from mesa_dilemmas.dilemmas.base import DilemmaModel  # noqa: E402
from mesa_dilemmas.llm import LLMSettings, make_policy, session  # noqa: E402

SPECS = [NumberSpec(0, 10, integer=True), ChoiceSpec(("cooperate", "defect"))]


class BenchGame(DilemmaModel):
    """n agents, ``phases`` phases per round, one decision per agent per phase."""

    PHASES = ("decide",)

    def __init__(self, policies: list, phases: int, rng: int = 1) -> None:
        super().__init__(rng=rng)
        self.n_phases = phases
        self.players = [DilemmaAgent(self, p, Persona()) for p in policies]

    def phase_decide(self) -> None:
        for k in range(self.n_phases):
            spec = SPECS[k % 2]
            fallback = 5 if k % 2 == 0 else "cooperate"
            self.ask_all(
                [
                    Decision(f"bench.k{k}", spec, {"phase": k}, a, self.round, fallback)
                    for a in self.players
                ]
            )


def bench_phases(agents: int, phases: int, rounds: int, latency: float) -> dict[str, float]:
    with WireServer(latency_s=latency) as server:
        spec = f"openai:bench@{server.url}/v1"
        policies = [make_policy(spec, cache=False, max_retries=0) for _ in range(agents)]
        game = BenchGame(policies, phases)
        game.step()  # warm-up: client creation, imports
        per_round = []
        for _ in range(rounds):
            start = time.perf_counter()
            game.step()
            per_round.append(time.perf_counter() - start)
        assert game.broker.stats.total("fallbacks") == 0

        async def sequential() -> float:
            start = time.perf_counter()
            for k in range(phases):
                for agent in game.players:
                    d = Decision(
                        f"seq.k{k}", SPECS[k % 2], {"phase": k}, agent, game.round + 1, None
                    )
                    await agent.policy.adecide(d)
            return time.perf_counter() - start

        seq = asyncio.run(sequential())
    concurrent = statistics.median(per_round)
    return {
        "round_s": concurrent,
        "ideal_s": phases * latency,
        "sequential_s": seq,
        "speedup": seq / concurrent,
        "vs_ideal": concurrent / (phases * latency),
    }


def load_text() -> str:
    """The 1-, 5- and 15-minute load averages, and the machine's cores."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def llama_build_text() -> str:
    """Which llama-cpp-python is timed: its file and what llama.cpp says it was built with."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    return f"{Path(llama_cpp.__file__).parent}  {info}"


def bench_local(calls: int, max_tokens: int, repeats: int) -> dict[str, float]:
    """Tokens/s of the same requests through the layer and through raw llama-cpp-python.

    A warm-up pass through the layer records the exact requests (messages, seed); the timed
    passes then interleave, call by call, a layer call and the raw call of the same request
    (alternating which goes first), so machine noise hits both sides alike."""
    from mesa_dilemmas.llm.accounting import load_calls
    from mesa_dilemmas.llm.backends.local import load_model

    decisions = [
        Decision(
            "bench.effort", SPECS[0], {"fish_in_lake": 40 + i, "your_last_catch": i}, None, 1, 5
        )
        for i in range(calls)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MESA_DILEMMAS_CACHE_DIR"] = str(Path(tmp) / "cache")
        # tags mode with no re-ask: SmolLM2-135M mostly misses the tags, so nearly every decision
        # falls back; the benchmark times the calls and counts the fallbacks instead of stopping
        options = {"cache": False, "answer_retries": 0, "max_fallback_rate": 1.0}
        policy = make_policy("local", max_tokens=max_tokens, run_seed=0, **options)
        local = policy.settings.local
        # a fixed window both sides share ("auto" would size it from the first prompt)
        window = 2048 if local.n_ctx == "auto" else local.n_ctx
        policy = make_policy(
            "local",
            max_tokens=max_tokens,
            run_seed=0,
            **options,
            local={**local.model_dump(), "n_ctx": window},
        )
        llm, lock = load_model(str(policy.spec.model), window, local.n_threads, local.n_batch)

        def raw(req: dict) -> int:
            with lock:
                llm.reset()
                out = llm.create_chat_completion(
                    messages=req["messages"],
                    max_tokens=req["max_tokens"],
                    temperature=req["temperature"],
                    seed=req["seed"],
                )
            return out["usage"]["completion_tokens"]

        layer_time = raw_time = 0.0
        layer_tokens = raw_tokens = 0
        layer_calls: list[float] = []
        raw_calls: list[float] = []
        decided = fallbacks = 0
        requests: list[dict] = []
        for rep in range(repeats + 1):  # pass 0 is the warm-up that records the requests
            run_dir = Path(tmp) / f"run{rep}"
            session.start_run(LLMSettings(), run_dir, resume=False)
            # a fresh policy per pass: same sample ids (decision counters), so the same requests
            policy = make_policy("local", max_tokens=max_tokens, run_seed=0, **options)
            for i, d in enumerate(decisions):
                order = ("layer", "raw") if (i + rep) % 2 == 0 else ("raw", "layer")
                for side in order:
                    if side == "raw" and rep == 0:
                        continue
                    start = time.perf_counter()
                    if side == "layer":
                        answer = asyncio.run(policy.adecide(d))
                        elapsed = time.perf_counter() - start
                        if rep:
                            layer_time += elapsed
                            layer_calls.append(elapsed)
                            decided += 1
                            fallbacks += int(answer.fell_back)
                    else:
                        raw_tokens += raw(requests[i])
                        elapsed = time.perf_counter() - start
                        raw_time += elapsed
                        raw_calls.append(elapsed)
            session.finish_run()
            recorded = list(load_calls(run_dir))
            if rep == 0:
                requests = [c["request"] for c in recorded]
            else:
                layer_tokens += sum(c["tokens_out"] for c in recorded)
    assert layer_tokens == raw_tokens, "the layer and raw llama.cpp must generate the same text"
    layer, raw_tps = layer_tokens / layer_time, raw_tokens / raw_time
    return {
        "layer_tps": layer,
        "raw_tps": raw_tps,
        "overhead": 1 - layer / raw_tps,
        "layer_call_s": statistics.mean(layer_calls),
        "raw_call_s": statistics.mean(raw_calls),
        "raw_call_median_s": statistics.median(raw_calls),
        "tokens_per_call": raw_tokens / len(raw_calls),
        "decisions": decided,
        "fallbacks": fallbacks,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--phases", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--local-calls", type=int, default=6)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    part = ap.add_mutually_exclusive_group()
    part.add_argument("--skip-local", action="store_true")
    part.add_argument("--only-local", action="store_true", help="only the local-model part")
    args = ap.parse_args()

    os.environ.setdefault("MESA_DILEMMAS_CACHE_DIR", tempfile.mkdtemp(prefix="bench-llm-cache-"))
    if not args.only_local:
        before = load_text()
        r = bench_phases(args.agents, args.phases, args.rounds, args.latency)
        n = args.agents * args.phases
        print(
            f"phase concurrency: {args.agents} agents x {args.phases} decisions/round, {args.latency * 1000:.0f} ms per call"
        )
        print(
            f"  wall time per round   {r['round_s']:.3f} s   (ideal {args.phases} x {args.latency:.1f} s = {r['ideal_s']:.3f} s; "
            f"{r['vs_ideal']:.2f}x ideal)"
        )
        print(f"  the same {n} calls one by one   {r['sequential_s']:.3f} s")
        print(f"  ratio sequential / concurrent   {r['speedup']:.1f}x")
        print(f"  machine   before: {before}; after: {load_text()}")
    if args.skip_local:
        return
    before = load_text()
    loc = bench_local(args.local_calls, args.max_tokens, args.repeats)
    print(
        f"local model (SmolLM2-135M, {args.local_calls} calls x up to {args.max_tokens} tokens, {args.repeats} interleaved passes)"
    )
    print(f"  llama-cpp-python    {llama_build_text()}")
    print(
        f"  through the layer   {loc['layer_tps']:.1f} tokens/s   ({loc['layer_call_s']:.3f} s per call)"
    )
    print(
        f"  raw llama-cpp       {loc['raw_tps']:.1f} tokens/s   ({loc['raw_call_s']:.3f} s per call, "
        f"median {loc['raw_call_median_s']:.3f} s, {loc['tokens_per_call']:.1f} tokens per call)"
    )
    print(f"  overhead            {loc['overhead'] * 100:.1f} %")
    print(
        f"  fallbacks           {loc['fallbacks']} of {loc['decisions']} timed decisions "
        "(tags mode, no re-ask; timed all the same)"
    )
    print(f"  machine             before: {before}; after: {load_text()}")


if __name__ == "__main__":
    main()
