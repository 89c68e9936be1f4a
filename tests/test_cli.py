"""The command line as a user meets it: listing, running, bad configs, determinism, figures."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_runner import cli

from mesa_dilemmas.cli import main

SMALL = ["--set", "replications=3", "--set", "max_steps=20", "--no-progress"]


def test_scenarios_lists_bundled_with_descriptions(capsys):
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    for name in ("fishery/punishment_shock", "fishery/beta_growth_sweep", "fishery/altruism"):
        line = next(line for line in out.splitlines() if line.startswith(name))
        assert "Paper 003" in line


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('game = "fishery"\n[params]\nbetta = 3\n', "params.betta: unknown key; allowed:"),
        ('game = "fishery"\nreplications = "ten"\n', "replications:"),
        (
            'game = "fishery"\n[params]\ngrowth_rate = 5.0\n',
            "params.growth_rate: Input should be less than or equal to 2",
        ),
        (
            'game = "fishery"\n[grid]\npenalty = [2.0, -1.0]\n',
            "grid.penalty: Input should be greater than or equal to 0",
        ),
        (
            'game = "fishery"\nreplicates = 3\n',
            "replicates: unknown key (did you mean 'replications'?); allowed:",
        ),
        ('game = "tennis"\n', "game: unknown game 'tennis'; allowed:"),
        (
            'game = "fishery"\n[params]\npopulation = "aliens"\n',
            "params.population: Input should be 'general' or 'typed'",
        ),
        (
            'game = "fishery"\n[options]\nchunks = 2\n',
            "options.chunks: unknown key (did you mean 'keep_chunks'?)",
        ),
    ],
)
def test_invalid_config_fails_fast_with_one_line_naming_the_field(tmp_path, toml, field):
    scenario = tmp_path / "bad.toml"
    scenario.write_text(toml)
    out = tmp_path / "out"
    result = cli("run", str(scenario), "--out", str(out))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0], result.stderr
    assert not out.exists()


def test_bad_override_and_missing_scenario(tmp_path, capsys):
    assert (
        main(["run", "fishery/punishment_shock", "--set", "penalty", "--out", str(tmp_path / "x")])
        == 2
    )
    assert "expected key=value" in capsys.readouterr().err
    assert main(["run", "fishery/nope", "--out", str(tmp_path / "y")]) == 2
    assert "no such bundled scenario" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_run_writes_the_run_directory(tmp_path):
    out = tmp_path / "run"
    result = cli("run", "fishery/punishment_shock", "--out", str(out), *SMALL, "--figures")
    assert result.returncode == 0, result.stderr
    for name in (
        "config.toml",
        "runs.parquet",
        "steps.parquet",
        "summary.json",
        "manifest.json",
        "punishment_shock.png",
    ):
        assert (out / name).exists(), name
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 3 * 4 and runs["RunId"].tolist() == list(range(12))
    assert {"seed", "penalty", "punishment_off_at", "survival_time", "efficiency"} <= set(
        runs.columns
    )
    steps = pd.read_parquet(out / "steps.parquet")
    assert (
        steps.groupby("RunId")["Step"].max().eq(20).all()
    )  # stop_at_collapse=false: every run is 20 steps
    summary = json.loads((out / "summary.json").read_text())
    assert (
        len(summary["groups"]) == 4 and summary["groups"][0]["metrics"]["survival_time"]["n"] == 3
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["seeds"]) == 3 and manifest["versions"]["mesa"].startswith("3.")
    config = (out / "config.toml").read_text()
    assert "catchability" in config  # fully resolved: every model parameter with its value


def test_same_seed_same_runs_any_process_count(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert main(["run", "fishery/altruism", "--out", str(a), *SMALL]) == 0
    assert main(["run", "fishery/altruism", "--out", str(b), *SMALL]) == 0
    assert main(["run", "fishery/altruism", "--out", str(c), *SMALL, "--processes", "2"]) == 0
    ra, rb, rc = (pd.read_parquet(p / "runs.parquet") for p in (a, b, c))
    pd.testing.assert_frame_equal(ra, rb)
    pd.testing.assert_frame_equal(ra, rc)
    d = tmp_path / "d"
    assert main(["run", "fishery/altruism", "--out", str(d), *SMALL, "--set", "seed=99"]) == 0
    assert not pd.read_parquet(d / "runs.parquet")["survival_time"].equals(ra["survival_time"])


def test_refuses_to_overwrite_and_resumes_chunks(tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        "run",
        "fishery/altruism",
        "--out",
        str(out),
        *SMALL,
        "--set",
        "options.replications_per_chunk=1",
        "--set",
        "options.keep_chunks=true",
    ]
    assert main(args) == 0
    first = pd.read_parquet(out / "runs.parquet")
    assert main(args) == 2 and "not empty" in capsys.readouterr().err
    (out / "partial" / "chunk_00002.parquet").unlink()  # as if killed during the last chunk
    assert (
        main(
            [
                "run",
                "fishery/altruism",
                "--resume",
                str(out),
                *SMALL[:-1],
                "--set",
                "options.replications_per_chunk=1",
                "--set",
                "options.keep_chunks=true",
                "--no-progress",
            ]
        )
        == 0
    )
    pd.testing.assert_frame_equal(first, pd.read_parquet(out / "runs.parquet"))


def test_user_toml_file_runs(tmp_path):
    scenario = tmp_path / "mine.toml"
    scenario.write_text(
        'description = "mine"\ngame = "fishery"\nreplications = 2\nmax_steps = 5\n'
        "[params]\nn_agents = 6\n[grid]\ngrowth_rate = [0.3, 0.5]\n"
    )
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    runs = pd.read_parquet(tmp_path / "o" / "runs.parquet")
    assert sorted(runs["growth_rate"].unique()) == [0.3, 0.5] and len(runs) == 4
