"""How robust a game's claims are to the parameters its paper leaves open: every claim judged
at the defaults and at each open parameter moved by -25% and +25% (kept inside the searched
box), the others fixed.

A game takes part by naming its calibration targets file in its claims module
(``CALIBRATION_TARGETS``, see :mod:`~mesa_dilemmas.scenarios.calibrate`): the file's
``[ranges]`` are the open parameters and its ``[sizes]`` the experiment sizes of the quick
report's check (the full report uses the experiments' quick sizes).  The claims are judged by
their own judges through :mod:`~mesa_dilemmas.scenarios.claim_points`, so the check reads each
finding exactly as the report does.
"""

from __future__ import annotations

import json
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mesa_dilemmas.analysis.verdicts import Section
from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.files import write_text_atomic
from mesa_dilemmas.scenarios.claim_points import ClaimSet, evaluate_claims

#: a claim's effect counts as significant above this z (one-sided p < 0.05)
SIGNIFICANT = 1.64


@dataclass(frozen=True)
class Robustness:
    """Every claim's z and verdict at a point and at its neighbours."""

    centre: dict[str, float]
    centre_results: dict[str, dict[str, Any]]
    neighbours: list[tuple[str, dict[str, float], dict[str, dict[str, Any]]]]

    def zs(self, claim: str) -> list[float]:
        return [r[claim]["z"] for _, _, r in self.neighbours]

    def held(self, claim: str) -> int:
        return sum(z > 0 for z in self.zs(claim))

    def significant(self, claim: str) -> int:
        return sum(z > SIGNIFICANT for z in self.zs(claim))

    def untestable(self, claim: str) -> int:
        """Neighbours where the claim cannot fail (not testable: no z)."""
        return sum(r[claim]["status"] == "not testable" for _, _, r in self.neighbours)

    def failures(self, claim: str) -> list[str]:
        return [
            f"{label} ({r[claim]['z']:+.1f})"
            for label, _, r in self.neighbours
            if not r[claim]["z"] > 0 and r[claim]["status"] != "not testable"
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "centre": self.centre,
            "centre_results": self.centre_results,
            "neighbours": [
                {"label": label, "params": p, "results": r} for label, p, r in self.neighbours
            ],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Robustness:
        return cls(
            d["centre"],
            d["centre_results"],
            [(n["label"], n["params"], n["results"]) for n in d["neighbours"]],
        )


def open_parameters(targets_file: Path) -> dict[str, tuple[float, float]]:
    """The ``[ranges]`` of a calibration targets file: the open parameters and their box."""
    raw = tomllib.loads(Path(targets_file).read_text())
    return {k: (float(lo), float(hi)) for k, (lo, hi) in raw.get("ranges", {}).items()}


def defaults(game: str, names: list[str]) -> dict[str, float]:
    fields = params_model(game_model(game)).model_fields
    return {name: fields[name].default for name in names}


def neighbourhood(
    centre: dict[str, float], box: dict[str, tuple[float, float]], factor: float = 0.25
) -> list[tuple[str, dict[str, float]]]:
    """Each open parameter moved to x(1 - factor) and x(1 + factor) of the centre, the others
    fixed; a move that leaves the box stops at its edge (and is labelled with the value)."""
    out = []
    for name, value in centre.items():
        low, high = box[name]
        for f in (1 - factor, 1 + factor):
            moved = min(max(value * f, low), high)
            if moved == value:
                continue
            label = f"{name} x{f:g}" if moved == value * f else f"{name} = {moved:g} (box edge)"
            out.append((label, {**centre, name: moved}))
    return out


def check(
    claims: ClaimSet,
    game: str,
    box: dict[str, tuple[float, float]],
    *,
    mode: str,
    sizes: dict[str, list[str]] | None,
    work_dir: Path,
    processes: int = 1,
    progress: bool = False,
    stream: int | None = None,
) -> Robustness:
    """Every claim at the defaults and their neighbours, on seed stream ``stream`` of the
    experiments' scenarios (the report: its own robustness stream, fresh seeds that neither
    the calibration nor the report's verdicts use)."""
    centre = defaults(game, list(box))
    points = [("defaults", centre), *neighbourhood(centre, box)]
    results = []
    for i, (label, point) in enumerate(points):
        if progress:
            print(f"  robustness {i + 1}/{len(points)}: {label}", flush=True)
        results.append(
            evaluate_claims(
                claims,
                point,
                mode=mode,  # type: ignore[arg-type]
                work_dir=work_dir / f"point_{i:03d}",
                processes=processes,
                sizes=sizes,
                stream=stream,
            )
        )
    return Robustness(
        centre,
        results[0],
        [(label, p, r) for (label, p), r in zip(points[1:], results[1:], strict=True)],
    )


def robustness_section(
    claims: ClaimSet,
    game: str,
    targets_file: Path,
    *,
    mode: str,
    out: Path,
    processes: int,
    progress: bool,
) -> Section | None:
    """The report's section for one game (``None`` in tiny mode); on ``--resume`` an earlier
    invocation's result is reused."""
    if mode == "tiny" or not claims.claims:
        return None
    raw = tomllib.loads(Path(targets_file).read_text())
    sizes = raw.get("sizes") if mode == "quick" else None
    box = open_parameters(targets_file)
    from mesa_dilemmas.scenarios.batch import ROBUSTNESS_STREAM

    saved = out / "runs" / f"robustness_{game}.json"
    if saved.is_file():
        data = json.loads(saved.read_text())
        if data.get("mode") == mode and data.get("stream") == ROBUSTNESS_STREAM:
            r = Robustness.from_dict(data)
            return Section(
                f"robustness {game}",
                lines(r, claims, data["wall_s"], mode, calibration_zs(targets_file)),
                data["wall_s"],
                True,
            )
    if progress:
        print(f"reproduce: robustness of {game}'s claims", flush=True)
    started = time.perf_counter()
    r = check(
        claims,
        game,
        box,
        mode="quick",
        sizes=sizes,
        work_dir=out / "runs" / f"robustness_{game}",
        processes=processes,
        progress=progress,
        stream=ROBUSTNESS_STREAM,
    )
    wall = time.perf_counter() - started
    write_text_atomic(
        saved,
        json.dumps(
            {"mode": mode, "stream": ROBUSTNESS_STREAM, "wall_s": round(wall, 1), **r.as_dict()},
            indent=2,
        ),
    )
    return Section(
        f"robustness {game}", lines(r, claims, wall, mode, calibration_zs(targets_file)), wall
    )


def calibration_zs(targets_file: Path) -> dict[str, float]:
    """The chosen point's z per claim on the calibration's own seeds, from the study committed
    beside the targets file (``calibration_study.json``: its row labelled ``chosen...``)."""
    study = Path(targets_file).with_name("calibration_study.json")
    if not study.is_file():
        return {}
    rows = json.loads(study.read_text()).get("rows", [])
    chosen = next((r for r in rows if str(r.get("label", "")).startswith("chosen")), None)
    return {} if chosen is None else {k: float(v) for k, v in chosen.get("z", {}).items()}


def _z_text(result: dict[str, Any]) -> str:
    if result.get("status") == "not testable":
        return "not testable"
    z = result.get("z")
    return "n/a" if z is None or z != z else f"{z:+.1f}"


def lines(
    r: Robustness,
    claims: ClaimSet,
    wall: float,
    mode: str,
    calibrated: dict[str, float] | None = None,
) -> list[str]:
    """The section's table; ``calibrated``: each claim's z at the chosen point on the
    calibration's own seeds, shown beside its z there on fresh seeds."""
    calibrated = calibrated or {}
    n = len(r.neighbours)
    centre = ", ".join(f"{k} {v:g}" for k, v in r.centre.items())
    out = [
        "## Robustness of the claims to what the paper leaves open",
        "",
        f"Each open parameter moved by -25% and +25% around the defaults ({centre}), the "
        f"others fixed: {n} neighbours, {wall:.0f} s, experiments at the "
        f"{'calibration' if mode == 'quick' else 'quick report'}'s sizes, on fresh seeds "
        "(the robustness check's own seed stream, which neither the calibration nor the "
        "report's verdicts use). z is each claim's standardised effect as its judge computes "
        f"it (> 0: the paper's direction; > {SIGNIFICANT}: significant one-sided); a point "
        "where the claim cannot fail (a tie at the round cap, a ceiling) is not testable and "
        "counted neither way.",
        "",
        "| claim | "
        + ("z on the calibration's seeds and sizes | " if calibrated else "")
        + "z at the defaults, fresh seeds | direction holds | significant | not testable "
        "| where it fails |",
        "|---|---|---|---|---|---|" + ("---|" if calibrated else ""),
    ]
    for claim in claims.claims:
        if claim.key not in r.centre_results:
            continue
        held, sig = r.held(claim.key), r.significant(claim.key)
        untestable = r.untestable(claim.key)
        fails = r.failures(claim.key)
        testable = n - untestable
        where = "-" if not fails else ", ".join(fails) if len(fails) < testable else "everywhere"
        before = calibrated.get(claim.key)
        out.append(
            f"| {claim.where}: {claim.key} | "
            + (f"{before:+.1f} | " if before is not None else "- | " if calibrated else "")
            + f"{_z_text(r.centre_results[claim.key])} | "
            f"{held}/{testable} | {sig}/{testable} | {untestable}/{n} | {where} |"
        )
    return [*out, ""]
