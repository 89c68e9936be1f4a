"""Local process pool vs Ray, side by side, on the same experiments and the same machine.

    python benchmarks/bench_backends.py [--replications 5] [--samples 60] [--only sweep|self_play]
                                        [--repeat 1]

Runs the fishery beta x r sweep (``fishery/beta_growth_sweep``, 63 cells) and a public-goods
self-play (``public_goods/self_play``) with ``local`` at 1 and 2 processes and ``ray`` at 1 and
2 workers (a local Ray instance started per run, as ``mesa-dilemmas run --backend ray`` does),
checks that every configuration produced the same ``runs.parquet``, and prints wall time,
runs/s and each configuration's time relative to the local pool with the same worker count.
Ray's start-up (a few seconds) is inside the wall time, as a user meets it; the "warm" column
subtracts the time of starting and stopping an idle local Ray instance, measured separately.
With ``--repeat N`` every configuration runs N times, interleaved, and the fastest is printed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from mesa_dilemmas.scenarios.runner import run_scenario

CONFIGS = [("local", 1), ("local", 2), ("ray", 1), ("ray", 2)]


def ray_startup_seconds(workers: int) -> float:
    import ray

    started = time.perf_counter()
    ray.init(
        num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False
    )
    ray.get(ray.remote(lambda: 1).remote())
    ray.shutdown()
    return time.perf_counter() - started


def bench(name: str, overrides: list[str], root: Path, repeat: int = 1) -> None:
    """Each configuration ``repeat`` times, interleaved; the fastest of each is printed (on a
    busy machine the fastest is the one least slowed by other work)."""
    print(f"\n{name} ({' '.join(overrides)}); load average {os.getloadavg()[0]:.1f}", flush=True)
    frames, best = {}, {}
    for attempt in range(repeat):
        for backend, workers in CONFIGS:
            out = root / f"{name.replace('/', '-')}-{backend}-{workers}-{attempt}"
            started = time.perf_counter()
            run_scenario(
                name,
                out_dir=out,
                overrides=overrides,
                processes=workers,
                progress=False,
                execution={"backend": backend},
            )
            wall = time.perf_counter() - started
            frames[backend, workers] = pd.read_parquet(out / "runs.parquet")
            warm = wall - ray_startup_seconds(workers) if backend == "ray" else wall
            previous = best.get((backend, workers), (float("inf"), float("inf")))
            best[backend, workers] = min(previous, (wall, warm), key=lambda t: t[1])
            print(
                f"  ({backend} {workers}, attempt {attempt + 1}: {wall:.2f} s, warm {warm:.2f} s)",
                flush=True,
            )
    print(
        f"{'backend':>8} {'workers':>7} {'runs':>6} {'wall s':>8} {'runs/s':>8} {'warm s':>8} "
        f"{'vs local':>9}"
    )
    for (backend, workers), (wall, warm) in best.items():
        n = len(frames[backend, workers])
        ratio = warm / best["local", workers][1] if backend == "ray" else 1.0
        print(
            f"{backend:>8} {workers:>7} {n:>6} {wall:>8.2f} {n / wall:>8.1f} {warm:>8.2f} "
            f"{ratio:>8.2f}x"
        )
    reference = frames["local", 1]
    for key, frame in frames.items():
        pd.testing.assert_frame_equal(reference, frame, obj=f"runs of {key}")
    print(
        f"  identical runs.parquet in every configuration; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=5)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--only", choices=["sweep", "self_play"], help="run one experiment")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration (fastest)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.only in (None, "sweep"):
            bench(
                "fishery/beta_growth_sweep",
                [f"replications={args.replications}"],
                root,
                args.repeat,
            )
        if args.only in (None, "self_play"):
            bench("public_goods/self_play", [f"options.samples={args.samples}"], root, args.repeat)


if __name__ == "__main__":
    main()
