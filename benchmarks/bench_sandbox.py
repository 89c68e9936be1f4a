"""Benchmark: self-play batches of file strategies in the sandbox vs in-process.

Plays the same batches (about ``--players`` seats each, public goods, 20
rounds) of a published-format strategy set (the test fixtures in
tests/strategy_corpus/published/, which use numpy and global random like
LLM-written code does) at n = 4, 16, 64, 256:

* in-process: the classes imported here and played as trusted entries (what
  the engine did before the sandbox);
* sandbox: loaded as untrusted, each batch played whole in the worker, then
  replayed here from the returned actions.

Prints the wall time of each and the ratio (target: <= 1.25); the worker's
start-up (paid once per process) is reported separately.

Usage:  python benchmarks/bench_sandbox.py [--players 4096] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from mesa_dilemmas.agents.strategies import StrategyEntry, load_strategy_set
from mesa_dilemmas.agents.strategies.loader import _import_path
from mesa_dilemmas.agents.strategies.published import adapt, published_classes
from mesa_dilemmas.agents.strategies.sandbox import default_sandbox
from mesa_dilemmas.dilemmas.binary_game import make_game, play_batch

SET = (
    Path(__file__).parent.parent
    / "tests"
    / "strategy_corpus"
    / "published"
    / "public_goods_collective.py"
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--players", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    start = time.perf_counter()
    untrusted = list(load_strategy_set(SET))
    default_sandbox()  # started by the load
    print(
        f"worker start-up + loading the set: {time.perf_counter() - start:.2f} s (once per process)"
    )
    trusted = [
        StrategyEntry(name=c.__name__, cls=adapt(c)) for c in published_classes(_import_path(SET))
    ]
    print(f"{'n':>5} {'matches':>8} {'in-process s':>13} {'sandbox s':>10} {'ratio':>6}")
    for n in (4, 16, 64, 256):
        game = make_game("public_goods", n, 20, k=min(2.0, (1 + n) / 2))
        matches = max(1, args.players // n)
        rng = np.random.default_rng(n)
        picks = rng.integers(0, len(trusted), (matches, n))
        entropies = rng.integers(0, 2**63, size=matches)
        times = {}
        for label, entries in (("in", trusted), ("sb", untrusted)):
            lineups = [[entries[j] for j in row] for row in picks.tolist()]
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                result = play_batch(game, lineups, entropies)
                best = min(best, time.perf_counter() - t0)
            times[label] = (best, result.totals)
        ratio = times["sb"][0] / times["in"][0]
        print(f"{n:>5} {matches:>8} {times['in'][0]:>13.3f} {times['sb'][0]:>10.3f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
