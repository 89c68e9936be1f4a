"""`strategies generate`: descriptions, code, checks in the sandbox, regeneration, the on-disk set.

A loopback OpenAI-wire server answers with canned descriptions and code (so the
regenerate path is exercised deterministically); the embedded model writes a
few strategies for real; a recorded run is replayed with no provider call.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply
from llm_servers.wire import WireServer

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.binary import prompts as binary_prompts
from mesa_dilemmas.dilemmas.binary.experiments.strategy_writing import extract_code
from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import make_game
from mesa_dilemmas.dilemmas.binary.strategies import load_strategy_set
from mesa_dilemmas.llm.request import CallContext, seed_for

pytestmark = [
    pytest.mark.usefixtures("llm_env"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
]

GOOD = '''```python
from mesa_dilemmas.dilemmas.binary.strategies import Strategy


class Reciprocator(Strategy):
    """Cooperate first, then cooperate while at least half the others did."""

    def act(self, history):
        if history.is_first_round:
            return "C"
        others = history.n_players - 1
        return "C" if history.last_opponent_cooperators * 2 >= others else "D"
```'''
RANDOM = '''Here you are:
```python
from mesa_dilemmas.dilemmas.binary.strategies import Strategy

class Mixer(Strategy):
    """Cooperate with probability 0.6."""
    def act(self, history):
        return "C" if self.rng.random() < 0.6 else "D"
```'''
SYNTAX = "```python\nclass Broken(Strategy)\n    def act(self, history):\n        return 'C'\n```"
WRONG_ANSWER = (
    "```python\nfrom mesa_dilemmas.dilemmas.binary.strategies import Strategy\n\n"
    "class Says(Strategy):\n    def act(self, history):\n        return 'maybe'\n```"
)
RAISES = (
    "```python\nfrom mesa_dilemmas.dilemmas.binary.strategies import Strategy\n\n"
    "class Divides(Strategy):\n    def act(self, history):\n"
    "        return 'C' if 1 / history.round_number else 'D'\n```"
)
HOSTILE = (
    "```python\nfrom mesa_dilemmas.dilemmas.binary.strategies import Strategy\n\n"
    "class Writer(Strategy):\n    def act(self, history):\n"
    "        open({marker!r}, 'w').write('pwned')\n        return 'C'\n```"
)


def description_seed(index: int, seed: int = 0) -> int:
    ctx = CallContext(
        kind="strategy.description", agent_id=index, run_seed=str(seed), policy="strategy_writing"
    )
    return seed_for(ctx.sample_id)


class Canned:
    """Descriptions name a plan; the code for a plan is right, wrong-then-right, or never right."""

    # plan -> the implementations it gets, in order (the last one repeats)
    PLANS = {
        0: [GOOD],
        1: [SYNTAX, GOOD],
        2: [WRONG_ANSWER, RAISES, RANDOM],
        3: [HOSTILE],
    }

    def __init__(self, n: int, marker: Path) -> None:
        self.plan_of_seed = {description_seed(i): i % len(self.PLANS) for i in range(n)}
        self.marker = marker

    def __call__(self, req: NormalizedRequest) -> Reply:
        prompt = req.last_user
        if "Describe the strategy in plain language" in prompt:
            plan = self.plan_of_seed[req.raw["seed"]]
            return Reply(f"Plan {plan}: cooperate first, then follow the majority of the others.")
        plan = int(re.search(r"Plan (\d+):", prompt).group(1))  # type: ignore[union-attr]
        code = self.PLANS[plan]
        attempt = 0 if "rejected by the automatic checks" not in prompt else None
        if attempt is None:  # which rejection is this? the previous code's own problems say so
            attempt = 1 if ("SyntaxError" in prompt or "'maybe'" in prompt) else 2
        return Reply(code[min(attempt, len(code) - 1)].format(marker=str(self.marker)))


def test_prompts_are_our_words_with_the_attitude_as_a_parameter() -> None:
    for game in ("public_goods", "collective_risk", "common_pool"):
        (_, system), (_, user) = binary_prompts.description_messages(game, "spiteful")
        assert "spiteful" in user and "cannot talk" in user and "{" not in user
        code = binary_prompts.code_messages(game, "collective", "Always C.")[1][1]
        assert "self.rng" in code and "history.opponent_cooperators" in code
        assert ("history.stock" in code) == (game == "common_pool")
    glossed = binary_prompts.description_messages("public_goods", "collective")[1][1]
    assert "welfare of the whole group" in glossed
    assert extract_code("text\n```python\nclass A: pass\n```\nmore") == "class A: pass\n"


def test_generate_regenerates_failures_records_them_and_writes_a_loadable_set(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "marker.txt"
    n = 8
    out = tmp_path / "set"
    with WireServer(responder=Canned(n, marker)) as server:
        code = main(
            [
                "strategies",
                "generate",
                "--game",
                "public_goods",
                "--attitude",
                "collective",
                "--model",
                f"openai:writer@{server.url}/v1",
                "-n",
                str(n),
                "--out",
                str(out),
                "--max-tries",
                "3",
                "--quiet",
            ]
        )
        requests = server.state.requests
    assert code == 0
    assert not marker.exists()  # the hostile implementation ran in the sandbox only
    # 8 descriptions; code: plan 0 once, plan 1 twice, plan 2 three times, plan 3 three times
    assert requests == n + 2 * (1 + 2 + 3 + 3)
    manifest = tomllib.loads((out / "strategy_set.toml").read_text())
    kept = {s["name"]: s for s in manifest["strategies"]}
    rejected = {s["name"]: s for s in manifest["rejected"]}
    assert sorted(kept) == [f"s{i:04d}" for i in range(n) if i % 4 != 3]
    assert sorted(rejected) == ["s0003", "s0007"]
    assert kept["s0000"]["tries"] == 1 and kept["s0000"]["failures"] == []
    assert kept["s0001"]["tries"] == 2 and "SyntaxError" in kept["s0001"]["failures"][0]
    assert kept["s0002"]["tries"] == 3
    assert "answered 'maybe'" in kept["s0002"]["failures"][0]
    assert "ZeroDivisionError" in kept["s0002"]["failures"][1]
    assert kept["s0000"]["deterministic"] is True and kept["s0002"]["deterministic"] is False
    assert rejected["s0003"]["tries"] == 3 and len(rejected["s0003"]["failures"]) == 3
    assert all("PermissionError" in f or "Errno" in f for f in rejected["s0003"]["failures"])
    assert kept["s0001"]["description"].startswith("Plan 1:")
    assert manifest["generation"]["model"] == "openai:writer"
    assert len(list((out / "attempts").glob("*.py"))) == 1 + 2 + 3 + 3 + 1 + 2 + 3 + 3
    # the set loads (in the sandbox) and plays; determinism is carried to the entries
    s = load_strategy_set(out)
    assert [e.name for e in s] == sorted(kept) and s.attitude == "collective"
    assert s.get("s0000").deterministic is True and not s.get("s0000").trusted
    game = make_game("public_goods", 4, 10)
    r = play_batch(game, [[s[j % len(s)] for j in range(b, b + 4)] for b in range(6)], range(6))
    assert r.flags == [] and np.isfinite(r.totals).all()
    # ... and `analyse strategies` reads it
    assert (
        main(
            [
                "analyse",
                "strategies",
                str(out),
                "--out",
                str(tmp_path / "an"),
                "--rollouts",
                "5",
                "--no-references",
                "--no-progress",
            ]
        )
        == 0
    )
    summary = json.loads((out / "generation.json").read_text())
    assert summary["accepted"] == 6 and summary["llm"]["provider_calls"] == requests


def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["strategies", "generate", "--attitude", "collective", "--model", "local", "-n", "2"]
    assert main([*base, "--game", "chess", "--out", str(tmp_path / "a")]) == 2
    assert "--game" in capsys.readouterr().err
    assert main([*base[:-1], "0", "--game", "public_goods", "--out", str(tmp_path / "b")]) == 2
    assert (
        main(
            [
                *base,
                "--game",
                "public_goods",
                "--out",
                str(tmp_path / "c"),
                "--model",
                "nosuch:model",
            ]
        )
        == 2
    )
    assert "--model" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@needs_local
@pytest.mark.slow
def test_embedded_model_writes_a_few_and_a_replay_makes_no_call(tmp_path: Path) -> None:
    """SmolLM2-135M mostly writes broken code: that is recorded, not fatal; a replay is identical."""
    llm = tmp_path / "llm.toml"
    llm.write_text("[llm]\ntemperature = 0.7\n[llm.local]\nn_ctx = 4096\n")
    args = [
        "strategies",
        "generate",
        "--game",
        "public_goods",
        "--attitude",
        "exploitative",
        "-n",
        "1",
        "--max-tries",
        "2",
        "--llm",
        str(llm),
        "--description-tokens",
        "96",
        "--code-tokens",
        "192",
        "--quiet",
    ]
    assert main([*args, "--model", "local", "--out", str(tmp_path / "live")]) == 0
    live = json.loads((tmp_path / "live" / "generation.json").read_text())
    assert live["requested"] == 1 and live["llm"]["provider_calls"] == 1 + live["mean_tries"]
    manifest = tomllib.loads((tmp_path / "live" / "strategy_set.toml").read_text())
    records = manifest.get("strategies", []) + manifest.get("rejected", [])
    assert len(records) == 1 and all(r["description"] for r in records)
    assert all(
        r["tries"] == len(r["failures"]) + (r in manifest.get("strategies", [])) for r in records
    )
    assert main([*args, "--model", "replay:local", "--out", str(tmp_path / "again")]) == 0
    again = json.loads((tmp_path / "again" / "generation.json").read_text())
    assert again["llm"]["provider_calls"] == 0 and again["llm"]["calls"] == live["llm"]["calls"]
    for name in ("strategy_set.toml",):
        a = (tmp_path / "live" / name).read_text()
        b = (tmp_path / "again" / name).read_text()
        assert a.replace("live", "X") == b.replace("again", "X")


def test_scenario_form_writes_one_set_per_combination(tmp_path: Path) -> None:
    from mesa_dilemmas.scenarios.runner import run_scenario

    with WireServer(responder=Canned(2, tmp_path / "marker")) as server:
        scenario = tmp_path / "write.toml"
        scenario.write_text(
            'game = "public_goods"\nexperiment = "strategy_writing:StrategyWritingExperiment"\n'
            "seed = 0\n[options]\n"
            f'models = ["openai:writer@{server.url}/v1"]\n'
            'attitudes = ["collective", "spiteful"]\ngames = ["public_goods", "common_pool"]\n'
            "n = 2\nmax_tries = 2\n[llm]\ncache = false\n"
        )
        outcome = run_scenario(str(scenario), out_dir=tmp_path / "run", progress=False)
        requests = server.state.requests
    sets = sorted(p.name for p in (tmp_path / "run" / "sets").iterdir())
    assert sets == [
        f"openai-writer_{a}_{g}"
        for a in ("collective", "spiteful")
        for g in ("common_pool", "public_goods")
    ]
    rows = outcome.summary["sets"]
    assert [r["accepted"] for r in rows] == [2, 2, 2, 2]  # plans 0 and 1: right at once, then
    assert [r["mean_tries"] for r in rows] == [1.5] * 4  # after one rejection
    llm = outcome.summary["llm"]
    assert llm["calls"] == 4 * (2 + 3)
    # the canned descriptions do not depend on the attitude, and the code prompt is made of the
    # description and the game: the second attitude's code requests are the first one's, same
    # sample ids, so the run's record answers them (as the cache would)
    assert requests == llm["provider_calls"] == 4 * 2 + 2 * 3
    spiteful = load_strategy_set(tmp_path / "run" / "sets" / "openai-writer_spiteful_common_pool")
    assert spiteful.attitude == "spiteful" and spiteful.games == ("common_pool",)


def test_budget_stop_then_resume_pays_no_call_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n, out = 4, tmp_path / "set"
    with WireServer(responder=Canned(n, tmp_path / "marker")) as server:
        base = [
            "strategies",
            "generate",
            "--game",
            "collective_risk",
            "--attitude",
            "collective",
            "--model",
            f"openai:writer@{server.url}/v1",
            "-n",
            str(n),
            "--out",
            str(out),
            "--llm",
            str(tmp_path / "llm.toml"),
            "--quiet",
        ]
        (tmp_path / "llm.toml").write_text("[llm]\ncache = false\n")
        assert main([*base, "--max-calls", "6"]) == 3
        assert "--resume" in capsys.readouterr().err
        assert not (out / "strategy_set.toml").exists()
        stopped_at = server.state.requests
        assert stopped_at == 6
        assert main([*base, "--resume"]) == 0
        # descriptions 4; code: plan 0 once, plan 1 twice, plan 2 three times, plan 3 three times
        assert server.state.requests == n + 1 + 2 + 3 + 3
    summary = json.loads((out / "generation.json").read_text())
    assert summary["accepted"] == 3 and summary["llm"]["provider_calls"] == server.state.requests
