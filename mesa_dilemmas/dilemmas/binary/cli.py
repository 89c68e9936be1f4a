"""``mesa-dilemmas analyse strategies SET...``: Table 1 and Figure 1 of paper 002 for any strategy sets.

For every strategy of the given sets: its 961-dimensional behavioural feature
vector; then a PCA over all of them with the reference strategies projected,
and per set the cooperation rate, the normalised mean pairwise distance
(MPD), Cohen's d against its counterpart (the same source's other attitude,
or the other set when exactly two are given) and the participation ratio.
Writes ``table.csv``, ``table.md``, ``summary.json``, ``features.npz``,
``pca.csv`` and ``pca.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_dilemmas.dilemmas.binary import behaviour as bh
from mesa_dilemmas.dilemmas.binary.rules import binary_games, default_game, game_title
from mesa_dilemmas.dilemmas.binary.strategies.loader import (
    StrategySet,
    load_strategy_set,
    resolve_set_ref,
)


@dataclass(frozen=True)
class _FeatureTask:
    set_path: str
    indices: tuple[int, ...]
    game: str
    rollouts: int
    seed: int


def _features_task(task: _FeatureTask) -> tuple[np.ndarray, dict[int, str]]:
    strategy_set = load_strategy_set(task.set_path)
    entries = [strategy_set[i] for i in task.indices]
    offenders: dict[int, str] = {}
    matrix = bh.feature_matrix(entries, task.game, task.rollouts, task.seed, offenders=offenders)
    return matrix, {task.indices[i]: why for i, why in offenders.items()}


@dataclass
class StrategyAnalysis:
    """Everything the command computes; ``table`` is Table 1's rows for these sets."""

    game: str
    sets: list[StrategySet]
    features: dict[str, np.ndarray]
    table: pd.DataFrame
    coords: np.ndarray
    explained: list[float]
    reference_labels: list[str] = field(default_factory=list)
    reference_features: np.ndarray | None = None
    reference_coords: np.ndarray | None = None
    pairwise_d: dict[str, dict[str, float]] = field(default_factory=dict)
    #: set name -> {strategy name: reason}: strategies that misbehaved, left out of everything
    offenders: dict[str, dict[str, str]] = field(default_factory=dict)


def _counterpart(s: StrategySet, sets: list[StrategySet]) -> StrategySet | None:
    same_source = [
        o for o in sets if o is not s and o.source == s.source and o.attitude != s.attitude
    ]
    if same_source:
        return same_source[0]
    if len(sets) == 2:
        return sets[1] if sets[0] is s else sets[0]
    return None


