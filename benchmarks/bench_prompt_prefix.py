"""How much of each LLM scenario's input is a prefix a provider can serve from its prompt cache.

For every LLM scenario named (default: the bundled fishery and Port of Mars LLM scenarios) the
first rounds of one replication of one cell are played dry (``[llm] dry_run``: every prompt
rendered exactly as a run sends it, answered at random, no network) and each call's prompt is
compared with the earlier prompts of the same model: its shared prefix is its longest common
beginning with one of them.  Printed per scenario: calls, input tokens, the shared-prefix share
of the input tokens (the goal is >= 70%: the stable part of each prompt -- rules, phase -- comes
first, the agent's own part last) in the order the scenario's provider reads a request, the
same share with the answer schema read first (OpenAI's structured outputs, Anthropic's tools)
and last (Gemini, local servers), and the share a provider would actually serve from its
cache (shared prefixes of at least 1,024 tokens, in steps of 128).

    python benchmarks/bench_prompt_prefix.py [--rounds 3] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import os
import tempfile

DEFAULT = [
    "fishery/llm_societies",
    "fishery/llm_ablation",
    "port_of_mars/llm_svo",
    "port_of_mars/llm_traits",
    "port_of_mars/llm_cultural_groups",
    "port_of_mars/llm_leadership",
    "port_of_mars/llm_communication",
]


def measure(name: str, rounds: int) -> dict[str, float]:
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.size import llm_estimate

    scenario, _ = load_scenario(name)
    # one cell, one replication: the share does not depend on how often it is repeated
    grid = {k: v[:1] for k, v in scenario.grid.items()}
    scenario = scenario.model_copy(update={"grid": grid, "replications": 1})
    found = llm_estimate(scenario, rounds=rounds)
    if found is None:
        return {}
    calls = sum(r.tally.calls for r in found.rows)
    tokens = sum(r.tally.tokens_in for r in found.rows)
    shared = sum(r.tally.shared_in for r in found.rows)
    first = sum(r.tally.shared_schema_first for r in found.rows)
    last = sum(r.tally.shared_schema_last for r in found.rows)
    cached = sum(r.tally.cached_in for r in found.rows)
    return {"calls": calls, "tokens_in": tokens, "shared": shared / max(1, tokens),
            "first": first / max(1, tokens), "last": last / max(1, tokens),
            "cacheable": cached / max(1, tokens),
            "models": ", ".join(sorted({r.label for r in found.rows}))}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="*", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("MESA_DILEMMAS_CACHE_DIR", tempfile.mkdtemp(prefix="bench-prefix-"))
    print(f"{'scenario':<34} {'calls':>7} {'input tokens':>13} {'shared prefix':>14} "
          f"{'schema first':>13} {'schema last':>12} {'cacheable':>10}  models")  # fmt: skip
    for name in args.scenarios:
        m = measure(name, args.rounds)
        if not m:
            print(f"{name:<34} (no LLM calls)")
            continue
        print(f"{name:<34} {m['calls']:>7,.0f} {m['tokens_in']:>13,.0f} {m['shared']:>13.1%} "
              f"{m['first']:>13.1%} {m['last']:>12.1%} {m['cacheable']:>10.1%}  {m['models']}")  # fmt: skip


if __name__ == "__main__":
    main()
