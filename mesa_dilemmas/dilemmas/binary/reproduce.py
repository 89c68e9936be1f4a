"""``mesa-dilemmas reproduce --strategies PATH``: paper 002's claims on the authors' published
strategy sets, the C/D family's :class:`~mesa_dilemmas.reproduction.ReproduceSource`.

Per game found at ``PATH`` (their ``strategies/`` folder, a checkout of their repository, one
game's folder or one model's file): self-play per model (Figs. 2-4, as the paper states it of
that model), cultural evolution per game (Table 2) and the behavioural analysis (Table 1,
Fig. 1), judged beside what the paper says, into the same report as the bundled claims.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mesa_dilemmas.analysis.verdicts import Claim, Experiment, Mode, Section, SectionFn, Verdict
from mesa_dilemmas.reproduction import Report, ReproduceSource, run_experiments

if TYPE_CHECKING:
    from mesa_dilemmas.dilemmas.binary.paper002 import PublishedSelfPlay

#: per mode, the sizes of the runs on published sets (full: the scenarios as bundled, the paper's)
PUBLISHED_SIZES: dict[str, dict[str, list[str]]] = {
    "self_play": {
        "tiny": ["options.samples=2", "options.group_sizes=[4,8]", "options.splits=2"],
        "quick": ["options.samples=20", "options.group_sizes=[4,16,64]", "options.splits=5"],
        "full": [],
    },
    "evolution": {
        "tiny": [
            "options.runs=1",
            "options.group_sizes=[4]",
            "options.population=16",
            "options.survivors=4",
            "options.max_generations=2",
        ],
        "quick": [
            "options.runs=4",
            "options.population=128",
            "options.survivors=16",
            "options.max_generations=30",
        ],
        "full": [],
    },
}
#: per mode, (rollouts, strategies per set) of the behavioural analysis (None: all)
BEHAVIOUR_SIZES: dict[str, tuple[int, int | None]] = {
    "tiny": (2, 3),
    "quick": (10, 64),
    "full": (50, None),
}


@dataclass
class PublishedGame:
    """One game's folder (or file) of the authors' strategies: model -> its file, the models
    that lack one of the two attitudes, and the game's self-play claim."""

    game: str
    path: Path
    models: dict[str, Path]
    skipped: dict[str, str]
    claim: PublishedSelfPlay

    def set_ref(self, model: str, attitude: str) -> str:
        return f"{self.models[model]}#{attitude}"


def published_games(
    path: Path, only: set[str] | frozenset[str] = frozenset()
) -> list[PublishedGame]:
    """The games of the authors' strategy folder at ``path`` (their ``strategies/``, a checkout
    of their repository, one game's folder or one model's file), with the models found in each.
    Raises :class:`ConfigError` (one line) when nothing there can be played."""
    from mesa_dilemmas.dilemmas.binary.strategies.loader import (
        game_folders,
        load_strategy_set,
        strategy_files,
    )
    from mesa_dilemmas.dilemmas.registry import CLAIMS, load_extensions
    from mesa_dilemmas.scenarios.config import ConfigError

    claims = {
        game: module.PUBLISHED
        for game, module in load_extensions(CLAIMS).items()
        if hasattr(module, "PUBLISHED")
    }
    if not path.exists():
        raise ConfigError(f"--strategies {path}: no such file or folder")
    if path.is_file():
        folders = {path.parent.name: path}
    else:
        folders = game_folders(path) or ({path.name: path} if strategy_files(path) else {})
    if not folders:
        raise ConfigError(
            f"--strategies {path}: no strategy files (*.py) and no folder of them per game"
        )
    if named := only & set(folders):  # --only names games: load only theirs
        folders = {g: f for g, f in folders.items() if g in named}
    unknown = sorted(set(folders) - set(claims))
    folders = {g: f for g, f in folders.items() if g in claims}
    if not folders:
        raise ConfigError(
            f"--strategies {path}: found {', '.join(unknown)}, but paper 002's games are "
            f"{', '.join(claims)} (name the folders after them, as the authors do)"
        )
    found = []
    for game, folder in folders.items():
        try:
            strategy_set = load_strategy_set(folder)
        except ValueError as exc:
            raise ConfigError(f"--strategies {folder}: {' '.join(str(exc).split())}") from None
        models: dict[str, Path] = {}
        attitudes: dict[str, set[str]] = {}
        for e in strategy_set:
            model = e.source or folder.stem
            attitudes.setdefault(model, set()).add(str(e.attitude))
            if e.module is not None:
                models.setdefault(model, Path(e.module))
        skipped = {
            m: f"only {', '.join(sorted(a))} strategies"
            for m, a in attitudes.items()
            if not {"collective", "exploitative"} <= a
        }
        usable = {m: f for m, f in sorted(models.items()) if m not in skipped}
        found.append(PublishedGame(game, folder, usable, skipped, claims[game]))
    if not any(g.models for g in found):
        why = "; ".join(f"{g.game}/{m}: {w}" for g in found for m, w in g.skipped.items())
        raise ConfigError(
            f"--strategies {path}: no model has both collective and exploitative strategies ({why})"
        )
    return found


