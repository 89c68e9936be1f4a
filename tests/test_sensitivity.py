"""``mesa-dilemmas sensitivity``: the Ishigami known answer through the command's own path, a
Morris run, resuming, and tiny end-to-end runs on the fishery and Port of Mars."""

from __future__ import annotations

import json

import numpy as np

from mesa_dilemmas.cli import main
from tests.ishigami_game import S1, ST


def _scenario(tmp_path, replications=1, max_steps=1):
    path = tmp_path / "ishigami.toml"
    path.write_text(
        'name = "ishigami"\ngame = "tests.ishigami_game:IshigamiModel"\n'
        f"seed = 3\nreplications = {replications}\nmax_steps = {max_steps}\n"
    )
    return str(path)


PARAMS = [
    "--param",
    "x1=-3.141592653589793:3.141592653589793",
    "--param",
    "x2=-3.141592653589793:3.141592653589793",
    "--param",
    "x3=-3.141592653589793:3.141592653589793",
]


def test_ishigami_sobol_indices_within_their_confidence_intervals(tmp_path, capsys) -> None:
    out = tmp_path / "sobol"
    assert (
        main(
            [
                "sensitivity",
                _scenario(tmp_path),
                "--method",
                "sobol",
                *PARAMS,
                "--samples",
                "2048",
                "--metric",
                "y",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    table = json.loads((out / "indices.json").read_text())["indices"]
    for i, name in enumerate(("x1", "x2", "x3")):
        row = table[name]
        assert abs(row["S1"] - S1[i]) <= row["S1_conf"], (name, row, S1[i])
        assert abs(row["ST"] - ST[i]) <= row["ST_conf"], (name, row, ST[i])
        assert row["S1_conf"] < 0.08 and row["ST_conf"] < 0.08  # informative intervals
    assert (out / "sensitivity.png").stat().st_size > 1000
    assert len((out / "evaluations.jsonl").read_text().splitlines()) == 2048 * 5
    assert "S1" in capsys.readouterr().out


def test_morris_and_resume(tmp_path) -> None:
    out = tmp_path / "morris"
    args = [
        "sensitivity",
        _scenario(tmp_path),
        "--method",
        "morris",
        *PARAMS,
        "--samples",
        "40",
        "--metric",
        "y",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    first = json.loads((out / "indices.json").read_text())["indices"]
    assert first["x2"]["mu_star"] > first["x3"]["mu_star"] > 0
    assert all(np.isfinite(first[n]["sigma_conf"]) for n in first)
    log = out / "evaluations.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:50]) + "\n" + lines[50][:7])  # killed mid-write
    assert main(["sensitivity", _scenario(tmp_path), "--resume", str(out), "--no-progress"]) == 0
    assert len(log.read_text().splitlines()) == len(lines) + 1  # the cut line stays, ignored
    again = json.loads((out / "indices.json").read_text())["indices"]
    assert again == first


def test_bad_parameters_are_one_line_errors(tmp_path, capsys) -> None:
    for bad, match in (
        (["--param", "x9=0:1"], "'x9' is not a parameter"),
        (["--param", "x1=0:9"], "x1 = 9.0"),
        (["--param", "x1=1:0"], "LOW"),
    ):
        assert (
            main(
                [
                    "sensitivity",
                    _scenario(tmp_path),
                    *bad,
                    "--metric",
                    "y",
                    "--out",
                    str(tmp_path / "bad"),
                ]
            )
            != 0
        )
        err = capsys.readouterr().err.strip()
        assert match in err and "\n" not in err, err


def test_fishery_sobol_on_the_vector_engine(tmp_path) -> None:
    out = tmp_path / "fishery"
    assert (
        main(
            [
                "sensitivity",
                "fishery/beta_growth_sweep",
                "--param",
                "penalty=2:18",
                "--param",
                "growth_rate=0.2:0.8",
                "--samples",
                "8",
                "--metric",
                "survival_time",
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
    table = json.loads((out / "indices.json").read_text())
    assert table["points"] == 8 * 4 and set(table["indices"]) == {"penalty", "growth_rate"}


def test_port_of_mars_morris(tmp_path) -> None:
    out = tmp_path / "pom"
    assert (
        main(
            [
                "sensitivity",
                "port_of_mars/svo_rule_based",
                "--method",
                "morris",
                "--param",
                "life_as_usual_copies=4:20",
                "--param",
                "n_rounds=4:9",
                "--samples",
                "3",
                "--metric",
                "points_mean",
                "--set",
                "replications=1",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    table = json.loads((out / "indices.json").read_text())
    assert table["points"] == 3 * 3 and (out / "sensitivity.png").exists()
