"""Counterfactual branches of recorded runs (``mesa-dilemmas branch``): every game with rule
players, the replayed prefix checked by state hashes, its LLM calls answered from the record
(0 requests to a loopback server that counts them; a miss is an error), the suffix live, the
paired effects, and bad input in one line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.wire import WireServer

from mesa_dilemmas.cli import main
from mesa_dilemmas.llm import ReplayMiss
from mesa_dilemmas.llm.stores.cache import ResponseCache
from mesa_dilemmas.scenarios import branch as branching
from mesa_dilemmas.scenarios import state_hash
from mesa_dilemmas.scenarios.branch import BranchMismatch, BranchSpec, BranchTable, run_branches
from mesa_dilemmas.scenarios.runner import run_scenario

#: one tiny scenario per game (rule players), a parameter the game reads every round, a value
RULE_GAMES = {
    "fishery": ("n_agents = 5\ngrowth_rate = 0.6", "penalty", 40.0, 8),
    "port_of_mars": ("", "meeting", False, 4),
    "public_goods": ("k = 2.0", "k", 3.9, 8),
    "collective_risk": ("k = 2.0", "k", 0.5, 8),
    "common_pool": ("growth = 2.0", "growth", 0.5, 8),
}


def scenario(tmp: Path, game: str, params: str, steps: int, reps: int = 3, extra: str = "") -> Path:
    path = tmp / f"{game}.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            name = "{game}-parent"
            game = "{game}"
            seed = 11
            replications = {reps}
            max_steps = {steps}
            processes = 1
            [params]
            """
        )
        + params
        + "\n"
        + extra
    )
    return path


def parent_run(tmp: Path, game: str, params: str, steps: int, **kw) -> Path:
    out = tmp / f"{game}-run"
    run_scenario(str(scenario(tmp, game, params, steps, **kw)), out_dir=out, progress=False)
    return out


@pytest.mark.parametrize("game", sorted(RULE_GAMES))
def test_every_game_branches_on_its_recorded_history(tmp_path, game):
    params, key, value, steps = RULE_GAMES[game]
    parent = parent_run(tmp_path, game, params, steps, reps=2)
    recorded = pd.read_parquet(parent / state_hash.FILENAME)
    assert len(recorded) == len(pd.read_parquet(parent / "steps.parquet"))
    table = BranchTable(
        branches=[
            BranchSpec(label="none", at=3),
            BranchSpec(label="changed", at=3, set={key: value}),
        ]
    )
    outcome = run_branches(parent, table, out_dir=tmp_path / "branches")
    hashes = pd.read_parquet(outcome.out_dir / state_hash.FILENAME)
    merged = hashes.merge(recorded, on=["RunId", "Step"], suffixes=("", "_parent"))
    merged["same"] = merged["state_hash"] == merged["state_hash_parent"]
    # the un-changed branch is the parent, round for round, after the fork too
    assert merged.loc[merged["branch"] == "none", "same"].all()
    # the changed branch is the parent before the fork and differs after it in some run
    changed = merged[merged["branch"] == "changed"]
    assert changed.loc[changed["Step"] < 3, "same"].all()
    assert not changed.loc[changed["Step"] >= 3, "same"].all()
    by_label = {b["label"]: b for b in outcome.summary["branches"]}
    assert by_label["none"]["runs_diverged"] == 0 and by_label["changed"]["runs_diverged"] > 0
    # every recorded state before the fork was checked (two runs)
    assert by_label["changed"]["rounds_checked"] == (recorded["Step"] < 3).sum()
    effects = outcome.effects[outcome.effects["branch"] == "none"]
    assert (effects["diff_mean"].abs() < 1e-9).all() and (effects["n"] == 2).all()


def test_the_paired_effect_and_its_intervals(tmp_path):
    params, *_ = RULE_GAMES["public_goods"]
    parent = parent_run(tmp_path, "public_goods", params, 10, reps=6)
    table = BranchTable(branches=[BranchSpec(label="k up", at=4, set={"k": 3.5})])
    outcome = run_branches(parent, table, out_dir=tmp_path / "b")
    runs = pd.read_parquet(parent / "runs.parquet").set_index("RunId")
    mine = pd.read_parquet(outcome.out_dir / "runs.parquet").set_index("RunId")
    d = mine["mean_payoff"] - runs.loc[mine.index, "mean_payoff"]
    row = outcome.effects.set_index("metric").loc["mean_payoff"]
    assert row["n"] == 6 and row["diff_mean"] == pytest.approx(d.mean())
    assert row["ci_low"] < row["diff_mean"] < row["ci_high"]
    assert row["boot_low"] <= row["diff_mean"] <= row["boot_high"]
    # a larger multiplier pays every contributor more from round 4 on
    assert row["diff_mean"] > 0
    assert (outcome.out_dir / "effects.csv").is_file()
    assert json.loads((outcome.out_dir / "manifest.json").read_text())["kind"] == "branch"


