"""Peak memory of a sweep at 1x and 10x its number of runs: it should stay flat.

    python benchmarks/bench_memory.py [--scenario fishery/beta_growth_sweep]
                                      [--replications 2] [--factor 10] [--max-steps 100]

Runs the same scenario twice, each time in a fresh Python process (``mesa-dilemmas run ...
--processes 1``, so every run is simulated in the one process that is measured), with
``replications`` and ``factor x replications``, and prints each run's peak resident memory
(``ru_maxrss`` of the child, from ``resource.getrusage(RUSAGE_CHILDREN)`` in a fresh wrapper
process per size), its wall time, the size of ``steps.parquet`` and the ratio of the two peaks.
A run streams its chunks to disk and assembles ``steps.parquet``/``agents.parquet`` chunk by
chunk, so the ratio should be close to 1 (target: at most about 1.3) while the tables grow by
``factor``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

#: a fresh process that runs the command given as JSON and prints its children's peak RSS (KiB)
WRAPPER = (
    "import json, resource, subprocess, sys; "
    "subprocess.run(json.loads(sys.argv[1]), check=True, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def measure(scenario: str, replications: int, max_steps: int, out: Path) -> dict[str, float]:
    command = [
        sys.executable,
        "-m",
        "mesa_dilemmas",
        "run",
        scenario,
        "--out",
        str(out),
        "--processes",
        "1",
        "--no-progress",
        "--set",
        f"replications={replications}",
        "--set",
        f"max_steps={max_steps}",
    ]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, json.dumps(command)],
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    steps = out / "steps.parquet"
    return {
        "runs": pq.read_metadata(out / "runs.parquet").num_rows,
        "peak_mib": int(done.stdout.split()[-1]) / 1024,  # Linux: KiB
        "wall_s": wall,
        "steps_mib": steps.stat().st_size / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="fishery/beta_growth_sweep")
    parser.add_argument("--replications", type=int, default=2)
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--max-steps", type=int, default=100)
    args = parser.parse_args()
    print(f"{args.scenario}, max_steps={args.max_steps}, --processes 1")
    print(
        f"{'size':>5} {'replications':>12} {'runs':>6} {'peak RSS MiB':>13} {'wall s':>8} "
        f"{'steps.parquet MiB':>18}"
    )
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, reps in (
            ("1x", args.replications),
            (f"{args.factor}x", args.replications * args.factor),
        ):
            rows[label] = row = measure(args.scenario, reps, args.max_steps, Path(tmp) / label)
            print(
                f"{label:>5} {reps:>12} {row['runs']:>6} {row['peak_mib']:>13.1f} {row['wall_s']:>8.1f} "
                f"{row['steps_mib']:>18.2f}",
                flush=True,
            )
    small, large = rows.values()
    print(
        f"peak RSS ratio {args.factor}x / 1x: {large['peak_mib'] / small['peak_mib']:.2f} "
        f"(steps.parquet grew {large['steps_mib'] / small['steps_mib']:.1f}x)"
    )


if __name__ == "__main__":
    main()
