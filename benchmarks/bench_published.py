"""Published-format strategy files: identity with, and speed against, the authors' engine.

``python benchmarks/bench_published.py [time] [--strategies PATH ...] [--authors SRC]``
    CPU time (process CPU, not wall) of self-play on published-format files at n = 4, 16, 64,
    interleaved A B A B: (1) our default engine, sandboxed (this process + the worker);
    (2) our engine in process; (3) the floor: the strategy code alone -- each strategy's
    ``__call__`` on prepared history objects (those of a game played beforehand), as many
    calls in the same order, no engine around it; (4) the authors' engine when ``--authors``
    gives a checkout of ``willis-richard/emergent_llm`` (or its ``src``) whose call format
    matches the files'.  Prints the ratios ours/floor and ours/authors per n, the load
    average at start and end and the files.  Default input: our fixture files in
    ``tests/strategy_corpus/published_format/``; ``--strategies`` takes the authors' files
    or folders.  ``--matches`` (per 16 players), ``--rounds``, ``--repeats`` set the size.
``python benchmarks/bench_published.py identity --authors SRC FILE [FILE ...]``
    plays random lineups of each file's strategies in our engine and in the authors'
    (``SRC`` = the ``src`` directory of a checkout of ``willis-richard/emergent_llm`` at
    the commit whose format the files use), and prints the largest payoff difference.

The authors' engine runs in a subprocess with ``SRC`` on its path; nothing of it is
imported into this process.  The files' strategies run unconfined here (in-process and
floor): run this only on files you trust to run (ours, or the authors' published ones).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import shutil
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
    from mesa_dilemmas.dilemmas.binary.rules import make_game
    from mesa_dilemmas.dilemmas.binary.strategies import published
    from mesa_dilemmas.dilemmas.binary.strategies.loader import _import_path

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
    from mesa_dilemmas.dilemmas.binary.engine import play_in_process
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

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


FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "strategy_corpus" / "published_format"
DEFAULT_FILES = (
    "current_public_goods",
    "current_common_pool",
    "paper_public_goods",
    "paper_common_pool",
)


def _mentions_random(text: str, name: str) -> bool:
    start = text.index(f"class {name}(")
    nxt = text.find("\nclass ", start + 1)
    return "random" in text[start : nxt if nxt >= 0 else None]


def strategy_files(paths: list[Path]) -> list[Path]:
    """The ``.py`` strategy files in ``paths`` (files, or folders searched recursively)."""
    out = []
    for path in paths:
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        out += [f for f in found if not f.stem.endswith("_descriptions")]
    return out


def authors_src(path: str | None) -> tuple[str | None, str | None]:
    """The ``src`` folder of the authors' checkout and its call format (paper or current)."""
    if not path:
        return None, None
    src = Path(path)
    if (src / "src" / "emergent_llm").is_dir():
        src = src / "src"
    history = src / "emergent_llm" / "common" / "history.py"
    if not history.is_file():
        raise SystemExit(f"--authors {path}: no emergent_llm/common/history.py under it")
    fmt = "current" if "opponent_cooperators" in history.read_text() else "paper"
    return str(src), fmt


def file_format(module) -> str:
    from mesa_dilemmas.dilemmas.binary.strategies.published import call_format, published_classes

    formats = {call_format(c) for c in published_classes(module)}
    return formats.pop() if len(formats) == 1 else "mixed"


def prepared_histories(result, game, module, lineups, fmt: str):
    """Per match and round, the arguments of every seat's ``__call__`` as the authors' engine
    passes them (built from a game our engine played; built before any clock starts)."""
    from mesa_dilemmas.dilemmas.binary.strategies import published as pub

    store = result.store
    stock = game.HAS_STOCK
    capacity = getattr(game, "capacity", None)
    B, n, R = store.actions.shape
    empty = (pub._EMPTY_B, pub._EMPTY_F, pub._EMPTY_I)
    mask = ~np.eye(n, dtype=bool)
    calls = []  # (match, round) -> list of argument tuples, seat by seat
    for b in range(B):
        acts, pays = store.actions[b], store.payoffs[b]  # (n, R)
        per_round = []
        for t in range(R):
            level = capacity if t == 0 else np.float64(store.stock[b, t]) if stock else None
            args = []
            for i in range(n):
                if fmt == "paper":
                    past = None
                    if t:
                        past = pub.PlayerHistory(
                            pub._ro(acts[i, :t].copy()),
                            pub._ro(pays[i, :t].copy()),
                            pub._ro(acts[mask[i], :t].T.copy()),
                            pub._ro(pays[mask[i], :t].T.copy()),
                        )
                    state = pub.CommonPoolState(t, level) if stock else pub.GameState(t)
                    args.append((state, past))
                else:
                    if t:
                        opp = acts[:, :t].sum(0, dtype=np.int_) - acts[i, :t]
                        past = pub.PlayerHistory(
                            pub._ro(acts[i, :t].copy()), pub._ro(pays[i, :t].copy()), pub._ro(opp)
                        )
                    else:
                        past = pub.PlayerHistory(*empty)
                    args.append((past, level) if stock else (past,))
            per_round.append(args)
        calls.append(per_round)
    desc = pub.describe_game(game.description())
    players = [[getattr(module, name)(desc) for name in lineup] for lineup in lineups]
    return players, calls


