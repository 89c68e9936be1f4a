"""Human seats without a browser: the hub, the policy, validation and time-outs."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from llm_fixtures import llm_env  # noqa: F401

from mesa_dilemmas.agents.decisions import (
    ChoiceSpec,
    Decision,
    InvalidAnswer,
    ListSpec,
    NumberSpec,
    StructSpec,
    TextSpec,
)
from mesa_dilemmas.agents.human import (
    Hub,
    HumanPolicy,
    HumanTimeout,
    SeatClosed,
    build_human_policy,
    plain,
    use_hub,
)
from mesa_dilemmas.agents.population import Group, population_table
from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import build_model


def public_goods(hub: Hub, groups: list[dict[str, Any]], rounds: int = 2) -> Any:
    with use_hub(hub):
        return build_model(
            game_model("public_goods"),
            {"n_players": 4, "rounds": rounds, "players": {"groups": groups}},
            rng=7,
        )


class Stepper:
    """Plays one round in a thread (as the host does) and keeps what it raised."""

    def __init__(self, model: Any) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(model,), daemon=True)
        self.thread.start()

    def _run(self, model: Any) -> None:
        try:
            model.step()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def join(self, timeout: float = 10.0) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the round did not finish"


def wait_for(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_a_human_group_is_a_population_kind_and_needs_a_host() -> None:
    population = population_table({"groups": [{"human": "participant", "count": 2}]})
    group = population.groups[0]
    assert (group.kind, group.value) == ("human", "participant")
    with pytest.raises(ValueError, match="needs exactly one of"):
        Group(human="a", rule="rule")
    with pytest.raises(ValueError, match="mesa-dilemmas host"):
        build_model(
            game_model("public_goods"),
            {"n_players": 4, "players": {"groups": [{"human": "p", "count": 1}]}},
            rng=1,
        )
    with pytest.raises(ValueError, match="on_timeout"):
        Hub(on_timeout="later")  # type: ignore[arg-type]


def test_four_people_answer_together_invalid_answers_go_back_and_are_counted() -> None:
    hub = Hub(time_limit_s=30)
    model = public_goods(hub, [{"human": "participant", "count": 4}])
    assert len(hub.seats) == 4 and len({s.code for s in hub.seats}) == 4
    assert all(isinstance(a.policy, HumanPolicy) for a in model.agents)
    run = Stepper(model)
    # every ask of the phase is out at once: four open decisions before anyone answers
    wait_for(lambda: all(s.pending is not None for s in hub.seats))
    first = hub.seats[0]
    assert first.pending is not None and first.pending.kind == "public_goods.action"
    assert first.pending.observation["n_players"] == 4  # the observation, as plain data
    assert first.submit("maybe") == "expected one of [C, D], got 'maybe'"
    assert first.pending is not None and first.pending.invalid == 1  # still open, not coerced
    answers = {0: "C", 1: "c", 2: "D", 3: "C"}
    for seat in hub.seats:
        assert seat.submit(answers[seat.seat]) is None
    run.join()
    assert run.error is None
    records = sorted(hub.records(), key=lambda r: r["seat"])
    assert [r["answer"] for r in records] == ["C", "C", "D", "C"]  # "c" validated to "C"
    assert [r["invalid_answers"] for r in records] == [int(first.seat == s) for s in range(4)]
    assert all(r["answered"] and not r["timed_out"] for r in records)
    assert all(r["response_time_s"] >= 0 for r in records)
    cooperated = model.store.actions[0, :, 0].tolist()
    assert cooperated == [1, 1, 0, 1]
    assert model.broker.stats.total("asked") == 4 and model.broker.stats.total("fallbacks") == 0


def test_rule_seats_have_answered_when_the_people_are_asked() -> None:
    hub = Hub(time_limit_s=30)
    model = public_goods(hub, [{"human": "p", "count": 2}, {"strategy": "all_c", "count": 2}])
    run = Stepper(model)
    wait_for(lambda: all(s.pending is not None for s in hub.seats))
    assert model.broker.stats.total("asked") == 0  # answers are accepted together at the end
    for seat in hub.seats:
        assert seat.submit("D") is None
    run.join()
    assert run.error is None and model.broker.stats.total("asked") == 4


def test_a_time_out_is_recorded_and_the_phase_waits_by_default() -> None:
    hub = Hub(time_limit_s=0.2)
    model = public_goods(hub, [{"human": "p", "count": 1}, {"strategy": "all_d", "count": 3}])
    run = Stepper(model)
    seat = hub.seats[0]
    wait_for(lambda: seat.pending is not None and seat.pending.timed_out)
    assert run.thread.is_alive() and hub.timeouts == 1
    assert seat.submit("C") is None
    run.join()
    (record,) = seat.records
    assert record["timed_out"] and record["answered"] and record["answer"] == "C"
    assert record["response_time_s"] >= 0.2
    assert model.broker.stats.total("fallbacks") == 0


def test_a_time_out_stops_the_group_when_asked_to() -> None:
    hub = Hub(time_limit_s=0.1, on_timeout="stop")
    model = public_goods(hub, [{"human": "p", "count": 1}, {"strategy": "all_d", "count": 3}])
    run = Stepper(model)
    run.join()
    assert isinstance(run.error, HumanTimeout) and "within 0.1 s" in str(run.error)
    (record,) = hub.seats[0].records
    assert record["timed_out"] and not record["answered"] and record["answer"] is None


def test_a_time_out_uses_the_documented_fallback_only_when_asked_and_flags_it() -> None:
    hub = Hub(time_limit_s=0.1, on_timeout="fallback")
    model = public_goods(hub, [{"human": "p", "count": 1}, {"strategy": "all_c", "count": 3}])
    run = Stepper(model)
    run.join()
    assert run.error is None
    (record,) = hub.seats[0].records
    assert record["timed_out"] and not record["answered"] and record["answer"] == "D"
    assert model.broker.stats.total("fallbacks") == 1  # counted, as any fallback
    actions = model.store.actions[0, :, 0].tolist()
    assert actions[hub.seats[0].seat] == 0 and sum(actions) == 3


def test_closing_the_hub_ends_an_open_decision() -> None:
    hub = Hub(time_limit_s=30)
    model = public_goods(hub, [{"human": "p", "count": 1}, {"strategy": "all_d", "count": 3}])
    run = Stepper(model)
    wait_for(lambda: hub.seats[0].pending is not None)
    hub.close()
    run.join()
    assert isinstance(run.error, SeatClosed)
    assert hub.seats[0].submit("C") == "this decision is no longer open"


def test_nested_specs_validate_a_whole_form_answer() -> None:
    hub = Hub(time_limit_s=5)
    seat = hub.add_seat(0, "p")
    spec = StructSpec(
        {
            "to": ChoiceSpec(("a", "b")),
            "give": StructSpec({"food": NumberSpec(0, 3, integer=True)}, frozenset({"food"})),
            "note": TextSpec(max_chars=10),
            "cards": ListSpec(ChoiceSpec(("x", "y")), max_items=2),
        }
    )
    seat.post(Decision("game.offer", spec, {"me": 1}, step=3), 5)
    assert "field 'give'" in (seat.submit({"to": "a", "give": {"food": 9}, "note": "hi"}) or "")
    assert seat.submit({"to": "a", "give": {}, "note": "hi", "cards": ["x", "z"]}) is not None
    ok = {"to": "b", "give": {"food": 2}, "note": "hi", "cards": ["y"]}
    assert seat.submit(ok) is None
    assert seat.records[0]["answer"] == ok and seat.records[0]["invalid_answers"] == 2


def test_a_seat_keeps_its_participant_and_draft_across_reloads() -> None:
    hub = Hub(time_limit_s=5)
    seat = hub.add_seat(0, "p")
    assert seat.state == "open"
    pid = seat.join()
    assert seat.join() == pid and seat.state == "joined"
    seat.post(Decision("g.x", NumberSpec(0, 1), {}), 5)
    seat.keep_draft(0.25)
    assert hub.seat(seat.code.lower()) is seat and seat.pending.draft == 0.25
    assert seat.state == "deciding"


def test_plain_turns_observation_objects_into_data() -> None:
    import numpy as np

    class Described:
        def as_dict(self) -> dict[str, Any]:
            return {"k": np.float64(2.0)}

    out = plain({"a": np.array([1, 2]), "b": Described(), "c": float("nan"), "d": (1, "x")})
    assert out == {"a": [1, 2], "b": {"k": 2.0}, "c": None, "d": [1, "x"]}


def test_the_builder_refuses_a_role() -> None:
    hub = Hub()
    with use_hub(hub), pytest.raises(ValueError, match="not a role"):
        build_human_policy("p", group=Group(human="p"), model=None, seat=None, persona=None)  # type: ignore[arg-type]


# -- a hosted session without a browser: records, LLM seats, the scenario checks ----------


def play_session(session: Any, answers: dict[str, str], limit: float = 30.0) -> None:
    """Start every group and answer every open decision of each person from ``answers``
    (by the decision's kind), as the pages would, until every group has ended."""
    for group in session.groups:
        for seat in group.hub.seats:
            seat.join()
            seat.agree()
            seat.ready()
        group.start()
    deadline = time.monotonic() + limit
    while any(g.state in ("running", "paused") for g in session.groups):
        assert time.monotonic() < deadline, "the session did not end"
        for group in session.groups:
            for seat in group.hub.seats:
                pending = seat.pending
                if pending is not None and time.monotonic() - pending.posted > 0.3:
                    assert seat.submit(answers[pending.kind], pending.id) is None
        time.sleep(0.01)
    for group in session.groups:  # its records written
        assert group.ended.wait(30)


def test_a_session_writes_its_groups_as_a_run_directory(tmp_path) -> None:
    import pandas as pd

    from mesa_dilemmas.viz.host.config import load_hosted
    from mesa_dilemmas.viz.host.session import Session

    hosted = load_hosted("public_goods/with_strategies", ["max_steps=2", "params.rounds=2"])
    session = Session(hosted, tmp_path / "run", "key", groups=2)
    codes = [c for _, _, c in session.codes()]
    assert len(set(codes)) == 2 and (tmp_path / "run" / "seats.json").is_file()
    play_session(session, {"public_goods.action": "C"})
    out = tmp_path / "run"
    for name in ("config.toml", "runs.parquet", "steps.parquet", "agents.parquet",
                 "decisions.parquet", "summary.json", "manifest.json"):  # fmt: skip
        assert (out / name).is_file(), name
    runs = pd.read_parquet(out / "runs.parquet")
    assert runs["state"].tolist() == ["finished", "finished"] and runs["steps_run"].tolist() == [
        2,
        2,
    ]
    assert runs["seed"].nunique() == 2  # each group its own replication seed
    agents = pd.read_parquet(out / "agents.parquet")
    assert set(agents["seat_kind"]) == {"human", "strategy"}
    per_kind = agents.groupby("seat_kind")["response_time_s"].median()
    assert per_kind["human"] >= 0.3 > per_kind["strategy"]  # people were given 0.3 s here
    decisions = pd.read_parquet(out / "decisions.parquet")
    assert len(decisions) == 2 * 2 * 4  # groups x rounds x seats
    summary = __import__("json").loads((out / "summary.json").read_text())
    assert summary["host"]["human_seats"] == 2 and summary["host"]["timeouts"] == 0


def test_language_model_seats_answer_while_a_person_decides(tmp_path, llm_env) -> None:  # noqa: F811
    import pandas as pd
    from llm_servers.wire import WireServer

    from mesa_dilemmas.viz.host.config import load_hosted
    from mesa_dilemmas.viz.host.session import Session

    with WireServer() as server:
        spec = f"openai:m@{server.url}/v1"
        scenario = tmp_path / "mixed.toml"
        scenario.write_text(
            'game = "public_goods"\nmax_steps = 2\nparams = { n_players = 4, rounds = 2 }\n'
            "[population]\n"
            f'groups = [{{ human = "p", count = 1 }}, {{ llm = "{spec}", count = 3 }}]\n'
            "[host]\ntime_limit_s = 30\n"
        )
        session = Session(load_hosted(str(scenario)), tmp_path / "run", "key")
        group = session.groups[0]
        (seat,) = group.hub.seats
        group.start()
        wait_for(lambda: seat.pending is not None)
        # the language models of the phase are asked while the person is deciding
        wait_for(lambda: server.state.requests >= 3, timeout=20)
        assert seat.pending is not None and group.broker.log == []
        play_session(session, {"public_goods.action": "D"})
    decisions = pd.read_parquet(tmp_path / "run" / "decisions.parquet")
    llm = decisions[decisions["seat_kind"] == "llm"]
    assert len(llm) == 6 and llm["response_time_s"].quantile(0.95) < 5.0
    assert set(decisions["seat_kind"]) == {"human", "llm"}
    summary = __import__("json").loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["llm"]["calls"] >= 6


def test_a_hosted_scenario_fails_fast_with_one_line(tmp_path) -> None:
    from mesa_dilemmas.scenarios.config import ConfigError
    from mesa_dilemmas.viz.host.config import hosted_scenarios, load_hosted

    assert {"public_goods/four_people", "fishery/one_villager", "port_of_mars/two_people"} <= set(
        hosted_scenarios()
    )
    with pytest.raises(ConfigError, match="host.time_limit_s"):
        load_hosted("public_goods/four_people", ["host.time_limit_s=-1"])
    with pytest.raises(ConfigError, match="host.colour"):
        load_hosted("public_goods/four_people", ["host.colour='red'"])
    plain_run = tmp_path / "nobody.toml"
    plain_run.write_text('game = "public_goods"\n')
    with pytest.raises(ConfigError, match=r"human = \"NAME\""):
        load_hosted(str(plain_run))
    with pytest.raises(ConfigError, match="no such hosted scenario"):
        load_hosted("public_goods/nobody_here")


def test_two_people_and_three_rule_players_play_port_of_mars(tmp_path) -> None:
    """Every decision a resident is asked (a plan, a goal, an investment budget, trade offers,
    discards) is answered through the form's value path (``answer_of``) and validated."""
    import pandas as pd

    from mesa_dilemmas.agents.decisions import AnswerSpec
    from mesa_dilemmas.viz.host.config import load_hosted
    from mesa_dilemmas.viz.host.render import answer_of, empty
    from mesa_dilemmas.viz.host.session import Session

    def form(spec: AnswerSpec) -> Any:  # what a person leaves after filling the required boxes
        value = empty(spec)
        if isinstance(spec, NumberSpec):
            return str(int(spec.low + 1)) if spec.high >= spec.low + 1 else str(int(spec.low))
        if isinstance(spec, ChoiceSpec):
            return spec.options[-1]
        if isinstance(spec, TextSpec):
            return "We share."
        if isinstance(spec, StructSpec):
            return {k: form(v) for k, v in spec.fields.items() if k not in spec.optional}
        return value

    session = Session(load_hosted("port_of_mars/two_people", ["max_steps=1"]), tmp_path, "k")
    group = session.groups[0]
    assert [s.seat for s in group.hub.seats] == [0, 1]  # placement "first"
    group.start()
    kinds: list[str] = []
    deadline = time.monotonic() + 30
    while group.state == "running":
        assert time.monotonic() < deadline
        for seat in group.hub.seats:
            pending = seat.pending
            if pending is not None:
                kinds.append(pending.kind)
                error = seat.submit(answer_of(pending.spec, form(pending.spec)), pending.id)
                assert error is None, (pending.kind, error)
        time.sleep(0.005)
    assert group.ended.wait(30) and group.state == "finished", group.message
    assert {k.rsplit(".", 1)[-1] for k in kinds} >= {"health_plan", "invest", "trade_offer"}
    agents = pd.read_parquet(tmp_path / "agents.parquet")
    assert agents.groupby("seat_kind")["AgentID"].nunique().to_dict() == {"human": 2, "rule": 3}


def test_the_page_shows_the_observation_once_and_hands_back_what_the_spec_reads() -> None:
    from mesa_dilemmas.viz.host.render import answer_of, empty, observation_html, readable

    obs = {
        "game": {"n": 4, "k": 2.0},
        "params": {"n": 4, "k": 2.0},  # a second copy: shown once
        "history": {"round": 1},  # repeats the top-level round: left out
        "round": 1,
        "rules": "How the game works. " * 30,  # long: folded under its first line
        "villagers": [{"id": 1, "effort": 0.5}, {"id": 2, "effort": 0.25}],
        "hint": "",
    }
    assert list(readable(obs)) == ["game", "round", "rules", "villagers", "hint"]
    shown = observation_html(obs)
    assert shown.count("<details") == 1 and 'class="host-records"' in shown
    assert 'data-obs="hint"' not in shown and 'data-obs="params"' not in shown
    spec = StructSpec(
        {
            "to": ChoiceSpec(("a", "b")),
            "give": StructSpec({"food": NumberSpec(0, 3, integer=True)}, frozenset({"food"})),
            "cards": ListSpec(ChoiceSpec(("x", "y"))),
        },
        optional=frozenset({"give"}),
    )
    blank = empty(spec)
    assert blank == {"to": None, "give": {"food": None}, "cards": []}
    # blank required fields stay missing (the spec says so); blank optional ones are left out
    assert answer_of(spec, blank) == {"to": None, "cards": []}
    with pytest.raises(InvalidAnswer, match="missing field 'to'"):
        spec.validate(answer_of(spec, blank))
    filled = {"to": "b", "give": {"food": "2"}, "cards": ["y"]}
    assert spec.validate(answer_of(spec, filled)) == {
        "to": "b",
        "give": {"food": 2},
        "cards": ["y"],
    }
    assert answer_of(NumberSpec(0, 1), "  ") is None and answer_of(TextSpec(), None) == ""


def test_pause_holds_the_next_round_and_stop_ends_an_open_decision(tmp_path) -> None:
    import pandas as pd

    from mesa_dilemmas.viz.host.config import load_hosted
    from mesa_dilemmas.viz.host.session import Session

    session = Session(load_hosted("public_goods/with_strategies"), tmp_path, "k", groups=1)
    group = session.groups[0]
    (seat,) = group.hub.seats
    group.start()
    wait_for(lambda: seat.pending is not None)
    group.pause()  # takes effect between rounds: the open decision stays open
    assert group.state == "paused" and seat.pending is not None
    assert seat.submit("C") is None
    time.sleep(0.3)
    assert seat.pending is None and group.rounds == 1 and group.model.round == 1
    group.resume()
    wait_for(lambda: seat.pending is not None)
    assert group.model.round == 2
    group.stop()
    assert group.ended.wait(10) and group.state == "stopped"
    assert seat.state == "stopped" and seat.submit("C") == "this decision is no longer open"
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert runs.loc[0, "state"] == "stopped" and runs.loc[0, "steps_run"] == 1


def test_the_report_compares_people_with_the_other_seats(tmp_path, capsys) -> None:
    from mesa_dilemmas.cli import main
    from mesa_dilemmas.viz.host.config import load_hosted
    from mesa_dilemmas.viz.host.session import Session, seat_comparison

    hosted = load_hosted("public_goods/with_strategies", ["max_steps=2", "params.rounds=2"])
    session = Session(hosted, tmp_path, "k", groups=1)
    play_session(session, {"public_goods.action": "C"})
    table = seat_comparison(tmp_path).set_index("seat_kind")
    assert table.loc["human", "decisions"] == 2 and table.loc["strategy", "decisions"] == 6
    assert table.loc["human", "top_answer"] == '"C"' and table.loc["human", "top_share"] == 1.0
    assert table.loc["human", "median_s"] > table.loc["strategy", "median_s"]
    assert main(["host", "--report", str(tmp_path)]) == 0
    assert "public_goods.action" in capsys.readouterr().out
    assert main(["host", "--report", str(tmp_path / "nothing")]) == 2
    assert main(["analyse", "seats", str(tmp_path)]) == 0  # the same table, as an analysis
    assert "public_goods.action" in capsys.readouterr().out
    assert (tmp_path / "analysis" / "seats.csv").read_text() == (
        seat_comparison(tmp_path).to_csv(index=False)
    )
    assert main(["analyse", "seats", str(tmp_path / "nothing")]) == 2


def test_a_long_text_repeated_in_the_observation_is_shown_once() -> None:
    from mesa_dilemmas.viz.host.render import readable

    rules = "How the game works. " * 30
    out = readable({"rules": rules, "briefing": rules + "You are the Curator.", "common": rules})
    assert out == {"rules": rules, "briefing": "[rules, as above]You are the Curator."}


def test_run_refuses_human_seats_and_names_the_host_command(tmp_path) -> None:
    from cli_runner import cli_in_process

    scenario = tmp_path / "people.toml"
    scenario.write_text(
        'game = "public_goods"\nparams = { n_players = 4, rounds = 3 }\n'
        '[population]\ngroups = [{ human = "participant", count = 2 }]\n'
    )
    code, err = cli_in_process(["run", str(scenario), "--out", str(tmp_path / "run")])
    assert code == 2
    assert "human = 'participant'" in err and "mesa-dilemmas host SCENARIO" in err
    assert not (tmp_path / "run").exists()
