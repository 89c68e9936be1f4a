"""Published-format strategy files: identity with, and speed against, the authors' engine.

``python benchmarks/bench_published.py identity --authors SRC FILE [FILE ...]``
    plays random lineups of each file's strategies in our engine and in the authors'
    (``SRC`` = the ``src`` directory of a checkout of ``willis-richard/emergent_llm`` at
    the commit whose format the files use), and prints the largest payoff difference.
``python benchmarks/bench_published.py time [--authors SRC] FILE [FILE ...]``
    CPU time of our engine, of the floor (the strategy code alone, called on
    precomputed history objects), and of the authors' engine when ``SRC`` is given.

The authors' engine runs in a subprocess with ``SRC`` on its path; nothing of it is
imported into this process.  The files' strategies run unconfined here (in-process):
run this only on files you trust to run (ours, or the authors' published ones).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

GAME_OF = {
    "public_goods": "public_goods",
    "collective_risk": "collective_risk",
    "common_pool": "common_pool",
}

# Runs in the subprocess, with the authors' package importable.
_AUTHORS = r"""
import importlib.util, json, sys, time
import numpy as np
from emergent_llm.common import Attitude, Gene
from emergent_llm.players import LLMPlayer
from emergent_llm import games as G
job = json.load(sys.stdin)
spec = importlib.util.spec_from_file_location("published_under_test", job["file"])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
n, R, game = job["n"], job["rounds"], job["game"]
p = job["params"]
if game == "public_goods":
    desc = G.PublicGoodsDescription(n_players=n, n_rounds=R, k=p["k"])
    Game = G.PublicGoodsGame
elif game == "collective_risk":
    desc = G.CollectiveRiskDescription(n_players=n, n_rounds=R, m=p["m"], k=p["k"])
    Game = G.CollectiveRiskGame
else:
    desc = G.CommonPoolDescription(n_players=n, n_rounds=R, capacity=int(p["capacity"]))
    Game = G.CommonPoolGame
def player(i, name):
    att = Attitude[name.split("_")[1]]
    return LLMPlayer(f"p{i}", Gene("m", att), desc, getattr(mod, name))
out = []
t0 = time.process_time()
for lineup in job["lineups"]:
    g = Game([player(i, nm) for i, nm in enumerate(lineup)], desc)
    try:
        out.append(g.play_game().total_payoffs)
    except Exception:  # the authors' engine stops a match after a strategy's third error
        out.append([float("nan")] * n)
json.dump({"totals": out, "cpu": time.process_time() - t0}, sys.stdout)
"""


def authors_totals(
    src: str, file: Path, game: str, n: int, rounds: int, params: dict, lineups: list
) -> tuple[np.ndarray, float]:
    job = {
        "file": str(file),
        "game": game,
        "n": n,
        "rounds": rounds,
        "params": params,
        "lineups": lineups,
    }
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", _AUTHORS],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    got = json.loads(done.stdout)
    return np.array(got["totals"], dtype=float), got["cpu"]


def game_of(file: Path) -> str:
    text = file.read_text()
    for name in ("common_pool", "collective_risk", "public_goods"):
        if name in str(file):
            return name
    if "CommonPool" in text:
        return "common_pool"
    return "collective_risk" if "CollectiveRisk" in text else "public_goods"


def ours(
    file: Path,
    game: str,
    n: int,
    rounds: int,
    lineups: list,
    seed: int = 0,
    per_match: bool = False,
) -> tuple[np.ndarray, float, dict]:
    from mesa_dilemmas.agents.strategies import published
    from mesa_dilemmas.agents.strategies.loader import _import_path
    from mesa_dilemmas.dilemmas.binary.rules import make_game

    published.install_shims()
    module = _import_path(file.resolve())
    g = make_game(game, n, rounds)
    adapted = {}
    entries = []
    for lineup in lineups:
        row = []
        for name in lineup:
            if name not in adapted:
                adapted[name] = published.adapt(getattr(module, name))
            row.append(adapted[name])
        entries.append(row)
    t0 = time.process_time()
    result = _play_batch_classes(g, entries, seed, per_match)
    return result, time.process_time() - t0, g.params()


def _play_batch_classes(game, rows, seed, per_match=False):
    """Our engine's per-round loop on in-process strategy classes (trusted: the caller's choice)."""
    from mesa_dilemmas.agents.strategies.loader import StrategyEntry
    from mesa_dilemmas.dilemmas.binary.engine import play_in_process

    lineups = [[StrategyEntry(name=c.name, cls=c) for c in row] for row in rows]
    if not per_match:
        r = play_in_process(game, lineups, np.arange(len(rows)) + seed, None, None, False)
        return r.totals
    out = np.full((len(rows), game.n_players), np.nan)
    for b, lineup in enumerate(lineups):
        # a strategy's third error in a match stops it (the authors' engine stops too): NaN
        with contextlib.suppress(Exception):
            out[b] = play_in_process(game, [lineup], [b + seed], None, None, False).totals[0]
    return out


def _mentions_random(text: str, name: str) -> bool:
    start = text.index(f"class {name}(")
    nxt = text.find("\nclass ", start + 1)
    return "random" in text[start : nxt if nxt >= 0 else None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["identity", "time"])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument(
        "--authors", help="src directory of the authors' repository at the files' commit"
    )
    ap.add_argument("--n", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--matches", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--deterministic-only",
        action="store_true",
        help="only classes whose source never mentions random (others draw different numbers)",
    )
    args = ap.parse_args()
    for file in args.files:
        game = game_of(file)
        text = file.read_text()
        import re

        names = re.findall(r"^class (Strategy_\w+)\(", text, re.M)
        if args.deterministic_only:
            names = [nm for nm in names if not _mentions_random(text, nm)]
        for n in args.n:
            rng = np.random.default_rng(n)
            matches = max(1, args.matches * 16 // n) if args.mode == "time" else args.matches
            lineups = [[names[j] for j in rng.integers(0, len(names), n)] for _ in range(matches)]
            if args.mode == "identity":
                mine, _, params = ours(file, game, n, args.rounds, lineups, per_match=True)
                theirs, _ = authors_totals(
                    args.authors, file.resolve(), game, n, args.rounds, params, lineups
                )
                both = ~np.isnan(mine).any(1) & ~np.isnan(theirs).any(1)
                stopped = np.isnan(mine).any(1) != np.isnan(theirs).any(1)
                diff = np.abs(mine[both] - theirs[both]).max() if both.any() else float("nan")
                print(
                    f"{file.name} n={n} strategies={len(names)} matches={matches}: "
                    f"max |payoff difference| = {diff:.3g}; stopped in both {int((~both).sum() - stopped.sum())}, "
                    f"in one only {int(stopped.sum())}",
                    flush=True,
                )
            else:
                row = []
                for _ in range(args.repeats):  # A B A B
                    _, cpu, params = ours(file, game, n, args.rounds, lineups)
                    row.append(("ours", cpu))
                    if args.authors:
                        _, cpu_a = authors_totals(
                            args.authors, file.resolve(), game, n, args.rounds, params, lineups
                        )
                        row.append(("authors", cpu_a))
                load = os.getloadavg()[0]
                print(
                    f"{file.name} n={n} matches={matches} load={load:.1f}: "
                    + " ".join(f"{k}={v:.3f}s" for k, v in row),
                    flush=True,
                )


if __name__ == "__main__":
    main()
