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

With ``--memo``: self-play (n = 4 and 16, every split, 200 samples) on the
LLM-style fixture sets (tests/strategy_corpus/generated/, determinism marked by
the checks) with and without memoising the deterministic strategies; the
results are asserted identical, the speed-up and the memo's hit rate printed.
The worker is restarted before each run, so its memo starts cold.

Usage:  python benchmarks/bench_sandbox.py [--players 4096] [--repeat 3] [--memo]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import StrategyEntry, load_strategy_set
from mesa_dilemmas.dilemmas.binary.strategies.loader import _import_path
from mesa_dilemmas.dilemmas.binary.strategies.published import adapt, published_classes
from mesa_dilemmas.sandbox import default_sandbox

GENERATED = Path(__file__).parent.parent / "tests" / "strategy_corpus" / "generated"
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
    ap.add_argument("--memo", action="store_true", help="also: self-play with/without memoisation")
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
        times = {"in": float("inf"), "sb": float("inf")}
        lineups = {
            label: [[entries[j] for j in row] for row in picks.tolist()]
            for label, entries in (("in", trusted), ("sb", untrusted))
        }
        play_batch(game, lineups["sb"][:1], entropies[:1])  # the worker is (re)started outside
        for _ in range(args.repeat):  # interleaved, so a busy moment hits both alike
            for label in ("in", "sb"):
                t0 = time.perf_counter()
                play_batch(game, lineups[label], entropies)
                times[label] = min(times[label], time.perf_counter() - t0)
        ratio = times["sb"] / times["in"]
        print(f"{n:>5} {matches:>8} {times['in']:>13.3f} {times['sb']:>10.3f} {ratio:>6.2f}")
    if args.memo:
        memo_benchmark(args.repeat)


def memo_benchmark(repeat: int) -> None:
    """Self-play on the LLM-style fixture sets with and without memoising deterministic ones."""
    import json
    import shutil
    import tempfile

    import pandas as pd

    from mesa_dilemmas.dilemmas.binary import sandboxed as sb
    from mesa_dilemmas.dilemmas.binary.experiments.self_play import SelfPlayExperiment
    from mesa_dilemmas.dilemmas.binary.experiments.strategy_writing import mark_determinism
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.experiment import RunContext

    root = Path(tempfile.mkdtemp())
    shutil.copytree(GENERATED, root, dirs_exist_ok=True)
    for attitude in ("collective", "exploitative"):
        mark_determinism(root / attitude, "public_goods")
    print("\nself-play, LLM-style fixture sets (public goods, 200 samples per split, every split)")
    print(f"{'n':>5} {'plain s':>8} {'memo s':>8} {'speed-up':>9} {'hit rate':>9}")
    for n in (4, 16):
        sc, opts = load_scenario(
            "public_goods/self_play",
            [
                f"options.group_sizes=[{n}]",
                f"options.collective_set={json.dumps(str(root / 'collective'))}",
                f"options.exploitative_set={json.dumps(str(root / 'exploitative'))}",
            ],
        )
        best = {False: float("inf"), True: float("inf")}
        runs, rate = {}, None
        for _ in range(repeat):
            for on in (False, True):
                sb.set_memoise(on)
                sb._MEMO.clear()  # in this process; the worker's memo starts cold in a new one
                from mesa_dilemmas.sandbox import close_all

                close_all()  # every file's worker: their memos start cold
                t0 = time.perf_counter()
                res = SelfPlayExperiment().run(sc, opts, RunContext(root / "run", 1, False))
                best[on] = min(best[on], time.perf_counter() - t0)
                runs[on] = res.runs
                rate = res.summary["memo"]["hit_rate"] if on else rate
        pd.testing.assert_frame_equal(runs[False], runs[True])  # identical results
        print(
            f"{n:>5} {best[False]:>8.2f} {best[True]:>8.2f} {best[False] / best[True]:>9.2f} "
            f"{rate:>9.2f}"
        )
    sb.set_memoise(True)


if __name__ == "__main__":
    main()