def analyse(
    set_refs: list[str],
    game: str | None = None,
    rollouts: int = 50,
    seed: int = 0,
    processes: int = 1,
    progress: bool = False,
    references: bool = True,
    limit: int | None = None,
) -> StrategyAnalysis:
    """Feature vectors, PCA and set statistics for the named strategy sets."""
    from mesa_dilemmas.scenarios.execution import map_tasks

    paths = [resolve_set_ref(r) for r in set_refs]
    sets = [load_strategy_set(p) for p in paths]
    names = [s.name for s in sets]
    if len(set(names)) != len(names):
        raise ValueError("the same strategy set is given twice")
    if game is None:
        declared = [g for s in sets for g in s.games]
        game = declared[0] if declared else default_game()
    if game not in binary_games():
        raise ValueError(
            f"--game: {game!r} is not a binary-action game; choose from {', '.join(binary_games())}"
        )
    tasks, owners = [], []
    for s, path in zip(sets, paths, strict=True):
        count = len(s) if limit is None else min(limit, len(s))
        if count == 0:
            raise ValueError(f"strategy set {s.name!r} is empty")
        step = max(1, -(-count // max(1, 4 * processes)))
        for lo in range(0, count, step):
            tasks.append(
                _FeatureTask(path, tuple(range(lo, min(count, lo + step))), game, rollouts, seed)
            )
            owners.append(s.name)
    results = map_tasks(
        _features_task, tasks, processes=processes, progress=progress, desc="features"
    )
    features: dict[str, np.ndarray] = {}
    offenders: dict[str, dict[str, str]] = {s.name: {} for s in sets}
    by_name = {s.name: s for s in sets}
    for owner, (arr, bad) in zip(owners, results, strict=True):
        for i, why in bad.items():
            offenders[owner][by_name[owner][i].name] = why
        keep = [j for j in range(len(arr)) if not np.isnan(arr[j]).any()]
        arr = arr[keep]
        features[owner] = arr if owner not in features else np.vstack([features[owner], arr])
    for s in sets:
        if len(features[s.name]) == 0:
            first = next(iter(offenders[s.name].items()), ("?", "?"))
            raise ValueError(
                f"strategy set {s.name!r}: every strategy misbehaved (e.g. {first[0]}: {first[1]})"
            )
    stacked = np.vstack([features[s.name] for s in sets])
    model, coords = bh.pca(stacked, components=2)
    ref_labels: list[str] = []
    ref_feats = ref_coords = None
    if references:
        ref_labels, ref_feats = bh.reference_features(game, rollouts, seed)
        ref_coords = model.transform(ref_feats)
        if (
            coords.shape[0] > 1
            and np.corrcoef(model.transform(stacked)[:, 0], coords[:, 0])[0, 1] < 0
        ):
            ref_coords[:, 0] *= -1  # pragma: no cover - pca() already flipped the component itself
    baseline = bh.random_distance(stacked.shape[1])
    rows = []
    pairwise: dict[str, dict[str, float]] = {}
    for s in sets:
        x = features[s.name]
        partner = _counterpart(s, sets)
        rows.append(
            {
                "set": s.name,
                "source": s.source,
                "attitude": s.attitude,
                "strategies": len(x),
                "cooperation": float(x.mean()),
                "MPD": bh.normalised_mpd(x, baseline),
                "d": bh.cohens_d(x, features[partner.name])
                if partner is not None
                else float("nan"),
                "d_vs": partner.name if partner is not None else None,
                "PR": bh.participation_ratio(x),
            }
        )
        pairwise[s.name] = {o.name: bh.cohens_d(x, features[o.name]) for o in sets if o is not s}
    return StrategyAnalysis(
        game=game,
        sets=sets,
        features=features,
        table=pd.DataFrame(rows),
        coords=coords,
        explained=[float(v) for v in model.explained_variance_ratio_],
        reference_labels=ref_labels,
        reference_features=ref_feats,
        reference_coords=ref_coords,
        pairwise_d=pairwise,
        offenders={k: v for k, v in offenders.items() if v},
    )


def format_table(table: pd.DataFrame) -> str:
    """Table 1 as Markdown (MPD, d and PR to one decimal, as in the paper)."""
    cols = ["set", "source", "attitude", "strategies", "cooperation", "MPD", "d", "PR"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.to_dict("records"):
        cells = []
        for c in cols:
            v = row[c]
            if isinstance(v, float):
                cells.append(
                    "-" if np.isnan(v) else (f"{v:.2f}" if c == "cooperation" else f"{v:.1f}")
                )
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_outputs(result: StrategyAnalysis, out: Path) -> list[Path]:
    """Write the table, features, PCA coordinates and the PCA scatter plot."""
    from mesa_dilemmas.dilemmas.binary.figures import pca_scatter

    out.mkdir(parents=True, exist_ok=True)
    set_labels = [s.name for s in result.sets for _ in range(len(result.features[s.name]))]
    strategy_names = []
    for s in result.sets:
        bad = result.offenders.get(s.name, {})
        analysed = list(s)[: len(result.features[s.name]) + len(bad)]
        strategy_names += [e.name for e in analysed if e.name not in bad]
    written = [
        out / "table.csv",
        out / "table.md",
        out / "summary.json",
        out / "features.npz",
        out / "pca.csv",
    ]
    result.table.to_csv(written[0], index=False)
    written[1].write_text(format_table(result.table) + "\n")
    summary: dict[str, Any] = {
        "game": result.game,
        "feature_dimension": int(next(iter(result.features.values())).shape[1]),
        "explained_variance_ratio": result.explained,
        "sets": [s.metadata() for s in result.sets],
        "table": result.table.to_dict("records"),
        "pairwise_d": result.pairwise_d,
        "offenders": result.offenders,
    }
    if result.reference_coords is not None:
        summary["references"] = {
            label: [float(v) for v in xy[:2]]
            for label, xy in zip(result.reference_labels, result.reference_coords, strict=True)
        }
    written[2].write_text(json.dumps(summary, indent=2, default=str) + "\n")
    np.savez_compressed(
        written[3],
        features=np.vstack([result.features[s.name] for s in result.sets]),
        set=np.array(set_labels),
        strategy=np.array(strategy_names),
        labels=np.array(bh.feature_labels()),
        reference_features=np.zeros((0, 0))
        if result.reference_features is None
        else result.reference_features,
        reference_labels=np.array(result.reference_labels),
    )
    frame = pd.DataFrame(
        {"set": set_labels, "strategy": strategy_names, "pc1": result.coords[:, 0]}
    )
    if result.coords.shape[1] > 1:
        frame["pc2"] = result.coords[:, 1]
    frame.to_csv(written[4], index=False)
    png = pca_scatter(
        out / "pca.png",
        result.coords
        if result.coords.shape[1] > 1
        else np.column_stack([result.coords, np.zeros(len(result.coords))]),
        set_labels,
        result.reference_coords,
        result.reference_labels,
        result.explained,
        title=f"Strategy behaviour PCA: {game_title(result.game)}",
    )
    return [*written, png]


def _run(args: argparse.Namespace) -> int:
    from mesa_dilemmas.files import out_dir_unusable

    if problem := out_dir_unusable(args.out):  # before any work
        print(f"error: --out {args.out!r}: {problem}", file=sys.stderr)
        return 2
    try:
        result = analyse(
            args.sets,
            game=args.game,
            rollouts=args.rollouts,
            seed=args.seed,
            processes=args.processes,
            progress=not args.no_progress,
            references=not args.no_references,
            limit=args.limit,
        )
    except (ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    files = write_outputs(result, Path(args.out))
    print(
        f"{result.game}: {sum(len(v) for v in result.features.values())} strategies, "
        f"PC1 {result.explained[0]:.1%}"
        + (f", PC2 {result.explained[1]:.1%}" if len(result.explained) > 1 else "")
    )
    print(format_table(result.table))
    for set_name, bad in result.offenders.items():
        print(f"{set_name}: {len(bad)} strategies misbehaved and are left out:")
        for name, why in bad.items():
            print(f"  {name}: {why}")
    print(f"wrote {', '.join(str(f) for f in files)}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``strategies`` to the ``analyse`` command group."""
    p = subparsers.add_parser(
        "strategies",
        help="behavioural feature vectors, PCA and diversity of strategy sets (paper 002, Table 1)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("sets", nargs="+", metavar="SET", help="strategy set names or paths")
    p.add_argument(
        "--game",
        default=None,
        help="the binary-action (C/D) game to evaluate in (default: the first set's declared "
        "game, else the first registered C/D game)",
    )
    p.add_argument(
        "--rollouts", type=int, default=50, help="rollouts per opponent history (default 50)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--processes", type=int, default=1)
    p.add_argument(
        "--limit", type=int, default=None, help="analyse only the first N strategies of each set"
    )
    p.add_argument(
        "--out", default="strategy_analysis", help="output directory (default ./strategy_analysis)"
    )
    p.add_argument(
        "--no-references", action="store_true", help="do not project the reference strategies"
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run)
