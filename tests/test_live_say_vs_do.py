"""Say vs do for live agents, from a finished run: Port of Mars meeting pledges against the
round's coins to port health, fishery cap proposals against the proposer's next effort.

Rule runs (free): the pledges and proposals the tables do not keep are read by replaying the run,
checked against its record (a tampered record stops the analysis).  A scripted-LLM Port of Mars
run: every seat says a known sentence at the turn-by-turn meeting, so each statement's parse is
known; whether it was kept is checked against the recorded coins to port health."""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd
import pytest
from llm_fixtures import llm_env  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply, scripted_reply
from llm_servers.wire import WireServer

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas import say_do
from mesa_dilemmas.dilemmas.port_of_mars.pledges import by_role, read_pledge

# -- reading a pledge --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I will put 3 coins into port health.", ("pledge", 3)),
        ("I'll put three coins into port health and buy some science.", ("pledge", 3)),
        ("Port health is at 60. I can give 4 more coins to health.", ("pledge", 4)),
        ("I will help port health as much as I can.", ("unparsed", None)),
        ("I'll put 2 coins into health, or maybe 4 coins.", ("unparsed", None)),
        ("We should all put 5 coins into port health.", ("not a pledge", None)),
        ("Let us trade science for culture. I need 2 coins.", ("not a pledge", None)),
    ],
)
def test_reading_a_pledge(text, expected):
    assert read_pledge(text) == expected


def test_a_written_conversation_is_split_by_role():
    conversation = "Curator: I will put 2 coins into health.\nPioneer: Fine.\n**Curator**: Agreed."
    assert by_role(conversation, ["Curator", "Pioneer"]) == {
        "Curator": "I will put 2 coins into health.\nAgreed.",
        "Pioneer": "Fine.",
    }


def test_wilson_interval():
    low, high = say_do.wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)


# -- rule runs, replayed -----------------------------------------------------------------------


def run(argv: list[str]) -> None:
    assert main(["run", *argv, "--no-progress"]) == 0


def test_port_of_mars_rule_pledges(tmp_path, capsys):
    out = tmp_path / "pom"
    run(
        ["port_of_mars/communication", "--set", "replications=3", "--set", "grid.meeting=[true]"]
        + ["--out", str(out)]
    )
    capsys.readouterr()
    assert main(["analyse", "pledges", str(out)]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "analysis" / "pledges_statements.csv")
    runs = pd.read_parquet(out / "runs.parquet")
    assert set(table["seat_kind"]) == {"rule"} and set(table["source"]) == {"writer-rule"}
    # the rule writer pledges for every role at every meeting (pledges of 0 are not statements)
    assert 0 < len(table) <= 5 * int(runs["meetings_held"].sum())
    assert (table["status"] != "unparsed").all()
    judged = table[table["status"].isin(["kept", "broken"])]
    assert ((judged["invested"] >= judged["amount"]) == (judged["status"] == "kept")).all()
    kinds = pd.read_csv(out / "analysis" / "pledges_by_kind.csv")
    assert int(kinds["statements"].sum()) == len(table)
    kept, broken = int(kinds["kept"].iloc[0]), int(kinds["broken"].iloc[0])
    assert kinds["keep_rate"].iloc[0] == pytest.approx(kept / (kept + broken))
    assert f"| rule | {len(table)} | {kept} | {broken} |" in printed
    print(printed)
    # a record the replay does not reproduce stops the analysis
    tampered = tmp_path / "tampered"
    shutil.copytree(out, tampered, ignore=shutil.ignore_patterns("analysis"))
    frame = pd.read_parquet(tampered / "runs.parquet")
    players = json.loads(frame.loc[0, "players_json"])
    players[0]["health_coins_by_round"][0] += 1
    frame.loc[0, "players_json"] = json.dumps(players)
    frame.to_parquet(tampered / "runs.parquet")
    assert main(["analyse", "pledges", str(tampered)]) == 2
    assert "replays differently from its record" in capsys.readouterr().err


