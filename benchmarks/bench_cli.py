"""Benchmark: how long the command line takes to answer (target: under 0.5 s each).

Times, as a user types them, ``--help``, ``scenarios``, ``params GAME`` and an argument error
(an unknown command, a missing argument), each run ``--repeat`` times in a fresh process,
interleaved A B A B so a busy moment hits every command alike; prints the median, the
fastest, the 1-minute load average before and after, and whether each is under the target.
``params`` loads the game's model, which imports Mesa (about a second of imports: scipy,
pandas, networkx); the others import neither Mesa nor any game.

Usage:  python benchmarks/bench_cli.py [--repeat 7] [--game fishery]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--game", default="fishery")
    args = parser.parse_args()
    exe = str(Path(sys.executable).with_name("mesa-dilemmas"))
    commands = {
        "--help": ["--help"],
        "scenarios": ["scenarios"],
        "unknown command": ["rnu"],
        "run (no scenario)": ["run"],
        f"params {args.game}": ["params", args.game],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeat):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run([exe, *argv], capture_output=True, check=False)
            times[name].append(time.perf_counter() - start)
    load_after = os.getloadavg()[0]
    print(
        f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after; {os.cpu_count()} cores"
    )
    print(f"{'command':<22} {'median s':>9} {'fastest s':>10}  under {TARGET_S} s")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<22} {median:>9.3f} {min(values):>10.3f}  {'yes' if median < TARGET_S else 'no'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