def floor_cpu(players, calls) -> float:
    """The strategy code alone: every seat's ``__call__``, round by round, on prepared histories."""
    was = gc.isenabled()
    gc.disable()
    t0 = time.process_time()
    for seats, rounds in zip(players, calls, strict=True):
        for args_t in rounds:
            for player, args in zip(seats, args_t, strict=True):
                try:  # noqa: SIM105 (suppress() costs more per call)
                    player(*args)
                except Exception:  # both engines catch a strategy's error and play on
                    pass
    cpu = time.process_time() - t0
    if was:
        gc.enable()
    return cpu


def _cpu_sandboxed(game, lineups, entropies) -> float:
    """CPU of this process and of every worker (one per unit of trust: per file copy)."""
    from mesa_dilemmas.dilemmas.binary.game import play_batch
    from mesa_dilemmas.sandbox import all_sandboxes

    boxes = all_sandboxes()
    w0, t0 = sum(b.worker_cpu() for b in boxes), time.process_time()
    play_batch(game, lineups, entropies)
    if {id(b) for b in all_sandboxes()} != {id(b) for b in boxes}:
        raise RuntimeError("a worker was started inside the timed run (warm-up missed a unit)")
    return time.process_time() - t0 + sum(b.worker_cpu() for b in boxes) - w0


def _cpu_in_process(game, lineups, entropies) -> float:
    from mesa_dilemmas.dilemmas.binary.game import play_batch

    t0 = time.process_time()
    play_batch(game, lineups, entropies)
    return time.process_time() - t0