def test_fishery_rule_proposals(tmp_path, capsys):
    out = tmp_path / "fish"
    run(
        ["fishery/altruism", "--set", "replications=1", "--set", "max_steps=8"]
        + ["--set", "group_decision=true", "--out", str(out)]
    )
    capsys.readouterr()
    assert main(["analyse", "stated", str(out)]) == 0
    table = pd.read_csv(out / "analysis" / "stated_statements.csv")
    assert set(table["seat_kind"]) == {"rule"} and len(table) > 0
    judged = table[table["status"].isin(["kept", "broken"])]
    assert (
        (judged["effort_next_round"] <= judged["allowed_effort"] + 1e-9)
        == (judged["status"] == "kept")
    ).all()
    # the last proposal of each villager has no next round
    assert (table[table["status"] == "unjudged"]["round"] == table["round"].max()).all()
    frame = pd.read_parquet(out / "steps.parquet")
    frame.loc[frame.index[-1], "mean_effort"] += 0.01
    frame.to_parquet(out / "steps.parquet")
    assert main(["analyse", "stated", str(out)]) == 2
    assert "replays differently" in capsys.readouterr().err


# -- a scripted-LLM run ------------------------------------------------------------------------

#: what each role says at the meeting, and how it reads
SAYS = {
    "Politician": ("I will put 3 coins into port health.", "pledge", 3),
    "Researcher": ("I'll put 30 coins into port health this round.", "pledge", 30),
    "Pioneer": ("I will help port health as much as I can.", "unparsed", None),
    "Curator": ("Let us trade science for culture.", "not a pledge", None),
    "Entrepreneur": ("I can put two coins into port health.", "pledge", 2),
}


def speaker(req: NormalizedRequest) -> Reply:
    if "<SAY>" in req.last_user:
        role = re.search(r"Your role is (\w+)", req.last_user).group(1)
        return Reply(f"<SAY>{SAYS[role][0]}</SAY>")
    return scripted_reply(req)


SCENARIO = """
game = "port_of_mars"
seed = 11
replications = 2
max_steps = 30

[params]
preset = "svo"
svo_angles = [-15, 0, 15, 30, 60]
n_rounds = 3
meeting_turns = 1
llm_players = 5
llm = "{spec}"

[llm]
answer_mode = "tags"
"""


def test_scripted_llm_pledges(tmp_path, llm_env, capsys):  # noqa: F811
    out = tmp_path / "llm"
    with WireServer(responder=speaker) as server:
        path = tmp_path / "scenario.toml"
        path.write_text(SCENARIO.format(spec=f"openai:m@{server.url}/v1"))
        run([str(path), "--yes", "--out", str(out)])
        requests = server.state.requests
        capsys.readouterr()
        assert main(["analyse", "pledges", str(out)]) == 0
        assert server.state.requests == requests  # the analysis asks no model
    table = pd.read_csv(out / "analysis" / "pledges_statements.csv")
    decisions = pd.read_parquet(out / "llm_decisions.parquet")
    spoken = decisions[(decisions["kind"] == "port_of_mars.speak") & ~decisions["fell_back"]]
    assert len(table) == len(spoken) > 0  # every utterance is a statement, none dropped
    assert set(table["seat_kind"]) == {"llm"} and set(table["source"]) == {"speak"}
    for role, (_, parse, amount) in SAYS.items():
        mine = table[table["role"] == role]
        assert len(mine) > 0 and set(mine["parse"]) == {parse}, role
        if amount is not None:
            assert set(mine["amount"]) == {amount}
    assert set(table[table["role"] == "Pioneer"]["status"]) == {"unparsed"}
    assert set(table[table["role"] == "Curator"]["status"]) == {"other"}
    assert set(table[table["role"] == "Researcher"]["status"]) <= {"broken", "unjudged"}
    # kept or broken by the coins each role put into port health that round, as recorded
    runs = pd.read_parquet(out / "runs.parquet")
    seed_of = dict(zip(runs["RunId"], runs["seed"], strict=True))
    for _, r in table[table["status"].isin(["kept", "broken"])].iterrows():
        row = runs[runs["RunId"] == r["run"]].iloc[0]
        seat = next(p for p in json.loads(row["players_json"]) if p["role"] == r["role"])
        invested = seat["health_coins_by_round"][r["round"] - 1]
        assert (invested >= r["amount"]) == (r["status"] == "kept"), (seed_of[r["run"]], r)
    kinds = pd.read_csv(out / "analysis" / "pledges_by_kind.csv")
    assert int(kinds["unparsed"].iloc[0]) == int((table["role"] == "Pioneer").sum())
    print((out / "analysis" / "pledges.md").read_text()[:1500])


