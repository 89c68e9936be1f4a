"""``mesa-dilemmas reproduce --tiny``: every claim judged and the report's structure complete."""

from __future__ import annotations

import json
import re

from test_cli import cli

from mesa_dilemmas.analysis.claims import CLAIMS, EXPERIMENTS


def test_every_claim_names_an_experiment_that_exists():
    keys = {e.key for e in EXPERIMENTS}
    assert {c.experiment for c in CLAIMS} <= keys
    assert {c.paper for c in CLAIMS} == {"001", "002", "003"}


def test_reproduce_tiny_writes_a_report_with_every_claim(tmp_path):
    out = tmp_path / "rep"
    result = cli("reproduce", "--tiny", "--out", str(out), "--no-progress")
    assert result.returncode == 0, result.stderr
    text = (out / "reproduction.md").read_text()
    data = json.loads((out / "reproduction.json").read_text())
    assert len(data["claims"]) == len(CLAIMS)
    for claim in data["claims"]:
        assert claim["status"] in {"reproduced", "partly", "not reproduced", "not run"}
        assert claim["status"] == "not run" or claim["test"] != "-", (
            claim
        )  # every judged claim names its test
    for paper in ("001", "002", "003"):
        assert f"## Paper {paper}" in text
    rows = [line for line in text.splitlines() if re.match(r"^\| (Sec\.|Fig\.)", line)]
    assert len(rows) == len(CLAIMS)
    assert "Mode **tiny**" in text and "## Runs" in text
    assert not any(c["status"] == "not run" for c in data["claims"]), (
        "every claim ran at the tiny size"
    )


def test_reproduce_refuses_a_non_empty_out_dir(tmp_path):
    (tmp_path / "x").write_text("keep me")
    result = cli("reproduce", "--tiny", "--out", str(tmp_path))
    assert result.returncode == 2 and (tmp_path / "x").read_text() == "keep me"
