"""Estimate first: ``mesa-dilemmas estimate`` plays the first rounds dry (real prompts, random
legal answers, no network) and scales them; the estimate is checked against the tokens the
same run then uses against llama-cpp-python's OpenAI-compatible server with the bundled model.
A paid run prints the estimate before it starts and asks for ``--yes`` above the threshold."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import cli as run
from llm_fixtures import REPO, llama_server_fixture, needs_local  # noqa: F401

from mesa_dilemmas.llm.estimate import Tally, format_table, price_rows, tally
from mesa_dilemmas.llm.settings import LLMSettings

SCENARIO = """
name = "estimate-check"
game = "fishery"
seed = 11
replications = 1
max_steps = {steps}
[params]
n_agents = {agents}
llm_agents = {llm_agents}
llm = "{spec}"
[llm]
answer_mode = "native"
reasoning = false
max_tokens = 48
temperature = 0.0
"""


def cli(args: list[str], tmp_path: Path, env_extra: dict[str, str] | None = None):
    return run(*args, cache=tmp_path / "cache", env=env_extra, cwd=REPO, timeout=900)


@needs_local
def test_estimate_is_within_25_percent_of_the_tokens_the_run_uses(tmp_path, llama_server):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        SCENARIO.format(steps=4, agents=3, llm_agents=1, spec=f"openai:smollm2@{llama_server}")
    )
    est = cli(["estimate", str(scenario), "--rounds", "2", "--json"], tmp_path)
    assert est.returncode == 0, est.stderr
    (row,) = json.loads(est.stdout)
    run_dir = tmp_path / "run"
    out = cli(["run", str(scenario), "--out", str(run_dir), "--no-progress"], tmp_path)
    assert out.returncode == 0, out.stderr
    import pandas as pd

    calls = pd.read_parquet(run_dir / "llm_calls.parquet")
    paid = calls[(calls.source == "provider") & calls.error.isna()]
    first = paid[paid.attempt == 0]  # the estimate counts each decision's call, not re-asks
    used_in, used_out = int(first.tokens_in.sum()), int(first.tokens_out.sum())
    print(
        f"estimate {row['tokens_in']} in + {row['tokens_out']} out in {row['calls']} calls; "
        f"used {used_in} in + {used_out} out in {len(first)} first calls, plus "
        f"{len(paid) - len(first)} re-asks ({int(paid.tokens_in.sum())} in in all)"
    )
    assert abs(row["calls"] - len(first)) <= 0.25 * len(first)
    assert abs(row["tokens_in"] - used_in) <= 0.25 * used_in
    total = row["tokens_in"] + row["tokens_out"]
    assert abs(total - (used_in + used_out)) <= 0.25 * (used_in + used_out)


def test_estimate_command_prints_a_table_without_calling_anything(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.format(steps=10, agents=4, llm_agents=2, spec="openai:gpt-5-mini"))
    out = cli(["estimate", str(scenario)], tmp_path, {"OPENAI_API_KEY": ""})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:2] == ["model", "calls"] and lines[1].startswith("openai:gpt-5-mini")
    assert "prices.toml checked 20" in lines[-1] and "$" in lines[1]


def test_a_paid_run_above_the_threshold_asks_for_yes(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        SCENARIO.format(steps=50, agents=4, llm_agents=2, spec="openai:gpt-4o").replace(
            "replications = 1", "replications = 400"
        )
    )
    run_dir = tmp_path / "run"
    out = cli(
        ["run", str(scenario), "--out", str(run_dir)],
        tmp_path,
        {"OPENAI_API_KEY": "sk-test-not-used"},
    )
    assert out.returncode == 2, out.stderr
    assert "pass --yes to start this run" in out.stderr and "llm estimate:" in out.stderr
    assert not run_dir.exists()  # refused before anything was written


def test_tally_counts_shared_prefixes_and_prices_the_cache():
    system = "rules " * 1500  # ~2,250 tokens of stable prefix
    calls = [
        {"source": "dry", "label": "openai:gpt-4o", "tokens_in": 2300, "tokens_out": 10,
         "request": {"messages": [{"role": "system", "content": system},
                                  {"role": "user", "content": f"agent {i}"}], "schema": None},
         "run_seed": "1", "round": 1, "step": 1, "kind": "k"}
        for i in range(3)
    ]  # fmt: skip
    t = tally(calls)["openai:gpt-4o"]
    assert t.calls == 3 and t.cached_in > 0 and t.cached_in % 128 == 0
    assert t.shared_in >= 2 * 2200 and t.widths == [3]
    (row,) = price_rows({"openai:gpt-4o": t}, LLMSettings())
    assert row.cached_usd < row.list_usd and row.batch_usd < row.cached_usd
    assert "openai:gpt-4o" in format_table([row]) and isinstance(Tally("x").scaled(2), Tally)
