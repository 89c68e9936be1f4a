"""The embedded model reusing what the previous call evaluated, on the bundled LLM scenarios.

Each scenario named (default: the fishery's LLM society and Port of Mars's SVO players) is played
once as a dry run (``[llm] dry_run``: every prompt rendered exactly as a run sends it, answered
at random, nothing called), at a small size, and its prompts are kept in the order the run made
them.  Those requests then go through the embedded backend (``local``) in that order, in passes
that alternate A B A B:

- **reuse**: the backend as it is -- each prompt evaluated in ``EVAL_GRID``-token segments,
  the segments it shares with the previous call's prompt taken from the context;
- **fresh**: the same backend with what the previous call left forgotten before every call, so
  every segment is evaluated.

Printed per scenario: calls, prompt tokens, the share of them reused, seconds per pass for each
side and the ratio; and whether both sides gave the same text for every request (they must:
a reused segment is the state evaluating it builds).  The machine's load average is printed
before and after: the numbers mean little on a machine busy with other work.

    python benchmarks/bench_local_prefix.py [--passes 2] [--calls 24] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

#: each scenario at a size whose dry run is quick; the calls are cut at --calls
DEFAULT = {
    "fishery/llm_societies": [
        "replications=1",
        "max_steps=2",
        "params.n_agents=3",
        "params.llm_agents=3",
        "grid.growth_rate=[0.6]",
        "grid.altruism_ratio=[1.0]",
    ],
    "port_of_mars/llm_svo": ["replications=1", "max_steps=1", "grid.llm_players=[5]"],
}


def requests_of(name: str, overrides: list[str], out: Path) -> list[Any]:
    """The requests a dry run of the scenario makes, in the order it makes them."""
    from mesa_dilemmas.llm.accounting import load_calls
    from mesa_dilemmas.llm.request import ChatRequest, Message
    from mesa_dilemmas.scenarios.runner import run_scenario

    run_scenario(
        name,
        out_dir=out,
        processes=1,
        progress=False,
        overrides=[*overrides, "llm.dry_run=true", "llm.cache=false"],
    )
    found = []
    for call in load_calls(out):
        r = call["request"]
        found.append(
            ChatRequest(
                tuple(Message(m["role"], m["content"]) for m in r["messages"]),
                r["temperature"],
                r["max_tokens"],
                r["seed"],
                r.get("top_p"),
                r.get("schema"),
            )
        )
    return found


def bench(requests: list[Any], passes: int) -> dict[str, Any]:
    from mesa_dilemmas.llm import make_policy
    from mesa_dilemmas.llm.backends import local

    backend = make_policy("local", cache=False).client.backend
    reused: list[int] = []
    head = local.evaluate_prompt_head

    def counting(llm: Any, tokens: Any, key: Any) -> int:
        n = head(llm, tokens, key)
        reused.append(n)
        return n

    local.evaluate_prompt_head = counting
    times: dict[str, list[float]] = {"reuse": [], "fresh": []}
    texts: dict[str, list[str]] = {}
    prompt = 0
    try:
        for k in range(2 * passes):
            side = ("reuse", "fresh")[k % 2]
            reused.clear()
            local._HELD.clear()
            got = []
            start = time.perf_counter()
            for request in requests:
                if side == "fresh":
                    local._HELD.clear()
                got.append(backend.complete_sync(request))
            times[side].append(time.perf_counter() - start)
            texts.setdefault(side, [r.text for r in got])
            if side == "reuse":
                prompt, shared = sum(r.tokens_in for r in got), sum(reused)
    finally:
        local.evaluate_prompt_head = head
    return {
        "calls": len(requests),
        "tokens_in": prompt,
        "reused": shared / max(1, prompt),
        "reuse_s": min(times["reuse"]),
        "fresh_s": min(times["fresh"]),
        "same_text": texts["reuse"] == texts["fresh"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="*", default=list(DEFAULT))
    ap.add_argument("--passes", type=int, default=2, help="A B pairs per scenario")
    ap.add_argument("--calls", type=int, default=24, help="the first N requests of each run")
    args = ap.parse_args()
    os.environ.setdefault("MESA_DILEMMAS_CACHE_DIR", tempfile.mkdtemp(prefix="bench-local-"))
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"{'scenario':<26} {'calls':>5} {'prompt tokens':>13} {'reused':>7} "
        f"{'reuse s':>8} {'fresh s':>8} {'fresh/reuse':>11} {'same text':>9}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.scenarios:
            requests = requests_of(name, DEFAULT.get(name, []), Path(tmp) / name.replace("/", "_"))
            m = bench(requests[: args.calls], args.passes)
            print(
                f"{name:<26} {m['calls']:>5} {m['tokens_in']:>13,} {m['reused']:>7.0%} "
                f"{m['reuse_s']:>8.1f} {m['fresh_s']:>8.1f} {m['fresh_s'] / m['reuse_s']:>11.2f} "
                f"{'yes' if m['same_text'] else 'NO':>9}"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
