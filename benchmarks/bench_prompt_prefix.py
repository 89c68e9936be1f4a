"""How much of each LLM scenario's input is a prefix a provider can serve from its prompt cache.

For every LLM scenario named (default: the bundled fishery and Port of Mars LLM scenarios) and
every model named (default: the scenario's own -- the embedded model -- and two API models, whose
prompts differ: they read the answer schema first, so they get the schema a phase shares across
seats, :func:`mesa_dilemmas.llm.specs.shares_schema`), the first rounds of one replication of
one cell are played dry (``[llm] dry_run``: every prompt rendered exactly as a run sends it,
answered at random, no network, no key) and each call's prompt is compared with the earlier
prompts of the same model, in the order the provider reads a request (schema first or last):
its shared prefix is its longest common beginning with one of them.  Printed per scenario and
model: calls, input tokens, the shared-prefix share of the input tokens (the goal is >= 70%),
and the share a provider would actually serve from its cache (shared prefixes of at least 1,024
tokens, in steps of 128).

    python benchmarks/bench_prompt_prefix.py [--rounds 3] [--llm SPEC ...] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

DEFAULT = [
    "fishery/llm_societies",
    "fishery/llm_ablation",
    "port_of_mars/llm_svo",
    "port_of_mars/llm_traits",
    "port_of_mars/llm_cultural_groups",
    "port_of_mars/llm_leadership",
    "port_of_mars/llm_communication",
]


#: API models measured beside each scenario's own (a dry run needs no key)
API_MODELS = ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"]


def measure(name: str, rounds: int, llm: str | None = None) -> dict[str, Any]:
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.size import llm_estimate

    scenario, _ = load_scenario(name)
    # one cell, one replication: the share does not depend on how often it is repeated
    grid = {k: v[:1] for k, v in scenario.grid.items()}
    params = dict(scenario.params)
    if llm is not None:  # every LLM seat on this model
        params["llm"] = llm
        grid = {k: ([llm] if k == "llm" else v) for k, v in grid.items()}
    scenario = scenario.model_copy(update={"grid": grid, "params": params, "replications": 1})
    found = llm_estimate(scenario, rounds=rounds)
    if found is None:
        return {}
    calls = sum(r.tally.calls for r in found.rows)
    tokens = sum(r.tally.tokens_in for r in found.rows)
    shared = sum(r.tally.shared_in for r in found.rows)
    cached = sum(r.tally.cached_in for r in found.rows)
    return {
        "calls": calls,
        "tokens_in": tokens,
        "shared": shared / max(1, tokens),
        "cacheable": cached / max(1, tokens),
        "models": ", ".join(sorted({r.label for r in found.rows})),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="*", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--llm", action="append", help="models besides the scenario's own")
    args = ap.parse_args()
    os.environ.setdefault("MESA_DILEMMAS_CACHE_DIR", tempfile.mkdtemp(prefix="bench-prefix-"))
    print(
        f"{'scenario':<34} {'model':<40} {'calls':>6} {'input tokens':>13} "
        f"{'shared prefix':>14} {'cacheable':>10}"
    )
    for name in args.scenarios:
        for llm in (None, *(args.llm or API_MODELS)):
            m = measure(name, args.rounds, llm)
            if not m:
                print(f"{name:<34} (no LLM calls)")
                break
            print(
                f"{name:<34} {m['models'][:40]:<40} {m['calls']:>6,.0f} {m['tokens_in']:>13,.0f} "
                f"{m['shared']:>13.1%} {m['cacheable']:>10.1%}"
            )


if __name__ == "__main__":
    main()
