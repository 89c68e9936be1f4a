"""Calibration against the reproduction report's claims, and the claims' robustness check:
the z a calibration maximises is the one the report's judge computes on the same run; trial 0
is the defaults; the trade-off tables are written; a resumed study repeats no trial; a bad
claim key is a one-line error; the neighbourhood stays inside the searched box."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from mesa_dilemmas.analysis.verdicts import paired_z, welch_z
from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.dilemmas.fishery import claims as fishery_claims
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.scenarios.batch import CALIBRATION_STREAM
from mesa_dilemmas.scenarios.claim_points import registered, select, stream_override
from mesa_dilemmas.scenarios.robustness import Robustness, lines, neighbourhood
from mesa_dilemmas.scenarios.runner import run_scenario

TINY = (
    'mode = "tiny"\ncombine = "min"\n[[target]]\nclaim = "shock_stock"\n'
    '[[target]]\nclaim = "altruism_harsh"\n'
    "[ranges]\ncatchability = [0.03, 0.05]\nconsumption = [0.5, 2.0]\n"
)


def test_a_claim_calibration_maximises_the_reports_own_z(tmp_path) -> None:
    targets = tmp_path / "targets.toml"
    targets.write_text(TINY)
    out = tmp_path / "cal"
    args = ["calibrate", "fishery/altruism", "--targets", str(targets), "--no-progress"]
    assert main([*args, "--trials", "2", "--out", str(out)]) == 0
    rows = [json.loads(x) for x in (out / "evaluations.jsonl").read_text().splitlines()]
    fields = params_model(FisheryModel).model_fields
    defaults = {k: fields[k].default for k in ("catchability", "consumption")}
    assert rows[0]["params"] == defaults  # trial 0: the scenario's own point
    # trial 0's z are what the claims' judges say of the same experiments run directly on
    # the calibration's seed stream (held out from the report's)
    by_key = {c.key: c for c in fishery_claims.CLAIMS}
    experiments = {e.key: e for e in fishery_claims.EXPERIMENTS}
    for key in ("shock_stock", "altruism_harsh"):
        exp = experiments[by_key[key].experiment]
        overrides = exp.overrides("tiny")
        overrides.append(stream_override(exp.scenario, overrides, CALIBRATION_STREAM))
        run = run_scenario(
            exp.scenario, out_dir=tmp_path / key, overrides=overrides, progress=False
        )
        assert rows[0]["metrics"][key] == pytest.approx(by_key[key].judge(run.out_dir).z)
        assert rows[0]["status"][key] == by_key[key].judge(run.out_dir).status
    best = json.loads((out / "best.json").read_text())["best"][0]
    weakest = min(
        r["metrics"][k] for r in rows for k in r["metrics"] if r["index"] == best["trial"]
    )
    assert best["objectives"]["weakest claim's z"] == pytest.approx(weakest)
    assert set(best["claims"]) == {"shock_stock", "altruism_harsh"}
    table = pd.read_csv(out / "claims.csv")
    assert len(table) == 2 and {"z shock_stock", "verdict altruism_harsh"} <= set(table.columns)
    assert "Non-dominated points" in (out / "tradeoff.md").read_text()
    assert (out / "claims.png").stat().st_size > 1000
    assert not (out / "work").exists() or not any((out / "work").iterdir())  # runs deleted
    # resuming to three trials evaluates one more point and repeats none
    assert (
        main(
            [
                "calibrate",
                "fishery/altruism",
                "--resume",
                str(out),
                "--trials",
                "3",
                "--no-progress",
            ]
        )
        == 0
    )
    again = (out / "evaluations.jsonl").read_text().splitlines()
    assert len(again) == 3 and [json.loads(x) for x in again[:2]] == rows


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('[[target]]\nclaim = "shock_stok"\n', "did you mean 'shock_stock'"),
        ('[[target]]\nclaims = "999"\n', "'999' is not a claim"),
        ('combine = "min"\n[[target]]\nmetric = "efficiency"\ndirection = "maximize"\n', "claim"),
        ('[[target]]\nclaim = "shock_stock"\n[sizes]\nshok = ["replications=2"]\n', "'shok'"),
        ('[[target]]\nclaim = "shock_stock"\n[ranges]\ncatchabilty = [0.1, 0.2]\n', "catchab"),
    ],
)
def test_bad_claim_targets_are_one_line_errors(tmp_path, capsys, text, match) -> None:
    targets = tmp_path / "t.toml"
    targets.write_text(text)
    code = main(
        [
            "calibrate",
            "fishery/altruism",
            "--targets",
            str(targets),
            "--param",
            "catchability=0.03:0.05",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and match in err and "\n" not in err, err


def test_every_fishery_claim_can_be_a_target() -> None:
    chosen = select(registered("fishery"), ["003"], "t")
    assert {c.key for c in chosen.claims} == {c.key for c in fishery_claims.CLAIMS}
    assert {e.key for e in chosen.needed()} == {"shock", "beta_r", "altruism"}


def test_standardised_effects() -> None:
    assert welch_z([1, 2, 3], [1, 2, 3]) == 0
    assert welch_z([5, 5, 5], [1, 1, 1]) == 10 and welch_z([1, 1], [5, 5]) == -10
    assert welch_z([2, 3, 4], [0, 1, 2]) == pytest.approx(2 / math.sqrt(2 / 3))
    assert paired_z([1, 1, 1]) == 10 and math.isnan(paired_z([1]))


def test_the_neighbourhood_moves_one_parameter_and_stays_in_the_box() -> None:
    centre = {"a": 1.0, "b": 0.8}
    around = neighbourhood(centre, {"a": (0.5, 2.0), "b": (0.0, 0.9)})
    assert [label for label, _ in around] == ["a x0.75", "a x1.25", "b x0.75", "b = 0.9 (box edge)"]
    for _, point in around:
        assert sum(point[k] != centre[k] for k in centre) == 1


def test_the_robustness_table_counts_what_the_neighbours_say() -> None:
    claims = select(registered("fishery"), ["shock_stock", "altruism_harsh"], "t")

    def res(a: float, b: float) -> dict:
        return {"shock_stock": {"z": a, "status": ""}, "altruism_harsh": {"z": b, "status": ""}}

    r = Robustness(
        {"x": 1.0},
        res(2.0, 3.0),
        [("x x0.75", {"x": 0.75}, res(-1.0, 2.0)), ("x x1.25", {"x": 1.25}, res(1.0, 1.0))],
    )
    assert (r.held("shock_stock"), r.significant("shock_stock")) == (1, 0)
    assert (r.held("altruism_harsh"), r.significant("altruism_harsh")) == (2, 1)
    text = "\n".join(lines(r, claims, 1.0, "quick"))
    assert "| Fig. 2: shock_stock | +2.0 | 1/2 | 0/2 | 0/2 | x x0.75 (-1.0) |" in text
    assert "| Fig. 12: altruism_harsh | +3.0 | 2/2 | 1/2 | 0/2 | - |" in text
    assert "fresh seeds" in text


def test_a_neighbour_where_the_claim_cannot_fail_counts_neither_way() -> None:
    claims = select(registered("fishery"), ["altruism_rich"], "t")
    tie = {"altruism_rich": {"z": math.nan, "status": "not testable"}}
    r = Robustness(
        {"x": 1.0},
        tie,
        [
            ("x x0.75", {"x": 0.75}, tie),
            ("x x1.25", {"x": 1.25}, {"altruism_rich": {"z": -2.0, "status": "not reproduced"}}),
        ],
    )
    assert (r.held("altruism_rich"), r.untestable("altruism_rich")) == (0, 1)
    text = "\n".join(lines(r, claims, 1.0, "quick"))
    assert "| Fig. 12: altruism_rich | not testable | 0/1 | 0/1 | 1/2 | everywhere |" in text
