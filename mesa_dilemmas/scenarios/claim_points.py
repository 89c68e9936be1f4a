"""A paper's claims judged at one point of a game's parameters: the experiments each claim
needs, run with the point's values as fixed model parameters, and every claim's verdict with
its standardised effect (``Verdict.z``).

This is what ``mesa-dilemmas calibrate`` evaluates for a claim target (``claim = KEY`` or
``claims = PAPER``) and what the reproduction report's robustness check evaluates at the
neighbours of the defaults.  The claims and their experiments are the ones the games register
(entry point group ``mesa_dilemmas.claims``), the very judges of ``mesa-dilemmas reproduce``:
a calibration cannot optimise a different reading of a finding than the report shows.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mesa_dilemmas.analysis.verdicts import Claim, Experiment, Mode
from mesa_dilemmas.scenarios.config import ConfigError, did_you_mean


@dataclass(frozen=True)
class ClaimSet:
    """Claims with the experiments they need (a game's registered ones, or a subset)."""

    claims: tuple[Claim, ...]
    experiments: dict[str, Experiment]

    def needed(self) -> list[Experiment]:
        keys = dict.fromkeys(c.experiment for c in self.claims)
        return [self.experiments[k] for k in keys]


def registered(game: str | None = None) -> ClaimSet:
    """Every registered claim (of one game's claim module, when ``game`` is given)."""
    from mesa_dilemmas.dilemmas.registry import CLAIMS, load_extensions

    claims: list[Claim] = []
    experiments: dict[str, Experiment] = {}
    for module in load_extensions(CLAIMS).values():
        exps = {e.key: e for e in getattr(module, "EXPERIMENTS", [])}
        if game is not None and not any(e.scenario.split("/")[0] == game for e in exps.values()):
            continue
        experiments.update(exps)
        claims += list(getattr(module, "CLAIMS", []))
    return ClaimSet(tuple(claims), experiments)


def select(available: ClaimSet, keys: Sequence[str], where: str) -> ClaimSet:
    """The claims named by ``keys``: a claim's key, a paper id (every claim of that paper
    the set holds) or ``all``; an unknown key is a one-line error naming it."""
    by_key = {c.key: c for c in available.claims}
    chosen: dict[str, Claim] = {}
    for key in keys:
        if key == "all":
            chosen.update(by_key)
        elif key in by_key:
            chosen[key] = by_key[key]
        elif any(c.paper == key for c in available.claims):
            chosen.update({c.key: c for c in available.claims if c.paper == key})
        else:
            raise ConfigError(
                f"{where}: {key!r} is not a claim of this game{did_you_mean(key, list(by_key))}; "
                f"claims: {', '.join(by_key)}"
            )
    return ClaimSet(tuple(chosen.values()), available.experiments)


def scenario_seed(scenario: str, overrides: Sequence[str] = ()) -> int:
    """The seed a scenario runs with under ``overrides`` (its own, or a ``seed=`` override)."""
    from mesa_dilemmas.scenarios.config import load_scenario

    loaded, _ = load_scenario(scenario, list(overrides))
    return int(loaded.seed)


def stream_override(scenario: str, overrides: Sequence[str], stream: int) -> str:
    """The ``seed=`` override that puts a scenario (under ``overrides``) on seed stream
    ``stream`` (:func:`~mesa_dilemmas.scenarios.batch.stream_seed`)."""
    from mesa_dilemmas.scenarios.batch import stream_seed

    return f"seed={stream_seed(scenario_seed(scenario, overrides), stream)}"


def point_overrides(point: dict[str, Any]) -> list[str]:
    """``--set`` overrides that fix the point's model parameters."""
    return [
        f"params.{k}={v!r}" if isinstance(v, str) else f"params.{k}={v}" for k, v in point.items()
    ]


def evaluate_claims(
    claims: ClaimSet,
    point: dict[str, Any],
    *,
    mode: Mode,
    work_dir: Path,
    processes: int = 1,
    sizes: dict[str, list[str]] | None = None,
    keep: bool = False,
    stream: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Run the experiments the claims need with the point's parameters fixed (each at its
    ``mode`` size, or the ``sizes`` overrides given for its key), on seed stream ``stream`` of
    each experiment's scenario (None: the scenario's own seed), judge every claim and return
    ``{claim key: {"z", "status", "ours"}}``; the runs are deleted afterwards unless ``keep``.
    A claim that cannot fail at the point ("not testable": a tie at a cap, a ceiling) has no z
    (NaN): it is excluded from a calibration's weakest-claim objective, not scored zero."""
    from mesa_dilemmas.analysis.verdicts import apply_construction
    from mesa_dilemmas.scenarios.runner import run_scenario

    work_dir.mkdir(parents=True, exist_ok=True)
    dirs: dict[str, Path] = {}
    try:
        for exp in claims.needed():
            run_dir = work_dir / exp.key
            if run_dir.exists():  # left by a killed evaluation: it is run again whole
                shutil.rmtree(run_dir)
            overrides = list((sizes or {}).get(exp.key, exp.overrides(mode)))
            if stream is not None:
                overrides.append(stream_override(exp.scenario, overrides, stream))
            run_scenario(
                exp.scenario,
                out_dir=run_dir,
                overrides=[*overrides, *point_overrides(point)],
                progress=False,
                processes=processes,
            )
            dirs[exp.key] = run_dir
        out = {}
        for claim in claims.claims:
            verdict = apply_construction(claim, claim.judge(dirs[claim.experiment]))
            z = verdict.z if verdict.z is not None and math.isfinite(verdict.z) else math.nan
            if verdict.status == "not testable":
                z = math.nan
            out[claim.key] = {"z": z, "status": verdict.status, "ours": verdict.ours}
        return out
    finally:
        if not keep:
            shutil.rmtree(work_dir, ignore_errors=True)