def test_a_replay_that_differs_from_the_record_stops_the_branch(tmp_path):
    params, *_ = RULE_GAMES["fishery"]
    parent = parent_run(tmp_path, "fishery", params, 6, reps=2)
    hashes = pd.read_parquet(parent / state_hash.FILENAME)
    hashes.loc[(hashes["RunId"] == 1) & (hashes["Step"] == 2), "state_hash"] = "0" * 16
    hashes.to_parquet(parent / state_hash.FILENAME)
    table = BranchTable(branches=[BranchSpec(at=4, set={"penalty": 30.0})])
    with pytest.raises(BranchMismatch, match="run 1 .* at round 2"):
        run_branches(parent, table, out_dir=tmp_path / "b")
    # forking before the damaged round checks only the rounds before it
    ok = run_branches(parent, BranchTable(branches=[BranchSpec(at=2)]), out_dir=tmp_path / "c")
    assert ok.summary["branches"][0]["rounds_checked"] == 2 * 2


def test_a_seat_swapped_and_a_message(tmp_path):
    params, *_ = RULE_GAMES["fishery"]
    parent = parent_run(tmp_path, "fishery", params + "\ngroup_decision = false", 6, reps=2)
    table = BranchTable(
        branches=[
            BranchSpec(
                label="seat",
                at=3,
                seats={0: {"rule": "rule", "persona": {"disposition": "selfish"}}},
            ),
            BranchSpec(label="norm", at=3, message="Each villager takes at most 2 fish."),
        ]
    )
    outcome = run_branches(parent, table, out_dir=tmp_path / "b")
    steps = pd.read_parquet(outcome.out_dir / "steps.parquet")
    norm = steps[(steps["branch"] == "norm") & (steps["Step"] >= 3)]
    assert (norm["group_norm"] == 2.0).all() and len(norm) == 2 * 4
    assert (norm["shared_policy"] == "Each villager takes at most 2 fish.").all()
    by_label = {b["label"]: b for b in outcome.summary["branches"]}
    assert by_label["norm"]["runs_diverged"] == 2


