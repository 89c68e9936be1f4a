"""`strategies say-vs-do`: the code's moves against an LLM's, from the description and from the code.

A loopback OpenAI-wire server plays a scripted "LLM" that reads the prompt the instrument
renders: the faithful one rebuilds the reference strategy the prompt describes (from its
description and parameters, or from the code's class and arguments), replays it on the
history it parses from the prompt and answers its move; the contrary one answers the other
move.  So the instrument must report 100% and 0% agreement on the deterministic strategies,
and every number it computes is checked against a known answer.  The embedded model runs once.
"""

from __future__ import annotations

import ast
import csv
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply
from llm_servers.wire import WireServer

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.binary.experiments import say_vs_do
from mesa_dilemmas.dilemmas.binary.strategies.history import HistoryStore
from mesa_dilemmas.dilemmas.binary.strategies.reference import REFERENCE

pytestmark = pytest.mark.usefixtures("llm_env")

GAMES = ("public_goods", "collective_risk", "common_pool")
_ROUND = re.compile(r"^Round (\d+): you played ([CD]); the other players played ([CD, ]+) \(", re.M)
_BUILD = re.compile(r"`strategy = (\w+)\(game(.*?)\)`")
_PARAMS = re.compile(r"Its parameters: (.*)\.\s*$", re.M)


def _kwargs(text: str) -> dict[str, object]:
    """``q = 0.5, e = 2`` or ``, q=0.5, e=2`` -> {"q": 0.5, "e": 2}."""
    out: dict[str, object] = {}
    for name, value in re.findall(r"(\w+)\s*=\s*([^,]+)", text):
        out[name] = ast.literal_eval(value.strip())
    return out


class Scripted:
    """A scripted LLM: the reference strategy's true move (faithful) or the other one (contrary)."""

    def __init__(self, game: str, n: int, rounds: int, contrary: bool = False) -> None:
        self.desc = say_vs_do.make_rules(game, n, rounds).description()
        self.n, self.rounds, self.contrary = n, rounds, contrary
        self.by_description = sorted(
            ((cls.description or "", cls) for cls in REFERENCE.values()), key=lambda d: -len(d[0])
        )
        self.by_class = {cls.__name__: cls for cls in REFERENCE.values()}

    def strategy(self, system: str) -> tuple[type, dict[str, object]]:
        if "trace it by hand" in system:  # code mode: the class and its arguments
            build = _BUILD.search(system)
            assert build is not None
            return self.by_class[build.group(1)], _kwargs(build.group(2))
        cls = next(c for text, c in self.by_description if text and text in system)
        params = _PARAMS.search(system)
        return cls, _kwargs(params.group(1)) if params else {}

    def move(self, req: NormalizedRequest) -> str:
        cls, params = self.strategy(req.system)
        past = _ROUND.findall(req.last_user)
        store = HistoryStore(1, self.n, self.rounds)
        player = cls.create(self.desc, (12345, (0,)), params)
        view = store.player(0, 0)
        move = "C"
        for t in range(len(past) + 1):
            move = str(player.act(view))
            if t < len(past):
                _, mine, others = past[t]
                row = [mine] + [a.strip() for a in others.split(",")]
                cooperated = np.array([[a == "C" for a in row]])
                store.record(cooperated, np.zeros((1, self.n)), None)
        return move

    def __call__(self, req: NormalizedRequest) -> Reply:
        move = self.move(req)
        if self.contrary:
            move = "D" if move == "C" else "C"
        return Reply(f"Following the rule. <answer>{move}</answer>")


def _run(
    server: WireServer, out: Path, game: str, *extra: str, n: int = 4, rounds: int = 6
) -> dict:
    code = main(
        [
            "strategies",
            "say-vs-do",
            "--game",
            game,
            "-n",
            str(n),
            "--rounds",
            str(rounds),
            "--trajectories",
            "2",
            "--llm",
            f"openai:scripted@{server.url}/v1",
            "--answer-mode",
            "tags",
            "--out",
            str(out),
            "--quiet",
            *extra,
        ]
    )
    assert code == 0
    return json.loads((out / "say_vs_do.json").read_text())


def _rows(summary: dict) -> dict[str, dict]:
    return {r["strategy"]: r for r in summary["table"]}


