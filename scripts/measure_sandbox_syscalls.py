"""Measure the system calls sandbox workers make after confinement (how :data:`.confine.ALLOW` was made).

Usage (Linux, needs ``strace``: ``apt-get install -y strace``)::

    python scripts/measure_sandbox_syscalls.py [--keep DIR]

Runs, under ``strace -ff``, the paths that run strategy code -- ``analyse
strategies`` on the published-format, LLM-style and benign fixture sets, a
self-play, a cultural evolution and a reference mix (the Mesa model) with them,
in the games the published-format fixtures are written for -- with the seccomp
filter in measuring mode (it denies nothing; every other layer is on).
For every worker it keeps the calls made *after* its filter was loaded and
prints each system call's count and, for those the allowlist restricts by
argument, the arguments seen.  The allowlist is that table minus what is not
needed; docs/sandbox.md has the result.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
CORPUS = ROOT / "tests" / "strategy_corpus"
#: run by ``python -c`` in the traced process: the CLI with the filter in measuring mode
DRIVER = (
    "import sys\n"
    "from mesa_dilemmas.sandbox import pool\n"
    "pool.MEASURE = True\n"
    "from mesa_dilemmas.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
_LINE = re.compile(r"^([a-z0-9_]+)\((.*)$")
#: calls whose arguments the allowlist restricts: show them
_ARGS = {"openat", "ioctl", "fcntl", "kill", "tgkill", "prlimit64"}


def commands(out: Path) -> list[list[str]]:
    """The runs traced (paths relative to the checkout, which is the runs' working directory).

    The games are those of the published-format fixtures (``<game>_<attitude>.py``)."""
    corpus = CORPUS.relative_to(ROOT)
    published = sorted((corpus / "published").glob("*.py"))
    game_of = {path: path.stem.rsplit("_", 1)[0] for path in published}
    first, second = published[-1], published[0]  # two games: one plays most paths
    sets = [
        str(first),
        str(corpus / "generated" / "collective"),
        str(corpus / "generated" / "exploitative"),
        str(corpus / "benign.py"),
    ]
    mix = [f"{corpus / 'benign.py'}:{name}" for name in ("LazyImports", "BigArrays")]
    return [
        ["analyse", "strategies", *sets, "--rollouts", "2", "--no-progress",
         "--out", str(out / "an")],
        ["run", f"{game_of[first]}/self_play", "--no-progress", "--out", str(out / "sp"),
         "--set", "options.group_sizes=[4]", "--set", "options.samples=20",
         "--set", f'options.collective_set="{sets[1]}"',
         "--set", f'options.exploitative_set="{sets[2]}"'],
        ["run", f"{game_of[second]}/cultural_evolution", "--no-progress", "--out", str(out / "ce"),
         "--set", "options.population=16", "--set", "options.survivors=4",
         "--set", "options.group_sizes=[4]", "--set", "options.runs=1",
         "--set", "options.max_generations=2",
         "--set", f'options.sets=["{second}", "reference_collective"]'],
        ["run", f"{game_of[first]}/reference_mix", "--no-progress", "--out", str(out / "rm"),
         "--set", "replications=1", "--set", "max_steps=3", "--set", "params.rounds=3",
         "--set", "grid.n_players=[4]",
         "--set", f"params.strategies={json.dumps([*mix, 'all_c', 'tft(0.5)'])}"],
    ]  # fmt: skip


def parse(
    traces: list[Path],
) -> tuple[collections.Counter[str], dict[str, collections.Counter[str]]]:
    """Calls after each worker's seccomp filter (one trace file per process, ``strace -ff``),
    summed over workers; the arguments of the calls the allowlist restricts by argument."""
    counts: collections.Counter[str] = collections.Counter()
    args: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for trace in traces:
        confined = False
        for line in trace.read_text(errors="replace").splitlines():
            m = _LINE.match(line)
            if m is None:
                continue
            name, rest = m.groups()
            if not confined:
                confined = name == "seccomp" and "SET_MODE_FILTER" in rest and rest.endswith("= 0")
                continue
            counts[name] += 1
            if name in _ARGS:
                shown = rest.split(") =")[0]
                if name == "openat":
                    shown = shown.split(", ")[-1]  # the flags
                elif name in ("ioctl", "fcntl"):
                    shown = shown.split(", ")[1]
                args[name][shown] += 1
    return counts, args


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", help="keep the traces and runs in this directory")
    opts = ap.parse_args()
    strace = shutil.which("strace")
    if strace is None:
        print("strace is needed: apt-get install -y strace", file=sys.stderr)
        return 2
    work = Path(opts.keep) if opts.keep else Path(tempfile.mkdtemp(prefix="sandbox-measure-"))
    work.mkdir(parents=True, exist_ok=True)
    total: collections.Counter[str] = collections.Counter()
    seen: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for i, cmd in enumerate(commands(work)):
        prefix = work / f"trace{i}"
        subprocess.run(
            [
                strace,
                "-ff",
                "-qq",
                "-s",
                "0",
                "-o",
                str(prefix),
                sys.executable,
                "-c",
                DRIVER,
                *cmd,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
        )
        counts, args = parse(sorted(work.glob(f"trace{i}.*")))
        total.update(counts)
        for name, c in args.items():
            seen[name].update(c)
        print(f"{' '.join(cmd[:2])}: {sum(counts.values())} calls after confinement")
    print(f"\n{'system call':<20} {'calls':>10}")
    for name, n in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"{name:<20} {n:>10}")
        for shown, k in seen[name].most_common(8) if name in seen else ():
            print(f"    {shown:<40} {k:>8}")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
