"""``mesa-dilemmas reproduce --tiny``: every claim judged and the report's structure complete."""

from __future__ import annotations

import json
import re
from typing import get_args

from cli_runner import cli

from mesa_dilemmas.analysis.verdicts import Status
from mesa_dilemmas.reproduction import registered_claims, registered_extras

EXPERIMENTS, CLAIMS, SECTIONS = registered_claims()
STATUSES = set(get_args(Status))


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
        assert claim["status"] in STATUSES
        assert claim["status"] == "not run" or claim["test"] != "-", (
            claim
        )  # every judged claim names its test
    for paper in ("001", "002", "003"):
        assert f"## Paper {paper}" in text
    rows = [line for line in text.splitlines() if re.match(r"^\| (Sec\.|Fig\.)", line)]
    llm, _ = registered_extras()
    assert len(rows) == len(CLAIMS) + len(llm)  # the LLM claims listed as not run here
    assert len(data["llm_claims"]) == len(llm)
    assert all(c["status"] == "not run here" for c in data["llm_claims"])
    assert all("mesa-dilemmas estimate" in c["cost"] for c in data["llm_claims"])
    assert "Mode **tiny**" in text and "## Runs" in text
    assert not any(c["status"] == "not run" for c in data["claims"]), (
        "every claim ran at the tiny size"
    )
    # the whole claims register: every row of every paper, judged rows with this run's verdict
    from mesa_dilemmas.analysis.register import load_registers, rows

    register = text[text.index("## The claims register") :]
    for _, row in rows(load_registers()):
        line = next(x for x in register.splitlines() if x.startswith(f"| {row.id} |"))
        if row.kind == "judged":  # its own claims ran (a published set's run with --strategies)
            for key in (k for k in row.claims if "@" not in k):
                assert re.search(rf"`{re.escape(key)}`: \*\*[a-z ]+\*\*", line), (key, line)
        else:
            assert row.kind != "llm" or "mesa-dilemmas estimate" in line


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


def test_llm_claims_are_listed_with_the_cost_of_one_run():
    """Quick mode prices one run of each LLM claim's scenario on the paper's model (a dry
    run of the estimate command: no call, no key)."""
    from mesa_dilemmas.reproduction import estimate_llm_claims

    llm, _ = registered_extras()
    pom = [c for c in llm if c.scenario == "port_of_mars/llm_svo"]
    assert pom and {c.paper for c in llm} >= {"001", "003"}
    (claim, cost), *_ = estimate_llm_claims(pom[:1], "quick")
    assert claim is pom[0]
    assert re.search(r"about \$[0-9.,]+ at list prices \(\$[0-9.,]+ batch\), [0-9,]+ calls", cost)
    assert "gemini-1.5-flash" in cost and "mesa-dilemmas estimate port_of_mars/llm_svo" in cost


def test_reproduce_on_published_sets_writes_the_paper_002_section(tmp_path):
    """``reproduce --strategies``: our fixture files in the authors' layout (two "models" per
    game, in the two call formats), and a third model whose strategies all fail."""
    import shutil
    from pathlib import Path

    fixtures = Path(__file__).parent / "strategy_corpus" / "published_format"
    strategies = tmp_path / "emergent" / "strategies"
    for game in ("public_goods", "common_pool"):
        (strategies / game).mkdir(parents=True)
        # named as the paper's models, so the report judges what the paper says of each
        for era, model in (("paper", "claude-haiku-4-5"), ("current", "mistral-7b")):
            for suffix in ("", "_descriptions"):
                src = fixtures / f"{era}_{game}{suffix}.py"
                if src.is_file():
                    shutil.copy(src, strategies / game / f"{model}{suffix}.py")
    (strategies / "public_goods" / "llama3.1-70b.py").write_text(
        (fixtures / "paper_public_goods.py").read_text()
    )  # a model the paper says nothing specific of in this game: listed, not judged
    (strategies / "public_goods" / "gpt-5-mini.py").write_text(
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
    by_statement = {c["statement"]: c for c in data["claims"]}
    # each model judged by what the paper says of it: Claude's Common Pool as the exception,
    # Mistral's Public Goods by flatness, Mistral's Common Pool by the general fall
    claude_cp = next(s for s in statements if s.startswith("Common Pool self-play: Claude"))
    assert "the one exception" in claude_cp
    assert (
        "equivalence"
        in by_statement[
            next(s for s in statements if s.startswith("Public Goods self-play: Mistral 7b"))
        ]["test"]
    )
    assert any(
        s.startswith("Common Pool self-play: Mistral 7b: every model does worse")
        for s in statements
    )
    llama = by_statement["Public Goods self-play: Llama 3.1 70b"]
    assert llama["status"] == "not run" and "nothing specific" in llama["ours"]
    evolution = [c for c in data["claims"] if c["where"] == "Sec. 6.2, Table 2"]
    assert len(evolution) == 2
    assert all("claude-haiku-4-5/exploitative" in c["paper_value"] for c in evolution)
    cp = next(c for c in evolution if c["experiment"] == "common_pool-evolution")
    assert cp["status"] != "not run" and "n=4:" in cp["ours"]
    # the model whose strategies all fail: one line in its row, the others still judged
    broken = next(c for c in data["claims"] if "GPT 5 Mini" in c["statement"])
    assert broken["status"] == "not run"
    assert (
        broken["ours"].startswith("stopped: every strategy of set") and "\n" not in broken["ours"]
    )
    judged = [c for c in data["claims"] if c["experiment"].endswith("-self_play")]
    assert sum(c["status"] != "not run" for c in judged) == 4  # Claude and Mistral, two games
    assert "behaviour (Table 1, Fig. 1)" in text and "| public_goods | Claude Haiku 4.5 |" in text
    # paper 002's register shows the verdicts of the authors' files under their register keys
    register = text[text.index("## The claims register") :]
    assert "### Paper 002 register" in register and "### Paper 003 register" not in register
    assert re.search(r"`full_collective_at_max@cp/claude-haiku-4-5`: \*\*[a-z ]+\*\*", register)
    assert re.search(r"`evolution@cp`: \*\*[a-z ]+\*\*", register)
    # nothing to play is one line and exit 2
    (tmp_path / "none").mkdir()
    nothing = cli("reproduce", "--tiny", "--strategies", str(tmp_path / "none"))
    assert nothing.returncode == 2 and "no strategy files" in nothing.stderr


def test_the_report_counts_flagged_published_strategies_per_model(tmp_path):
    from types import SimpleNamespace

    from mesa_dilemmas.dilemmas.binary.reproduce import flagged_lines
    from mesa_dilemmas.reproduction import Report

    run = tmp_path / "public_goods-claude-haiku-4-5-self_play"
    run.mkdir()
    (run / "summary.json").write_text(
        json.dumps(
            {
                "sets": {"collective": {"size": 7}, "exploitative": {"size": 5}},
                "flagged_strategies": {
                    "Strategy_A": {"matches": 3, "reason": "timeout\nafter 1 s"},
                    "Strategy_B": {"matches": 2, "reason": "returned None"},
                },
            }
        )
    )
    report = Report("tiny")
    report.runs[run.name] = (run, [], 0.0)
    games = [SimpleNamespace(game="public_goods", models={"claude-haiku-4-5": None})]
    text = "\n".join(flagged_lines(report, games))
    assert "| public_goods | Claude Haiku 4.5 | 2 of 12 | 5 | timeout after 1 s |" in text
    assert flagged_lines(Report("tiny"), games) == []  # no run, no table