def test_faithful_agrees_everywhere_contrary_nowhere_and_a_rerun_pays_nothing(
    tmp_path: Path,
) -> None:
    with WireServer(responder=Scripted("public_goods", 4, 6)) as server:
        faithful = _run(server, tmp_path / "faithful", "public_goods")
        paid = server.state.requests
        again = _run(server, tmp_path / "again", "public_goods")
        assert server.state.requests == paid  # the rerun answers from the cache
    strategies = len(say_vs_do.REFERENCE_SET)
    assert paid == strategies * 2 * 2 * 6  # strategies x modes x trajectories x rounds
    assert faithful["calls"]["provider_calls"] == paid
    assert again["calls"]["provider_calls"] == 0 and again["calls"]["calls"] == paid
    assert again["table"] == faithful["table"]
    rows = _rows(faithful)
    assert not rows["Rnd(0.5)"]["deterministic"] and not rows["ptft"]["deterministic"]
    for name in ("A-C", "A-D", "CC(1)", "CD(1)", "tft(0.5)", "grim(0.34)", "threshold"):
        assert rows[name]["deterministic"], name
    det = [r for r in faithful["table"] if r["deterministic"]]
    assert all(r["agree_description"] == 1.0 and r["agree_code"] == 1.0 for r in det)
    assert all(r["fallbacks_description"] == 0 == r["fallbacks_code"] for r in det)
    total = rows["overall (deterministic)"]
    assert total["rounds"] == sum(r["rounds"] for r in det[:-1]) and total["agree_code"] == 1.0
    lo, hi = say_vs_do.wilson(total["rounds"], total["rounds"])
    assert (total["agree_code_lo"], total["agree_code_hi"]) == (round(lo, 4), round(hi, 4))
    table = (tmp_path / "faithful" / "say_vs_do.md").read_text()
    assert "| tft(0.5) | 12 | yes | 100% |" in table and f"{paid} paid" in table
    with (tmp_path / "faithful" / "say_vs_do_rounds.csv").open() as f:
        detail = list(csv.DictReader(f))
    assert len(detail) == strategies * 2 * 6
    assert all(d["code"] == d["description"] == d["code"] for d in detail if d["strategy"] == "A-D")


@pytest.mark.parametrize("game", GAMES)
def test_contrary_disagrees_in_every_round_of_every_game(tmp_path: Path, game: str) -> None:
    picks = ["--strategy", "tft(0.5)", "--strategy", "grim(0.34)", "--strategy", "threshold"]
    with WireServer(responder=Scripted(game, 5, 5, contrary=True)) as server:
        summary = _run(server, tmp_path / "c", game, *picks, n=5, rounds=5)
    rows = _rows(summary)
    for name in ("tft(0.5)", "grim(0.34)", "threshold", "overall (deterministic)"):
        assert rows[name]["agree_description"] == 0.0 and rows[name]["agree_code"] == 0.0, name
        # the LLM's C-rate is the mirror of the code's
        assert rows[name]["llm_coop_code"] == pytest.approx(1 - rows[name]["code_coop_rate"])
    assert rows["overall (deterministic)"]["rounds"] == 3 * 2 * 5


def test_faithful_common_pool_sees_the_stock_and_agrees(tmp_path: Path) -> None:
    with WireServer(responder=Scripted("common_pool", 3, 5)) as server:
        summary = _run(server, tmp_path / "f", "common_pool", "--mode", "code", n=3, rounds=5)
    det = [r for r in summary["table"] if r["deterministic"]]
    assert det and all(r["agree_code"] == 1.0 for r in det)
    assert "agree_description" not in summary["table"][0]


def test_prompts_carry_history_description_and_code() -> None:
    say_vs_do.register()
    from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

    entry = StrategyEntry.reference("tft(0.5)")
    assert "q = 0.5" in say_vs_do.describe_entry(entry)
    code, build = say_vs_do.code_of(entry)
    assert "class TitForTat" in code and "class ConditionalCooperator" in code
    assert "vector_form" not in code and build == "`strategy = TitForTat(game, q=0.5)`"
    rules = say_vs_do.make_rules("common_pool", 3, 4)
    scripted = say_vs_do.opponent_trajectories(rules, 2, 0)
    play = say_vs_do.play_code(entry, rules, scripted, 0)
    assert play.deterministic and play.actions.shape == (2, 4)
    history, now = say_vs_do.render_history(play, 0, 2, 4)
    assert history.count("Round ") == 2 and "stock was" in history and "stock now is" in now
    assert np.array_equal(play.cooperated[:, 1:], scripted[:, 1:].astype(bool))