def published_plan(
    games: Sequence[PublishedGame],
) -> tuple[list[Experiment], list[Claim], dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """The experiments and claims of paper 002 on published sets, the paper's value per claim
    ((experiment, statement) -> text) and each claim's key in the claims register
    ((experiment, statement) -> ``KEY@GG/MODEL``, :func:`~.analysis.register.published_key`)."""
    from functools import partial, update_wrapper

    from mesa_dilemmas.analysis.register import published_key
    from mesa_dilemmas.dilemmas.binary.paper002 import (
        MODEL_NAMES,
        judge_evolution,
        paper_evolution_text,
    )

    experiments: list[Experiment] = []
    claims: list[Claim] = []
    paper: dict[tuple[str, str], str] = {}
    keys: dict[tuple[str, str], str] = {}
    for g in games:
        pub = g.claim
        for model in g.models:
            name = MODEL_NAMES.get(model, model)
            stated = pub.claims_for(model)
            if not stated:  # the paper says nothing specific of this model here: not judged
                statement = f"{pub.statement}: {name}"
                claims.append(
                    Claim("002", pub.where, statement, "", _not_judged, note=pub.unstated(model))
                )
                paper[("", statement)] = "-"
                continue
            sets = [
                f"options.collective_set='{g.set_ref(model, 'collective')}'",
                f"options.exploitative_set='{g.set_ref(model, 'exploitative')}'",
            ]
            sizes = PUBLISHED_SIZES["self_play"]
            key = f"{g.game}-{model}-self_play"
            experiments.append(
                Experiment(
                    key,
                    f"{g.game}/self_play",
                    tiny=[*sets, *sizes["tiny"]],
                    quick=[*sets, *sizes["quick"]],
                    full=[*sets, *sizes["full"]],
                )
            )
            for said in stated:
                statement = f"{pub.statement}: {name}: {said.said}"
                claim = Claim("002", pub.where, statement, key, said.judge)
                claims.append(claim)
                paper[(key, statement)] = said.said
                keys[(key, statement)] = published_key(claim.key, g.game, model)
        if not g.models:
            continue
        refs = [g.set_ref(m, a) for m in g.models for a in ("collective", "exploitative")]
        sets = [f"options.sets={json.dumps(refs)}"]
        sizes = PUBLISHED_SIZES["evolution"]
        key = f"{g.game}-evolution"
        experiments.append(
            Experiment(
                key,
                f"{g.game}/cultural_evolution",
                tiny=[*sets, *sizes["tiny"]],
                quick=[*sets, *sizes["quick"]],
                full=[*sets, *sizes["full"]],
            )
        )
        statement = (
            f"{g.game.replace('_', ' ').title()} cultural evolution: the winning attitude per "
            f"group size ({len(g.models)} models)"
        )
        judge = update_wrapper(partial(judge_evolution, game=g.game), judge_evolution)
        claims.append(Claim("002", "Sec. 6.2, Table 2", statement, key, judge))
        keys[(key, statement)] = published_key("evolution", g.game)
        paper[(key, statement)] = paper_evolution_text(g.game) + (
            "" if set(g.models) <= set(MODEL_NAMES) else " (with the paper's six models)"
        )
    return experiments, claims, paper, keys


def _not_judged(run_dir: Path) -> Verdict:  # never called: the claim names no experiment
    return Verdict("-", "not judged", "not run")


def flagged_lines(report: Report, games: Sequence[PublishedGame]) -> list[str]:
    """Per game and model: how many of its published strategies the sandbox flagged in the
    self-play run (each flagged strategy played D in the rounds it failed: the fallback)."""
    from mesa_dilemmas.dilemmas.binary.paper002 import MODEL_NAMES

    rows = []
    for g in games:
        for model in g.models:
            run = report.runs.get(f"{g.game}-{model}-self_play")
            summary_path = None if run is None else run[0] / "summary.json"
            if summary_path is None or not summary_path.is_file():
                continue
            summary = json.loads(summary_path.read_text())
            total = sum(int(s.get("size", 0)) for s in summary.get("sets", {}).values())
            flagged = summary.get("flagged_strategies", {})
            matches = sum(int(f.get("matches", 0)) for f in flagged.values())
            first = next(iter(flagged.values()), {}).get("reason", "")
            rows.append(
                f"| {g.game} | {MODEL_NAMES.get(model, model)} | {len(flagged)} of {total} | "
                f"{matches:,} | {' '.join(str(first).split())[:120] or '-'} |"
            )
    if not rows:
        return []
    return [
        "## Published strategies the sandbox flagged",
        "",
        "Per model, in its self-play run: the strategies that misbehaved at least once (an "
        "error, a timeout, an answer that is not C or D) and so fell back to D in the rounds "
        "they failed. A model the paper says nothing specific about in a game plays no "
        "self-play there, so it has no row for that game.",
        "",
        "| game | model | strategies flagged | matches with a fallback | first reason |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]


def behaviour_section(games: Sequence[PublishedGame], source: Path) -> SectionFn:
    """Table 1 and Figure 1 on the published sets: per game and model, Cohen's d between the
    model's two attitudes and each attitude's MPD beside the paper's, and the PCA's variance."""

    def make(*, mode: Mode, out: Path, processes: int, progress: bool, **_: object) -> Section:
        from mesa_dilemmas.dilemmas.binary.cli import analyse
        from mesa_dilemmas.dilemmas.binary.paper002 import (
            MODEL_NAMES,
            PCA_EXPLAINED,
            d_text,
            table1_row,
        )

        rollouts, limit = BEHAVIOUR_SIZES[mode]
        started = time.perf_counter()
        lines = [
            "## Paper 002 on the published sets: behaviour (Table 1, Fig. 1)",
            "",
            f"Strategies from `{source}`; {rollouts} rollouts per opponent history"
            + (f", the first {limit} strategies of each set." if limit else ", every strategy."),
            "",
            "| game | model | d paper | d ours | MPD collective paper / ours "
            "| MPD exploitative paper / ours | PC1, PC2 ours (paper, all six models) |",
            "|---|---|---|---|---|---|---|",
        ]
        for g in games:
            if not g.models:
                continue
            if progress:
                print(f"reproduce: {g.game} behaviour ({len(g.models)} models)", flush=True)
            models = list(g.models)
            result = None
            while models and result is None:
                refs = [g.set_ref(m, a) for m in models for a in ("collective", "exploitative")]
                try:
                    result = analyse(
                        refs,
                        game=g.game,
                        rollouts=rollouts,
                        processes=processes,
                        references=False,
                        limit=limit,
                    )
                except ValueError as exc:  # a set every strategy of which misbehaved: left out
                    why = " ".join(str(exc).split())
                    bad = [m for m in models if f"'{m}#" in why] or models
                    for m in bad:
                        lines.append(f"| {g.game} | {MODEL_NAMES.get(m, m)} | stopped: {why} |||||")
                    models = [m for m in models if m not in bad]
            if result is None:
                continue
            table = result.table
            (out / "behaviour").mkdir(parents=True, exist_ok=True)
            table.to_csv(out / "behaviour" / f"{g.game}.csv", index=False)
            pcs = ", ".join(f"{v:.1%}" for v in result.explained[:2])
            paper_pcs = ", ".join(f"{v:.1%}" for v in PCA_EXPLAINED)
            for model in models:
                rows = table[table["source"] == model].set_index("attitude")
                said = table1_row(g.game, model)
                d = float(rows["d"].iloc[0]) if len(rows) else None
                mpd = {a: float(rows.loc[a, "MPD"]) for a in rows.index}
                lines.append(
                    f"| {g.game} | {MODEL_NAMES.get(model, model)} | "
                    f"{d_text(said[2] if said else None)} | {d_text(d)} | "
                    f"{d_text(said[0] if said else None)} / {d_text(mpd.get('collective'))} | "
                    f"{d_text(said[1] if said else None)} / {d_text(mpd.get('exploitative'))} | "
                    f"{pcs} ({paper_pcs}) |"
                )
        lines.append("")
        return Section("published_behaviour", lines, wall=time.perf_counter() - started)

    return make


def reproduce_published(
    strategies: Path,
    mode: Mode,
    out: Path,
    processes: int,
    progress: bool,
    only: set[str],
    games: list[PublishedGame] | None = None,
    streams: int = 1,
) -> Report:
    """Paper 002's claims (Figs. 2-4 per model, Table 2 per game, Table 1 and Fig. 1) on the
    authors' published strategy sets at ``strategies`` (``games``: as found there already)."""
    from mesa_dilemmas.dilemmas.binary.paper002 import MODEL_NAMES
    from mesa_dilemmas.scenarios.config import ConfigError

    games = published_games(strategies, only) if games is None else games
    if only:
        for g in games:
            g.models = {m: f for m, f in g.models.items() if m in only or g.game in only}
        games = [g for g in games if g.models]
        if not games:
            raise ConfigError(f"--only: no game or model of {strategies} matches {sorted(only)}")
    experiments, claims, paper, keys = published_plan(games)
    report = run_experiments(
        experiments,
        claims,
        mode,
        out,
        progress,
        processes=processes,
        sections=[behaviour_section(games, strategies)],
        tolerate=True,
        streams=streams,
    )
    for o in report.outcomes:
        o.paper = paper.get((o.claim.experiment, o.claim.statement), "")
        o.register_key = keys.get((o.claim.experiment, o.claim.statement), "")
    report.register_papers = {"002"}
    report.flagged = flagged_lines(report, games)
    listed = "; ".join(
        f"{g.game}: {', '.join(MODEL_NAMES.get(m, m) for m in g.models) or 'none'}"
        + (
            " (left out: " + ", ".join(f"{m}, {w}" for m, w in g.skipped.items()) + ")"
            if g.skipped
            else ""
        )
        for g in games
    )
    report.intro = [
        f"Paper 002's claims run on the authors' published strategy sets in `{strategies}`, one",
        f"model at a time (models by game: {listed}). What the paper says of each model",
        "stands beside ours, in our words, and is judged as it says it (a model it calls flat by",
        "an equivalence test, its named exception as the exception); a model it says nothing",
        "specific about in a game is listed and not judged.",
    ]
    return report


def _run(path: Path, games: list[PublishedGame], **kwargs: Any) -> Report:
    return reproduce_published(path, games=games, **kwargs)


PUBLISHED_SETS = ReproduceSource(
    option="--strategies",
    metavar="PATH",
    help="paper 002's claims on the authors' published strategy files instead: their "
    "strategies/ folder (or a checkout of their repository, one game's folder, one file); "
    "self-play per model, cultural evolution and the behavioural analysis per game",
    find=published_games,
    run=_run,
)
