"""The fishery's section of the reproduction report: its findings at the +-25% neighbours of
the calibrated defaults (:func:`mesa_dilemmas.dilemmas.fishery.calibration.robustness`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mesa_dilemmas.analysis.verdicts import Section
from mesa_dilemmas.dilemmas.fishery.calibration import FINDINGS, Robustness, robustness
from mesa_dilemmas.files import write_text_atomic

#: replications per cell of the robustness check (the shock uses twice as many pairs)
ROBUSTNESS_REPS: dict[str, int] = {"tiny": 0, "quick": 6, "full": 24}

FINDING_NAMES = {
    "shock": "Fig. 2, punishment switched off (effort rise and stock drop, paired)",
    "beta": "Fig. 3, survival with beta = 18 vs 2 at r = 0.3 and 0.5",
    "harsh": "Fig. 12, harsh lake: altruists outlast mixed and selfish groups",
    "rich": "Fig. 12, rich lake: mixed or selfish groups outlast altruists",
}


def robustness_section(
    *, claims: Sequence[Any], mode: str, out: Path, processes: int, progress: bool, **_: Any
) -> Section | None:
    """Run (or, on ``--resume``, reuse) the robustness check and write its section."""
    reps = ROBUSTNESS_REPS[mode]
    if not reps or not any(c.finding in FINDINGS for c in claims):
        return None
    saved = out / "runs" / "robustness.json"
    if saved.is_file():  # --resume: computed by an earlier invocation
        data = json.loads(saved.read_text())
        if data["reps"] == reps:
            r = Robustness(
                reps,
                data["centre"],
                data["centre_effects"],
                [(n["label"], n["params"], n["effects"]) for n in data["neighbours"]],
            )
            return Section("robustness", _lines(r, claims, data["wall_s"]), data["wall_s"], True)
    if progress:
        print(f"reproduce: robustness of the fishery findings ({reps} replications)", flush=True)
    started = time.perf_counter()
    r = robustness(reps, processes=processes)
    wall = time.perf_counter() - started
    write_text_atomic(
        saved,
        json.dumps(
            {
                "reps": reps,
                "centre": r.centre,
                "centre_effects": r.centre_effects,
                "neighbours": [
                    {"label": label, "params": p, "effects": z} for label, p, z in r.neighbours
                ],
                "wall_s": round(wall, 1),
            },
            indent=2,
        ),
    )
    return Section("robustness", _lines(r, claims, wall), wall)


def _lines(r: Robustness, claims: Sequence[Any], wall: float) -> list[str]:
    n = len(r.neighbours)
    lines = [
        "## Robustness of paper 003's findings",
        "",
        f"Each parameter the paper leaves open ({', '.join(r.centre)}) moved by -25% and +25% "
        f"around the defaults, the others fixed: {n} neighbours, {r.reps} replications per cell "
        f"({2 * r.reps} pairs for the shock), {wall:.0f} s. An effect is a "
        "standardised difference z (positive = the paper's direction); it holds where z > 0 and "
        "is significant where z > 1.64 (one-sided p < 0.05). The effects and the calibration "
        "are described in `mesa_dilemmas/dilemmas/fishery/calibration.py`.",
        "",
        "| finding | claims | z at the defaults | direction holds | significant | where it fails |",
        "|---|---|---|---|---|---|",
    ]
    for f in FINDINGS:
        found = [c.where for c in claims if c.finding == f]
        if not found:
            continue
        held, sig = r.held(f), r.significant(f)
        lines.append(
            f"| {FINDING_NAMES[f]} | {len(found)} | {r.centre_effects[f]:+.1f} | "
            f"{held}/{n} ({held / n:.0%}) | {sig}/{n} ({sig / n:.0%}) | "
            f"{_where_it_fails(r, f)} |"
        )
    return [*lines, ""]


def _where_it_fails(r: Robustness, finding: str) -> str:
    fails = r.failures(finding)
    if not fails:
        return "-"
    if len(fails) < len(r.neighbours):
        return ", ".join(fails)
    zs = [z[finding] for _, _, z in r.neighbours]
    return f"everywhere (z from {min(zs):+.1f} to {max(zs):+.1f})"