#: the community policies the scripted villagers propose: one states a cap, one does not
CAPPED = "Each villager should harvest at most 5 fish per day."
VAGUE = "We should all fish a little less."


def proposer(req: NormalizedRequest) -> Reply:
    reply = scripted_reply(req)
    if req.schema is None or "community" not in json.dumps(req.schema):
        return reply
    community = CAPPED if req.rng().random() < 0.7 else VAGUE

    def put(value):
        if isinstance(value, dict):
            return {k: community if k == "community" else put(v) for k, v in value.items()}
        return value

    data = put(reply.data)
    return Reply(json.dumps(data), data)


FISHERY = """
game = "fishery"
seed = 5
replications = 2
max_steps = 4

[params]
n_agents = 3
llm_agents = 3
llm = "{spec}"

[llm]
answer_mode = "native"
"""


def test_scripted_llm_proposals(tmp_path, llm_env, capsys):  # noqa: F811
    out = tmp_path / "fish"
    with WireServer(responder=proposer) as server:
        path = tmp_path / "fishery.toml"
        path.write_text(FISHERY.format(spec=f"openai:m@{server.url}/v1"))
        run([str(path), "--yes", "--out", str(out)])
    capsys.readouterr()
    assert main(["analyse", "stated", str(out)]) == 0
    table = pd.read_csv(out / "analysis" / "stated_statements.csv")
    decisions = pd.read_parquet(out / "llm_decisions.parquet")
    ok = decisions[~decisions["fell_back"].astype(bool)]
    norms = ok[ok["kind"] == "fishery.norms"]
    assert len(table) == len(norms) > 0 and set(table["seat_kind"]) == {"llm"}
    texts = [json.loads(v)["community"] for v in norms["value"]]
    assert (table["status"] == "unparsed").sum() == texts.count(VAGUE) > 0
    assert set(table[table["status"] != "unparsed"]["amount"]) == {5.0}
    # the next round's effort, read from the record here on its own
    efforts = {
        (str(d.run_seed), int(d.agent_id), int(d.round)): float(json.loads(d.value))
        for d in ok[ok["kind"] == "fishery.effort"].itertuples()
    }
    runs = pd.read_parquet(out / "runs.parquet")
    seed_of = dict(zip(runs["RunId"], runs["seed"], strict=True))
    allowed = 5.0 / (0.0342 * 300.0)  # the default catchability and capacity
    judged = table[table["status"].isin(["kept", "broken"])]
    assert len(judged) > 0
    for _, r in judged.iterrows():
        effort = efforts[(str(seed_of[r["run"]]), int(r["seat"]), int(r["round"]) + 1)]
        assert r["allowed_effort"] == pytest.approx(allowed)
        assert (effort <= allowed) == (r["status"] == "kept")


def test_a_rule_turn_by_turn_meeting_is_read_from_the_replayed_words(tmp_path, capsys):
    out = tmp_path / "turns"
    run(
        ["port_of_mars/communication", "--set", "replications=2", "--set", "grid.meeting=[true]"]
        + ["--set", "meeting_turns=1", "--out", str(out)]
    )
    capsys.readouterr()
    assert main(["analyse", "pledges", str(out)]) == 0
    table = pd.read_csv(out / "analysis" / "pledges_statements.csv")
    assert set(table["source"]) == {"speak"} and len(table) > 0
    # the rule seat's sentence names its plan: "I plan to put N coins into port health ..."
    amounts = table["text"].str.extract(r"put (\d+) coins")[0].astype(float)
    pledged = table["parse"] == "pledge"
    assert (amounts[pledged] == table.loc[pledged, "amount"]).all()
    judged = table[table["status"].isin(["kept", "broken"])]
    assert ((judged["invested"] >= judged["amount"]) == (judged["status"] == "kept")).all()
