"""Run every bundled scenario at a tiny size and print a fingerprint of its numbers.

Used to show that a change of layout changes no result: run it on two commits and compare
(``python scripts/scenario_fingerprints.py --out before.json`` on one, ``--out after.json`` on
the other, then ``--compare before.json after.json``). Each scenario runs with one replication,
a few rounds and, for LLM scenarios, the first value of every grid axis (the embedded model, so
no key and no network). The fingerprint is a hash of ``runs.parquet`` and ``steps.parquet``
(rows sorted, floats rounded to 10 significant digits; wall-time and token-timing columns left
out) plus ``summary.json`` without its wall times.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pandas as pd

#: the checkout this script belongs to (paths inside it are compared relative to it)
CHECKOUT = Path(__file__).resolve().parent.parent
TIMING = ("seconds", "wall", "elapsed", "latency", "duration", "_time_s", "timestamp")


def uses_llm(raw: dict) -> bool:
    """Whether a scenario seats LLM players (or an LLM meeting writer)."""
    text = json.dumps(raw)
    return '"llm' in text or "llm =" in text


def tiny_overrides(raw: dict) -> list[str]:
    experiment = str(raw.get("experiment", "batch"))
    if experiment.startswith("self_play"):
        return ["options.samples=2", "options.group_sizes=[4]", "options.rounds=5"]
    if experiment.startswith("cultural_evolution"):
        return [
            "options.runs=1",
            "options.population=32",
            "options.survivors=8",
            "options.max_generations=2",
            "options.group_sizes=[4]",
        ]
    out = ["replications=1", f"max_steps={min(4, int(raw.get('max_steps', 4)))}"]
    if uses_llm(raw):  # LLM scenarios: one cell, one round, few agents
        out[-1] = "max_steps=1"
        params = raw.get("params") or {}
        for key in ("n_agents", "llm_agents"):
            if key in params:
                out.append(f"{key}=3")
        for axis, values in (raw.get("grid") or {}).items():
            if isinstance(values, list) and values:
                out.append(f"grid.{axis}={json.dumps(values[:1])}")
    return out


def table_hash(path: Path) -> str:
    if not path.exists():
        return "-"
    df = pd.read_parquet(path)
    keep = [c for c in df.columns if not any(t in c.lower() for t in TIMING)]
    df = df[keep]
    for col in df.columns:
        if pd.api.types.is_float_dtype(df[col]):
            df[col] = df[col].map(lambda v: f"{v:.10g}")
        else:
            df[col] = df[col].astype(str)
    rows = sorted(df.astype(str).agg("|".join, axis=1)) if len(df) else []
    return hashlib.sha256(("\n".join(sorted(keep)) + "\n" + "\n".join(rows)).encode()).hexdigest()[
        :16
    ]


def untimed(value):
    """``value`` without wall-time and latency entries (they differ between any two runs) and
    with the checkout's own location cut from paths (two commits checked out side by side)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not any(s in k.lower() for s in TIMING)}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    if isinstance(value, str) and value.startswith(str(CHECKOUT)):
        return "<checkout>" + value[len(str(CHECKOUT)) :]
    return value


def fingerprint(name: str, raw: dict, exe: str, work: Path) -> dict:
    out = work / name.replace("/", "-")
    cmd = [exe, "run", name, "--out", str(out), "--no-progress", "--yes"]
    for item in tiny_overrides(raw):
        cmd += ["--set", item]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1], "command": cmd[1:]}
    summary = (
        json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    )
    summary = untimed(summary)
    return {
        "runs": table_hash(out / "runs.parquet"),
        "steps": table_hash(out / "steps.parquet"),
        "summary": hashlib.sha256(
            json.dumps(
                summary.get("cells", summary.get("metrics", summary)), sort_keys=True, default=str
            ).encode()
        ).hexdigest()[:16],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the fingerprints here (JSON)")
    parser.add_argument("--exe", default=str(Path(sys.executable).with_name("mesa-dilemmas")))
    parser.add_argument("--only", help="run only scenarios whose name contains this")
    parser.add_argument(
        "--rule-only", action="store_true", help="leave out scenarios with LLM players"
    )
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        same = 0
        for name in sorted(set(before) | set(after)):
            ok = before.get(name) == after.get(name) and "error" not in (before.get(name) or {})
            same += ok
            print(f"{'same' if ok else 'DIFFERENT'}  {name}")
            if not ok:
                print(f"    before {before.get(name)}\n    after  {after.get(name)}")
        print(f"{same} of {len(set(before) | set(after))} scenarios identical")
        return 0 if same == len(set(before) | set(after)) else 1
    listing = subprocess.run([args.exe, "scenarios"], capture_output=True, text=True, check=True)
    names = [line.split()[0] for line in listing.stdout.splitlines() if "/" in line.split(" ")[0]]
    from mesa_dilemmas.scenarios.config import bundled_scenarios

    paths = bundled_scenarios()
    result: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if args.only and args.only not in name:
                continue
            raw = tomllib.loads(paths[name].read_text())
            if args.rule_only and uses_llm(raw):
                continue
            result[name] = fingerprint(name, raw, args.exe, Path(tmp))
            print(name, result[name], flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