def test_bad_input_is_exit_2(tmp_path: Path) -> None:
    base = ["strategies", "say-vs-do", "--llm", "local", "--out", str(tmp_path / "x")]
    assert main([*base, "--game", "chess"]) == 2
    assert main([*base, "--game", "public_goods", "--rounds", "0"]) == 2
    assert main([*base, "--game", "public_goods", "--strategy", "nosuch"]) == 2
    assert not (tmp_path / "x").exists()


@needs_local
def test_embedded_model_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "local"
    code = main(
        [
            "strategies",
            "say-vs-do",
            "--game",
            "public_goods",
            "--strategy",
            "all_d",
            "--llm",
            "local",
            "--max-tokens",
            "48",
            "--rounds",
            "2",
            "--trajectories",
            "1",
            "--answer-mode",
            "native",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    summary = json.loads((out / "say_vs_do.json").read_text())
    row = _rows(summary)["A-D"]
    assert row["rounds"] == 2 and row["deterministic"]
    for mode in ("description", "code"):
        agree, fell = row[f"agree_{mode}"], row[f"fallbacks_{mode}"]
        assert agree in (0.0, 0.5, 1.0) and 0 <= fell <= 2
        assert agree * 2 <= 2 - fell  # a fallback is never counted as agreement
    assert summary["calls"]["calls"] >= 4
    print((out / "say_vs_do.md").read_text())


def test_estimate_prices_every_prompt_without_a_key_or_a_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["strategies", "say-vs-do", "--game", "common_pool", "--strategy", "tft(0.5)"]
    args += ["--llm", "openai:gpt-5-mini", "--rounds", "3", "--trajectories", "2"]
    assert main([*args, "--out", str(tmp_path / "never"), "--estimate"]) == 0
    text = capsys.readouterr().out
    assert "= 12 decisions" in text and "openai:gpt-5-mini" in text and "$" in text
    assert re.search(r"openai:gpt-5-mini\s+12\s", text)
    assert not (tmp_path / "never").exists()


FILE_SET = '''from mesa_dilemmas.dilemmas.binary.strategies import Strategy


class Majority(Strategy):
    """Cooperate first, then while at least half of the others did."""

    description = "Cooperate first; then cooperate if at least half of the others cooperated."

    def act(self, history):
        if history.is_first_round:
            return "C"
        return "C" if history.last_opponent_cooperators * 2 >= history.n_players - 1 else "D"


class Coin(Strategy):
    description = "Cooperate with probability 0.7 in every round."

    def act(self, history):
        return "C" if self.rng.random() < 0.7 else "D"
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
def test_file_strategies_play_in_the_sandbox_and_an_always_c_llm_agrees_at_the_code_c_rate(
    tmp_path: Path,
) -> None:
    module = tmp_path / "mine.py"
    module.write_text(FILE_SET)
    seen: list[NormalizedRequest] = []

    def always_c(req: NormalizedRequest) -> Reply:
        seen.append(req)
        return Reply("<answer>C</answer>")

    with WireServer(responder=always_c) as server:
        summary = _run(server, tmp_path / "out", "common_pool", "--set", str(module), rounds=5)
    rows = _rows(summary)
    assert rows["Majority"]["deterministic"] and not rows["Coin"]["deterministic"]
    for name in ("Majority", "Coin"):  # answering C agrees exactly where the code played C
        row = rows[name]
        assert row["agree_description"] == row["agree_code"] == row["code_coop_rate"]
    assert 0 < rows["Coin"]["code_coop_rate"] < 1
    code_prompts = [r.system for r in seen if "trace it by hand" in r.system]
    assert len(code_prompts) == len(seen) // 2 == 2 * 2 * 5
    assert any("class Coin(Strategy)" in s and "`strategy = Coin(game)`" in s for s in code_prompts)
