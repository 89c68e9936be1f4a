"""``mesa-dilemmas calibrate``: a single-objective search that finds the Ishigami maximum's
region, a multi-objective fishery study with its Pareto front, resuming a killed study, and a
tiny Port of Mars run."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd

from mesa_dilemmas.cli import main


def _ishigami(tmp_path) -> str:
    path = tmp_path / "ishigami.toml"
    path.write_text(
        'name = "ishigami"\ngame = "tests.ishigami_game:IshigamiModel"\nseed = 1\nmax_steps = 1\n'
    )
    return str(path)


def _targets(tmp_path, text: str) -> str:
    path = tmp_path / "targets.toml"
    path.write_text(text)
    return str(path)


def test_single_objective_and_resume(tmp_path) -> None:
    targets = _targets(tmp_path, '[[target]]\nmetric = "y"\nvalue = 6.0\n')
    out = tmp_path / "cal"
    args = [
        "calibrate",
        _ishigami(tmp_path),
        "--targets",
        targets,
        "--param",
        "x2=0:3",
        "--param",
        "x1=0:1.5",
    ]
    assert main([*args, "--trials", "12", "--out", str(out), "--no-progress"]) == 0
    assert len(pd.read_csv(out / "trials.csv")) == 12
    # resume to more trials: the 12 finished ones are kept, not recomputed
    before = (out / "evaluations.jsonl").read_text().splitlines()
    assert (
        main(
            [
                "calibrate",
                _ishigami(tmp_path),
                "--resume",
                str(out),
                "--trials",
                "40",
                "--no-progress",
            ]
        )
        == 0
    )
    after = (out / "evaluations.jsonl").read_text().splitlines()
    assert after[:12] == before and len(after) == 40
    best = json.loads((out / "best.json").read_text())["best"][0]
    assert best["objectives"]["|y - 6|"] < 0.5  # y = sin x1 + 7 sin^2 x2 reaches 6
    with sqlite3.connect(out / "study.db") as db:
        assert db.execute("select count(*) from trials").fetchone()[0] == 40
    assert (out / "calibration.png").stat().st_size > 1000


def test_fishery_pareto_front(tmp_path) -> None:
    targets = _targets(
        tmp_path,
        '[[target]]\nmetric = "survival_time"\ndirection = "maximize"\n'
        '[[target]]\nmetric = "efficiency"\ndirection = "maximize"\n',
    )
    out = tmp_path / "fish"
    assert (
        main(
            [
                "calibrate",
                "fishery/beta_growth_sweep",
                "--targets",
                targets,
                "--param",
                "penalty=2:18",
                "--param",
                "growth_rate=0.2:0.8",
                "--trials",
                "10",
                "--set",
                "replications=3",
                "--set",
                "max_steps=40",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    front = json.loads((out / "best.json").read_text())["pareto_front"]
    assert front and all(set(p["params"]) == {"penalty", "growth_rate"} for p in front)


def test_port_of_mars_tiny(tmp_path) -> None:
    targets = _targets(tmp_path, '[[target]]\nmetric = "points_mean"\ndirection = "maximize"\n')
    out = tmp_path / "pom"
    assert (
        main(
            [
                "calibrate",
                "port_of_mars/svo_rule_based",
                "--targets",
                targets,
                "--param",
                "life_as_usual_copies=4:20",
                "--trials",
                "3",
                "--set",
                "replications=1",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (out / "calibration.png").exists()


def test_bad_targets_are_one_line_errors(tmp_path, capsys) -> None:
    for text, match in (
        ('[[target]]\nmetric = "yy"\ndirection = "maximize"\n', "'yy'"),
        ('[[target]]\nmetric = "y"\ndirection = "up"\n', "direction"),
        ('[[target]]\nclaim = "x"\n', "claim"),
    ):
        assert (
            main(
                [
                    "calibrate",
                    _ishigami(tmp_path),
                    "--targets",
                    _targets(tmp_path, text),
                    "--param",
                    "x1=0:1",
                    "--out",
                    str(tmp_path / "bad"),
                ]
            )
            != 0
        )
        err = capsys.readouterr().err.strip()
        assert match in err and "\n" not in err, err
