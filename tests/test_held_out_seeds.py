"""Held-out seeds: the reproduction report, its robustness check and a calibration run on
disjoint seed streams; ``calibrate`` refuses the report's; ``reproduce`` judges every claim on
k streams and says in how many its verdict holds."""

from __future__ import annotations

import importlib.util
import json
import math
import tomllib
from pathlib import Path

import pytest
from cli_runner import cli, cli_in_process

from mesa_dilemmas.scenarios.batch import (
    CALIBRATION_STREAM,
    REPORT_STREAMS,
    ROBUSTNESS_STREAM,
    reserved_stream,
    stream_seed,
)
from mesa_dilemmas.scenarios.calibrate import Target, Targets

TARGETS = (
    'mode = "tiny"\ncombine = "min"\n[[target]]\nclaim = "shock_stock"\n'
    "[ranges]\ncatchability = [0.03, 0.05]\n"
)


def test_streams_are_distinct_seeds_and_none_is_the_scenarios_own() -> None:
    for seed in (2026, 2027, 2028, 2002, 2006):
        used = [stream_seed(seed, s) for s in (*range(1, 6), ROBUSTNESS_STREAM)]
        calibration = [stream_seed(seed, CALIBRATION_STREAM + i) for i in range(5)]
        assert len(set(used) | set(calibration)) == len(used) + len(calibration)
        assert seed not in used + calibration  # the docs' runs use the scenario's own seed
    assert stream_seed(2026, 3) == stream_seed(2026, 3)  # reproducible
    with pytest.raises(ValueError, match="stream"):
        stream_seed(2026, -1)


def test_only_calibration_streams_are_free() -> None:
    assert reserved_stream(REPORT_STREAMS.start) and reserved_stream(ROBUSTNESS_STREAM)
    assert reserved_stream(CALIBRATION_STREAM - 1) is not None
    assert reserved_stream(CALIBRATION_STREAM) is None


@pytest.mark.parametrize("stream", ["1", "3", str(ROBUSTNESS_STREAM), "999"])
def test_calibrate_refuses_the_reports_seeds(tmp_path, stream: str) -> None:
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    out = tmp_path / "cal"
    code, err = cli_in_process(
        ["calibrate", "fishery/altruism", "--targets", str(targets), "--trials", "1"]
        + ["--stream", stream, "--out", str(out), "--no-progress"]
    )
    assert code == 2
    assert err.strip().count("\n") == 0 and f"--stream {stream}" in err, err
    assert not (out / "study.db").exists()  # refused before anything ran


def test_a_calibration_runs_on_its_own_stream(tmp_path) -> None:
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    out = tmp_path / "cal"
    code, err = cli_in_process(
        ["calibrate", "fishery/altruism", "--targets", str(targets), "--trials", "1"]
        + ["--stream", str(CALIBRATION_STREAM + 7), "--out", str(out), "--no-progress"]
    )
    assert code == 0, err
    assert json.loads((out / "calibration.json").read_text())["stream"] == CALIBRATION_STREAM + 7


def test_a_claim_that_cannot_fail_is_left_out_of_the_weakest_z() -> None:
    targets = Targets([Target("a", "maximize", claim=True), Target("b", "maximize", claim=True)])
    targets = Targets(targets.targets, combine="min")
    # b ties at the cap: not testable, so the objective is a's z, not min(a, 0)
    assert targets.values({"a": 1.5, "b": math.nan}, {"a": "reproduced", "b": "not testable"}) == [
        1.5
    ]
    # a claim that could fail but was not judged still fails the trial
    assert math.isnan(targets.values({"a": 1.5, "b": math.nan}, {"b": "inconclusive"})[0])
    # a point where no claim can fail says nothing: the trial fails
    assert math.isnan(
        targets.values({"a": math.nan, "b": math.nan}, dict.fromkeys("ab", "not testable"))[0]
    )


def test_reproduce_judges_each_claim_on_k_streams(tmp_path) -> None:
    out = tmp_path / "rep"
    result = cli(
        "reproduce",
        "--tiny",
        "--only",
        "shock",
        "--streams",
        "3",
        "--out",
        str(out),
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    seeds = []
    for d in (out / "runs" / "shock", *sorted((out / "runs" / "streams").iterdir())):
        seeds.append(tomllib.loads((d / "config.toml").read_text())["seed"])
    assert seeds == [stream_seed(2026, s) for s in (1, 2, 3)]  # never 2026, never a calibration's
    data = json.loads((out / "reproduction.json").read_text())
    assert data["streams"] == 3
    text = (out / "reproduction.md").read_text()
    assert "| streams agreeing (of 3) | verdict |" in text and "3 independent seed streams" in text
    for claim in data["claims"]:
        assert len(claim["streams"]) == 3 and claim["streams"][0] == claim["status"]
        same = sum(s == claim["status"] for s in claim["streams"])
        row = next(line for line in text.splitlines() if claim["statement"] in line)
        assert row.endswith(f" {same}/3 | **{claim['status']}** |")
    # README's findings table is written from these rows (scripts/readme_findings.py)
    spec = importlib.util.spec_from_file_location(
        "readme_findings", Path(__file__).resolve().parents[1] / "scripts" / "readme_findings.py"
    )
    findings = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(findings)
    rows, _ = findings.report_rows(text)
    assert [r[3] for r in rows] == [c["status"] for c in data["claims"]]


def test_reproduce_refuses_a_bad_stream_count(tmp_path) -> None:
    code, err = cli_in_process(
        ["reproduce", "--tiny", "--streams", "0", "--out", str(tmp_path / "r")]
    )
    assert code == 2 and "--streams" in err


def test_a_study_from_before_the_streams_is_not_resumed_on_other_seeds(tmp_path) -> None:
    out = tmp_path / "old"
    out.mkdir()
    (out / "calibration.json").write_text(
        json.dumps({"targets": [], "ranges": {}, "trials": 1, "seed": 2028})
    )
    code, err = cli_in_process(["calibrate", "fishery/altruism", "--resume", str(out)])
    assert code == 2 and "own seeds" in err and err.strip().count("\n") == 0


def test_a_resumed_report_reuses_every_finished_stream(tmp_path) -> None:
    out = tmp_path / "rep"
    args = ["reproduce", "--tiny", "--only", "shock", "--streams", "2"]
    first = cli(*args, "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = (out / "runs" / "streams" / "shock-s2" / "steps.parquet").read_bytes()
    again = cli(*args, "--resume", str(out))
    assert again.returncode == 0, again.stderr
    assert "shock stream 2 finished earlier" in again.stdout
    assert "reusing shock, shock stream 2" in (out / "reproduction.md").read_text()
    assert (out / "runs" / "streams" / "shock-s2" / "steps.parquet").read_bytes() == before
