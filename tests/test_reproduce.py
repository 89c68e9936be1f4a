"""``mesa-dilemmas reproduce --tiny``: every claim judged and the report's structure complete."""

from __future__ import annotations

import json
import re

from cli_runner import cli

from mesa_dilemmas.reproduction import registered_claims

EXPERIMENTS, CLAIMS, SECTIONS = registered_claims()


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


def test_a_resumed_reproduction_reuses_finished_runs_and_refuses_another_mode(tmp_path):
    out = tmp_path / "rep"
    first = cli("reproduce", "--tiny", "--only", "shock", "--out", str(out))
    assert first.returncode == 0, first.stderr
    steps = (out / "runs" / "shock" / "steps.parquet").read_bytes()
    again = cli("reproduce", "--tiny", "--only", "shock", "--resume", str(out))
    assert again.returncode == 0, again.stderr
    assert "shock finished earlier" in again.stdout
    assert "reusing shock" in (out / "reproduction.md").read_text()
    assert (out / "runs" / "shock" / "steps.parquet").read_bytes() == steps  # not run again
    other = cli("reproduce", "--quick", "--only", "shock", "--resume", str(out))
    assert other.returncode == 2 and "not a --quick run" in other.stderr


def test_reproduce_refuses_more_processes_than_cores(tmp_path):
    result = cli("reproduce", "--tiny", "--processes", "100000", "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "--processes" in result.stderr
    assert not (tmp_path / "r").exists()


def test_the_robustness_section_reports_each_finding_with_its_failures():
    from mesa_dilemmas.dilemmas.fishery.calibration import Robustness
    from mesa_dilemmas.dilemmas.fishery.robustness_section import _lines

    z = {"shock": 2.0, "beta": 1.0, "harsh": 3.0, "rich": -1.0}
    robustness = Robustness(
        6, {"catchability": 0.04}, z, [("catchability x0.75", {}, {**z, "beta": -2.1})]
    )
    lines = "\n".join(_lines(robustness, [c for c in CLAIMS if c.finding], 12.0))
    assert "## Robustness of paper 003's findings" in lines
    beta = next(line for line in lines.splitlines() if line.startswith("| Fig. 3"))
    assert "0/1 (0%)" in beta and "everywhere (z from -2.1 to -2.1)" in beta
    harsh = next(line for line in lines.splitlines() if "harsh lake" in line)
    assert "1/1 (100%)" in harsh


def test_reproduce_on_published_sets_writes_the_paper_002_section(tmp_path):
    """``reproduce --strategies``: our fixture files in the authors' layout (two "models" per
    game, in the two call formats), and a third model whose strategies all fail."""
    import shutil
    from pathlib import Path

    fixtures = Path(__file__).parent / "strategy_corpus" / "published_format"
    strategies = tmp_path / "emergent" / "strategies"
    for game in ("public_goods", "common_pool"):
        (strategies / game).mkdir(parents=True)
        for era in ("paper", "current"):
            for suffix in ("", "_descriptions"):
                src = fixtures / f"{era}_{game}{suffix}.py"
                if src.is_file():
                    shutil.copy(src, strategies / game / f"{era}-model{suffix}.py")
    (strategies / "public_goods" / "broken-model.py").write_text(
        "from emergent_llm.common import Action\n"
        "from emergent_llm.players import BaseStrategy\n"
        "class Strategy_COLLECTIVE_1(BaseStrategy):\n"
        "    def __call__(self, state, history):  # the other format's call: always fails\n"
        "        return Action.C if history.opponent_cooperators[-1] else Action.D\n"
        "class Strategy_EXPLOITATIVE_1(BaseStrategy):\n"
        "    def __call__(self, state, history):\n"
        "        return Action.D if history.opponent_cooperators[-1] else Action.C\n"
    )
    out = tmp_path / "rep"
    result = cli(
        "reproduce", "--tiny", "--strategies", str(tmp_path / "emergent"), "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    text = (out / "reproduction.md").read_text()
    data = json.loads((out / "reproduction.json").read_text())
    assert "## Paper 002" in text and "## Paper 003" not in text
    assert "| where | claim | paper | ours | test | verdict |" in text
    statements = [c["statement"] for c in data["claims"]]
    for model in ("paper-model", "current-model"):
        assert f"Common Pool: all-collective groups do worse as the group grows: {model}" in (
            statements
        )
        assert f"Public Goods: welfare rises with the collective share of the group: {model}" in (
            statements
        )
    evolution = [c for c in data["claims"] if c["where"] == "Sec. 6.2, Table 2"]
    assert len(evolution) == 2
    assert all("claude-haiku-4-5/exploitative" in c["paper_value"] for c in evolution)
    cp = next(c for c in evolution if c["experiment"] == "common_pool-evolution")
    assert cp["status"] != "not run" and "n=4:" in cp["ours"]
    # the model whose strategies all fail: one line in its row, the others still judged
    broken = next(c for c in data["claims"] if c["statement"].endswith("broken-model"))
    assert broken["status"] == "not run"
    assert (
        broken["ours"].startswith("stopped: every strategy of set") and "\n" not in broken["ours"]
    )
    judged = [c for c in data["claims"] if c["experiment"].endswith("-model-self_play")]
    assert sum(c["status"] != "not run" for c in judged) == 4
    assert "behaviour (Table 1, Fig. 1)" in text and "| public_goods | paper-model |" in text
    # nothing to play is one line and exit 2
    (tmp_path / "none").mkdir()
    nothing = cli("reproduce", "--tiny", "--strategies", str(tmp_path / "none"))
    assert nothing.returncode == 2 and "no strategy files" in nothing.stderr
