"""Benchmark: each experiment of ``mesa-dilemmas reproduce`` with this wave's fast paths off
("before") and on ("after"), side by side in one run.

The fast paths are the fishery's vectorised engine (``execution.engine``: "mesa" before,
"auto" after) and the reference strategies' vectorised batch form
(``dilemmas.binary.engine.VECTOR_FORMS``: False before, True after); the results are identical
either way (``tests/test_fishery_vector.py``, ``tests/test_binary_vector.py``), only the time
differs.  Each measurement is a fresh process running the experiment's scenario at the mode's
sizes on one core (``processes = 1``), timed in CPU seconds (the process and its children)
beside the wall time; the pairs are run A B A B (``--repeats``), and the machine's load is
printed with every line.  Experiments with neither fast path (Port of Mars) are timed once per
repeat as a control.

    python benchmarks/bench_reproduce.py [--mode quick|full|tiny] [--only KEY ...] [--repeats 1]

``--mode full`` with the fast paths off takes about an hour (paper 002's cultural evolution
alone about 10 minutes a game); the default ``quick`` about 5 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
import mesa_dilemmas.dilemmas.binary.engine as engine
from mesa_dilemmas.scenarios.runner import run_scenario
scenario, out, fast, overrides = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1", json.loads(sys.argv[4])
engine.VECTOR_FORMS = fast
if not fast:
    overrides.append("execution.engine=mesa")
start = time.perf_counter()
run_scenario(scenario, out_dir=out, processes=1, overrides=overrides, progress=False)
print(json.dumps({"wall": time.perf_counter() - start}))
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(scenario: str, overrides: list[str], fast: bool, work: Path) -> tuple[float, float]:
    """(CPU s, wall s) of one run of ``scenario`` in a fresh process."""
    out = Path(tempfile.mkdtemp(dir=work)) / "run"
    before = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            scenario,
            str(out),
            "1" if fast else "0",
            json.dumps(overrides),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{scenario}: {done.stderr.strip().splitlines()[-1:]}")
    return children_cpu() - before, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("tiny", "quick", "full"), default="quick")
    ap.add_argument("--only", nargs="*", default=None, help="experiment keys (default: all)")
    ap.add_argument("--repeats", type=int, default=1, help="A B pairs per experiment")
    args = ap.parse_args()

    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
    from mesa_dilemmas.reproduction import registered_claims
    from mesa_dilemmas.scenarios.config import load_scenario

    experiments, _, _ = registered_claims()
    if args.only:
        experiments = [e for e in experiments if e.key in args.only]
    print(
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"({os.cpu_count()} cores); mode {args.mode}, one process per run"
    )
    print(
        f"{'experiment':<14} {'scenario':<36} {'pair':>4} {'before CPU s':>12} "
        f"{'after CPU s':>11} {'ratio':>7} {'wall b/a s':>13} {'load':>5}"
    )
    totals = [0.0, 0.0]
    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as tmp:
        work = Path(tmp)
        for exp in experiments:
            scenario, _ = load_scenario(exp.scenario)
            model = game_model(scenario.game)
            binary = scenario.experiment.split(":")[0] in ("self_play", "cultural_evolution")
            has_fast = binary or model is FisheryModel
            overrides = exp.overrides(args.mode)
            for pair in range(1, args.repeats + 1):
                load = os.getloadavg()[0]
                b_cpu, b_wall = measure(exp.scenario, list(overrides), False, work)
                # (without a fast path the same run again is the control)
                a_cpu, a_wall = measure(exp.scenario, list(overrides), True, work)
                totals[0] += b_cpu
                totals[1] += a_cpu
                print(
                    f"{exp.key:<14} {exp.scenario:<36} {pair:>4} {b_cpu:>12.1f} {a_cpu:>11.1f} "
                    f"{b_cpu / max(a_cpu, 1e-9):>6.1f}x {b_wall:>6.1f}/{a_wall:<6.1f} "
                    f"{load:>5.2f}{'' if has_fast else '  (no fast path: control)'}",
                    flush=True,
                )
    print(
        f"all experiments, CPU s: before {totals[0]:.1f}, after {totals[1]:.1f} "
        f"({totals[0] / max(totals[1], 1e-9):.1f}x); load average at end: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
