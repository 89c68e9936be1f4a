"""Fault injection: an LLM endpoint failing about a third of its requests loses no decision.

10 agents x 4 decisions per round for ``--rounds`` rounds, through the broker, against the
loopback OpenAI-wire test server injecting 429s (with Retry-After), 500s, responses slower
than the client's timeout, truncated bodies, refusals and invalid answers.  Printed: the
faults injected (by kind), the requests the server saw, the attempts on the run record
(failed ones by HTTP status), and the decisions asked, recorded, answered by the model,
fallen back -- and lost (asked but neither answered nor recorded).

Run:  python benchmarks/bench_faults.py [--rounds 5] [--seed 11]
Nothing leaves the machine: the server listens on 127.0.0.1.
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
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_llm import BenchGame  # noqa: E402
from llm_servers.wire import Faults, WireServer  # noqa: E402

from mesa_dilemmas.llm import LLMSettings, make_policy, session  # noqa: E402

TRANSPORT = ("rate_limit", "server_error", "slow", "truncated")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    faults = Faults(
        rate_limit=0.09,
        server_error=0.09,
        slow=0.05,
        truncated=0.07,
        refusal=0.05,
        invalid=0.05,
        retry_after="0",
        slow_s=1.0,
        seed=args.seed,
    )
    with tempfile.TemporaryDirectory() as tmp, WireServer(faults) as server:
        os.environ["MESA_DILEMMAS_CACHE_DIR"] = str(Path(tmp) / "cache")
        run_dir = Path(tmp) / "run"
        settings = {"cache": False, "timeout_s": 0.5, "max_retries": 4}
        session.start_run(LLMSettings(**settings), run_dir, resume=False)
        policies = [
            make_policy(f"openai:test-model@{server.url}/v1", **settings) for _ in range(10)
        ]
        game = BenchGame(policies, phases=4)
        started = time.perf_counter()
        for _ in range(args.rounds):
            game.step()
        wall = time.perf_counter() - started
        summary = session.finish_run()
        import pandas as pd

        calls = pd.read_parquet(run_dir / "llm_calls.parquet")
        decisions = pd.read_parquet(run_dir / "llm_decisions.parquet")
        counts = server.state.counts
        stats = game.broker.stats
    injected = {k: counts[k] for k in (*TRANSPORT, "refusal", "invalid")}
    asked = stats.total("asked")
    print(f"requests served          {server.state.requests}")
    print(
        f"faults injected          {sum(injected.values())} "
        f"({sum(injected.values()) / server.state.requests:.0%}): {injected}"
    )
    print(f"attempts recorded        {len(calls)} (summary.attempts {summary['attempts']})")
    print(
        f"failed attempts recorded {summary['failed_attempts']} "
        f"(transport faults injected {sum(injected[k] for k in TRANSPORT)}), "
        f"by status {summary['errors_by_status']}"
    )
    print(f"retried attempts         {summary['retried_attempts']}")
    print(f"decisions asked          {asked}")
    print(f"decisions recorded       {len(decisions)}")
    print(f"answered by the model    {asked - stats.total('fallbacks')}")
    print(
        f"fell back                {stats.total('fallbacks')} "
        f"(parse failures {summary['parse_failures']}, call errors {summary['call_errors']})"
    )
    print(f"decisions lost           {asked - len(decisions)}")
    print(f"wall time                {wall:.1f} s")


if __name__ == "__main__":
    main()