def test_bad_branches_fail_in_one_line(tmp_path, capsys):
    params, *_ = RULE_GAMES["fishery"]
    parent = parent_run(tmp_path, "fishery", params, 4, reps=1)
    cases = [
        (["--at", "9"], "branches[0].at: 9 is after the run's last round (max_steps 4)"),
        (["--at", "2", "--set", "nope=1"], "branches[0].set.nope: not a parameter of fishery"),
        (["--at", "2", "--set", "penalty=-1"], "branches[0].set.penalty"),
        (["--at", "2", "--set", "n_agents=7"], "reads it only when a run starts"),
        (["--at", "0"], "branch.branches.0.at"),
        (["--set", "penalty=1"], "--at: name the round"),
        (["--at", "2", "--seeds", "5"], "seeds: 5 is not a seed of"),
        (["--at", "2", "--set", "penalty=1", "--table", "t.toml"], "not both"),
        (["--at", "2", "--seat", "0=rule"], "--seat '0=rule': expected SEAT="),
    ]
    for args, said in cases:
        code = main(["branch", str(parent), *args, "--out", str(tmp_path / "x"), "--no-progress"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and said in err and "\n" not in err, (args, err)
        assert not (tmp_path / "x").exists()
    code = main(["branch", str(tmp_path), "--at", "2"])
    assert code == 2 and "not a run directory" in capsys.readouterr().err
    pg = parent_run(tmp_path, "public_goods", "", 3, reps=1)
    code = main(["branch", str(pg), "--at", "2", "--message", "hi", "--out", str(tmp_path / "y")])
    assert code == 2 and "public_goods has no shared messages" in capsys.readouterr().err
    pm = parent_run(tmp_path, "port_of_mars", "", 3, reps=1)
    code = main(["branch", str(pm), "--at", "1", "--message", "hi", "--out", str(tmp_path / "y")])
    assert code == 2 and "before round 2 or later" in capsys.readouterr().err


def test_a_message_reaches_the_port_of_mars_notes():
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.dilemmas.base import build_model

    model = build_model(game_model("port_of_mars"), {}, 5)
    model.step()
    branching.intervene(model, BranchSpec(at=2, message="Invest in the port first."))
    notes = model.last_round["meeting_summaries"]
    assert set(notes) == set(model.roles)
    assert all(n.endswith("Invest in the port first.") for n in notes.values())


# -- language models: the prefix from the record, the suffix live --------------------------

LLM_PARAMS = """n_agents = 3
llm_agents = 2
growth_rate = 0.6
llm = "{spec}"
[llm]
max_tokens = 64
temperature = 0.7
"""


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_llm_prefix_makes_no_request_and_the_suffix_plays_live(
    tmp_path,
    llm_env,  # noqa: F811
    monkeypatch,
    provider,
):
    for var, key in (
        ("OPENAI_API_KEY", "sk-t"),
        ("ANTHROPIC_API_KEY", "a"),
        ("GEMINI_API_KEY", "g"),
    ):
        monkeypatch.setenv(var, key)
    with WireServer() as server:
        spec = {
            "openai": f"openai:gpt-4o-mini@{server.url}/v1",
            "anthropic": f"anthropic:claude-haiku-4-5@{server.url}",
            "gemini": f"gemini:gemini-2.0-flash@{server.url}",
        }[provider]
        parent = parent_run(tmp_path, "fishery", LLM_PARAMS.format(spec=spec), 3, reps=2)
        paid = pd.read_parquet(parent / "llm_calls.parquet")
        assert (paid["source"] == "provider").sum() > 0
        at_fork: list[int] = []
        real = branching.intervene

        def counting(model, spec):
            at_fork.append(server.state.requests)
            real(model, spec)

        monkeypatch.setattr(branching, "intervene", counting)
        before = server.state.requests
        table = BranchTable(
            branches=[
                BranchSpec(label="none", at=3),
                BranchSpec(label="fine", at=3, set={"penalty": 40.0}),
            ]
        )
        outcome = run_branches(parent, table, out_dir=tmp_path / "b")
        # the prefix (rounds 1-2) of all 4 branch runs reached the server with nothing
        assert at_fork[0] == before
        llm = outcome.summary["llm_prefix"]
        assert llm["prefix_paid_calls"] == 0 and llm["prefix_calls"] > 0
        # priced before it ran, at the parent's rate: 2 branches x 2 runs x round 3 live
        assert outcome.summary["llm_estimate"]["live_rounds"] == 4
        assert outcome.summary["llm_estimate"]["calls"] > 0
        # the un-changed branch replays its suffix from the cache too; the fine asks anew
        assert llm["suffix_paid_calls"] == server.state.requests - before > 0
        calls = pd.read_parquet(outcome.out_dir / "llm_calls.parquet")
        assert set(calls.loc[calls["round"] < 3, "source"]) == {"replay"}
        hashes = pd.read_parquet(outcome.out_dir / state_hash.FILENAME)
        recorded = pd.read_parquet(parent / state_hash.FILENAME)
        m = hashes.merge(recorded, on=["RunId", "Step"], suffixes=("", "_p"))
        assert (
            m.loc[m["branch"] == "none", "state_hash"]
            == m.loc[m["branch"] == "none", "state_hash_p"]
        ).all()


def test_a_prefix_call_never_recorded_is_an_error_not_a_request(tmp_path, llm_env, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_KEY", "sk-t")
    with WireServer() as server:
        params = LLM_PARAMS.format(spec=f"openai:m@{server.url}/v1") + "cache = false\n"
        parent = parent_run(tmp_path, "fishery", params, 3, reps=1)
        # the answers live only in the parent's record: the branch puts them in the cache
        ok = run_branches(parent, BranchTable(branches=[BranchSpec(at=3)]), out_dir=tmp_path / "a")
        assert ok.summary["llm_prefix"]["answers_put_in_cache"] > 0
        # without the record and the cache nothing can answer the prefix, and nothing is asked
        (parent / "llm_calls.parquet").unlink()
        assert ResponseCache.at(llm_env).clear() > 0
        before = server.state.requests
        with pytest.raises(ReplayMiss):
            run_branches(parent, BranchTable(branches=[BranchSpec(at=3)]), out_dir=tmp_path / "b")
        assert server.state.requests == before


@needs_local
def test_the_embedded_model_branch(tmp_path, llm_env):  # noqa: F811
    # the smallest run that replays a prefix of embedded-model answers: one language-model seat
    # of a Public Goods pair (one decision a round), two rounds; the branch replays round 1 and
    # seats a coded strategy in its place from round 2 (no new call)
    params = (
        'n_players = 2\nk = 1.5\nstrategies = ["tft(0.5)"]\nplayers = { groups = [{ llm = "local", '
        "seats = [0] }] }\n[llm]\nmax_tokens = 24\nreasoning = false\nanswer_retries = 0\n"
        "max_fallback_rate = 1.0\n"
    )
    parent = parent_run(tmp_path, "public_goods", params, 2, reps=1)
    assert len(pd.read_parquet(parent / "llm_calls.parquet")) >= 2
    outcome = run_branches(
        parent,
        BranchTable(branches=[BranchSpec(at=2, seats={0: {"strategy": "all_d"}})]),
        out_dir=tmp_path / "b",
    )
    llm = outcome.summary["llm_prefix"]
    assert llm["prefix_paid_calls"] == 0 and llm["prefix_calls"] >= 1
    assert llm["suffix_paid_calls"] == 0
    assert outcome.summary["branches"][0]["rounds_checked"] >= 1
