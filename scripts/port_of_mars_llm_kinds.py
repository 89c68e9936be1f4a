"""Is every Port of Mars decision kind answerable by a model?  Ask it real decisions of each kind.

The decisions come from rule-player games (events from round 1, so votes, event choices and the
Breakdown of Trust's keep question come up; leadership announced), taken as the game asked
them; a model answers each with the bundled scenarios' settings (native mode, reasoning
"auto": a reasoning field for API models, none for the embedded one; temperature 0.7,
max_tokens 400) and the layer's corrective re-asks.  Prints,
per kind: decisions, parse failures, re-asks, fallbacks and the last error.  This complements
a full game, in which the rarer kinds (event votes and choices) may not come up at all.

Run:  python scripts/port_of_mars_llm_kinds.py [--model local] [--kinds vote,event_choice]
          [--per-kind 1] [--seed 1] [--reasoning auto|true|false]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter

from mesa_dilemmas.agents.decisions import Decision
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.llm import make_policy
from mesa_dilemmas.llm.population import register_game_prompts


def collect(seeds: range, rounds: int = 4) -> dict[str, list[Decision]]:
    """The decisions rule games ask, by kind (short kind names: "vote", "invest", ...)."""
    out: dict[str, list[Decision]] = {}
    for seed in seeds:
        game = PortOfMarsModel(rng=seed, events_in_first_round=True, leadership="announce")
        game.texts_for_all = True  # the LLM prompts' texts, although rule players answer
        ask_all = game.broker.ask_all

        def spy(decisions, ask_all=ask_all):
            for d in decisions:
                out.setdefault(d.kind.rsplit(".", 1)[-1], []).append(d)
            return ask_all(decisions)

        game.broker.ask_all = spy
        for _ in range(rounds):
            if game.running:
                game.step()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="local")
    ap.add_argument("--kinds", default="", help="comma-separated short kinds (default: all)")
    ap.add_argument("--per-kind", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reasoning", choices=("auto", "true", "false"), default="auto")
    args = ap.parse_args()
    reasoning = args.reasoning if args.reasoning == "auto" else args.reasoning == "true"
    os.environ.setdefault("MESA_DILEMMAS_CACHE_DIR", tempfile.mkdtemp(prefix="pom-kinds-"))
    register_game_prompts(PortOfMarsModel)
    found = collect(range(args.seed, args.seed + 6))
    kinds = [k for k in args.kinds.split(",") if k] or sorted(found)
    policy = make_policy(
        args.model,
        answer_mode="native",
        reasoning=reasoning,
        temperature=0.7,
        max_tokens=400,
        run_seed=args.seed,
    )
    print("| decision kind | decisions | parse failures | re-asks | fallbacks | last error |")
    print("|---|---|---|---|---|---|")
    for kind in kinds:
        asked = found.get(kind, [])[: args.per_kind]
        counts: Counter[str] = Counter()
        error = ""
        for decision in asked:
            answer = policy.decide(decision)
            counts["parse_failures"] += answer.parse_failures
            counts["retries"] += answer.retries
            counts["fallbacks"] += int(answer.fell_back)
            error = answer.error or error
        print(
            f"| {kind} | {len(asked)} | {counts['parse_failures']} | {counts['retries']} | "
            f"{counts['fallbacks']} | {error[:100]} |"
        )


if __name__ == "__main__":
    main()