def time_file(file: Path, args, engines: dict[str, str]) -> list[dict]:
    from mesa_dilemmas.dilemmas.binary.game import play_batch
    from mesa_dilemmas.dilemmas.binary.rules import make_game
    from mesa_dilemmas.dilemmas.binary.strategies import StrategyEntry, load_strategy_set, published
    from mesa_dilemmas.dilemmas.binary.strategies.loader import _import_path

    published.install_shims()
    game_name = game_of(file)
    module = _import_path(file.resolve())
    fmt = file_format(module)
    classes = published.published_classes(module)
    if args.classes and len(classes) > args.classes:  # adapting a class parses its whole file
        pick = np.random.default_rng(0).choice(len(classes), args.classes, replace=False)
        classes = [classes[j] for j in sorted(pick)]
    names = [c.__name__ for c in classes]
    print(f"{file.name}: {len(names)} classes played", flush=True)
    trusted = {c.__name__: StrategyEntry(name=c.__name__, cls=published.adapt(c)) for c in classes}
    untrusted = {e.name.split("/")[-1]: e for e in load_strategy_set(file.resolve())}
    one_unit = untrusted
    if args.units > 1:  # the same classes from K copies of the file: K units, played in lockstep
        import tempfile

        copies = []
        for u in range(args.units):
            folder = Path(tempfile.mkdtemp(prefix=f"bench-unit{u}-"))
            copies.append(
                {
                    e.name.split("/")[-1]: e
                    for e in load_strategy_set(Path(shutil.copy(file, folder / file.name)))
                }
            )
        untrusted = {nm: copies[j % args.units][nm] for j, nm in enumerate(names)}
    src = engines.get(fmt)
    with_authors = src is not None
    rows = []
    for n in args.n:
        game = make_game(game_name, n, args.rounds)
        rng = np.random.default_rng(n)
        matches = max(1, args.matches * 16 // n)
        lineups = [[names[j] for j in rng.integers(0, len(names), n)] for _ in range(matches)]
        entropies = rng.integers(0, 2**63, size=matches)
        inproc = [[trusted[nm] for nm in row] for row in lineups]
        sandboxed = [[untrusted[nm] for nm in row] for row in lineups]
        single = [[one_unit[nm] for nm in row] for row in lineups]
        played = play_batch(game, inproc, entropies, keep_history=True)
        # the worker started, the file loaded and every class used once (adapting a class
        # reads its source: outside the clock, as the file's import is for the authors)
        warm = [
            [untrusted[names[(j + k) % len(names)]] for k in range(n)]
            for j in range(0, len(names), n)
        ]
        play_batch(game, warm, np.arange(len(warm)))
        if args.units > 1:
            warm_one = [
                [one_unit[names[(j + k) % len(names)]] for k in range(n)]
                for j in range(0, len(names), n)
            ]
            play_batch(game, warm_one, np.arange(len(warm_one)))
        times: dict[str, list[float]] = {
            "sandbox": [],
            "sandbox_1unit": [],
            "in_process": [],
            "floor": [],
            "authors": [],
        }
        for _ in range(args.repeats):  # A B A B: a busy moment hits all alike
            times["sandbox"].append(_cpu_sandboxed(game, sandboxed, entropies))
            if args.units > 1:  # the same batch from one file: one worker, played whole
                times["sandbox_1unit"].append(_cpu_sandboxed(game, single, entropies))
            times["in_process"].append(_cpu_in_process(game, inproc, entropies))
            players, calls = prepared_histories(played, game, module, lineups, fmt)
            times["floor"].append(floor_cpu(players, calls))
            del players, calls
            if with_authors:
                params = game.params()
                _, cpu = authors_totals(
                    src, file.resolve(), game_name, n, args.rounds, params, lineups
                )
                times["authors"].append(cpu)
        best = {k: min(v) if v else float("nan") for k, v in times.items()}
        row = {"file": file.name, "format": fmt, "n": n, "matches": matches, **best}
        rows.append(row)
        _print_row(row)
        if args.units > 1:
            iso = row["sandbox"] / row["sandbox_1unit"]
            print(
                f"|   isolation: {args.units} units in lockstep {row['sandbox']:.3f} s, one unit "
                f"{row['sandbox_1unit']:.3f} s: x{iso:.2f} |",
                flush=True,
            )
    return rows


def _print_row(r: dict) -> None:
    sb, ip, fl, au = r["sandbox"], r["in_process"], r["floor"], r["authors"]
    print(
        f"| {r['file']} | {r['format']} | {r['n']} | {r['matches']} | {sb:.3f} | {ip:.3f} | "
        f"{fl:.3f} | {_fmt(au, '.3f')} | {sb / fl:.2f} | {ip / fl:.2f} | "
        f"{_fmt(au / sb, '.2f')} | {_fmt(au / ip, '.2f')} |",
        flush=True,
    )


def _fmt(x: float, spec: str) -> str:
    return "—" if x != x else format(x, spec)


def time_mode(args) -> None:
    files = strategy_files(args.strategies or [FIXTURES / f"{s}.py" for s in DEFAULT_FILES])
    engines = dict(authors_src(a)[::-1] for a in args.authors or [])
    load0 = os.getloadavg()
    print(f"load average at start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    print("files: " + ", ".join(str(f) for f in files))
    for fmt, src in engines.items():
        print(f"authors' engine for {fmt}-format files: {src}")
    print(
        f"rounds={args.rounds}, {args.matches} matches per 16 players, best of {args.repeats} "
        "interleaved repeats; CPU seconds (sandbox: this process + its worker)"
    )
    print(
        "| file | format | n | matches | sandbox s | in-process s | floor s | authors s | "
        "sandbox/floor | in-process/floor | authors/sandbox | authors/in-process |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for file in files:
        time_file(file, args, engines)
    load1 = os.getloadavg()
    print(f"load average at end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    print("authors/ours > 1: ours is faster; ours/floor: the engine's cost over the strategy code")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", choices=["identity", "time"], default="time")
    ap.add_argument("files", nargs="*", type=Path, help="identity: the files to compare")
    ap.add_argument(
        "--strategies",
        type=Path,
        action="append",
        help="time: published-format files or folders (default: our fixtures)",
    )
    ap.add_argument(
        "--authors",
        action="append",
        help="checkout (or its src) of the authors' repository; repeat it for a checkout per "
        "format (paper era, 896462c; current, HEAD): each file plays on the one of its format",
    )
    ap.add_argument("--n", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--matches", type=int, default=64, help="matches per 16 players")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--units",
        type=int,
        default=1,
        help="time: play the classes from this many copies of each file (each its own unit of "
        "trust with its own worker, so batches mix units and are played in lockstep)",
    )
    ap.add_argument(
        "--classes",
        type=int,
        default=64,
        help="time: at most this many classes per file, drawn with a fixed seed (0: all)",
    )
    ap.add_argument(
        "--deterministic-only",
        action="store_true",
        help="identity: only classes whose source never mentions random (others draw differently)",
    )
    args = ap.parse_intermixed_args()
    if args.mode == "time":
        time_mode(args)
        return
    src, _ = authors_src(args.authors[0] if args.authors else None)
    if src is None or not args.files:
        ap.error("identity needs --authors SRC and at least one FILE")
    for file in args.files:
        game = game_of(file)
        text = file.read_text()
        names = re.findall(r"^class (Strategy_\w+)\(", text, re.M)
        if args.deterministic_only:
            names = [nm for nm in names if not _mentions_random(text, nm)]
        for n in args.n:
            rng = np.random.default_rng(n)
            lineups = [
                [names[j] for j in rng.integers(0, len(names), n)] for _ in range(args.matches)
            ]
            mine, _, params = ours(file, game, n, args.rounds, lineups, per_match=True)
            theirs, _ = authors_totals(src, file.resolve(), game, n, args.rounds, params, lineups)
            both = ~np.isnan(mine).any(1) & ~np.isnan(theirs).any(1)
            stopped = np.isnan(mine).any(1) != np.isnan(theirs).any(1)
            diff = np.abs(mine[both] - theirs[both]).max() if both.any() else float("nan")
            print(
                f"{file.name} n={n} strategies={len(names)} matches={args.matches}: "
                f"max |payoff difference| = {diff:.3g}; stopped in both "
                f"{int((~both).sum() - stopped.sum())}, in one only {int(stopped.sum())}",
                flush=True,
            )


if __name__ == "__main__":
    main()
