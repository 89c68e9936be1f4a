"""The comprehension battery: every game's items (at least 100, distinct, answers legal) agree with
the game's own code played another way; a loopback oracle (it looks each question up in the table
of computed answers) scores 100% and a uniform guesser scores at chance; a rerun is free; invalid
answers are re-asked and counted; the gate stops or warns; one tiny run of the embedded model."""

from __future__ import annotations

import csv
import json
import math
import random
from functools import cache

import numpy as np
import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply
from llm_servers.wire import WireServer

from mesa_dilemmas.agents.decisions import ChoiceSpec, NumberSpec
from mesa_dilemmas.agents.policy import FixedPolicy
from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.comprehension import Item
from mesa_dilemmas.instruments.comprehension import (
    battery_games,
    comprehension_gate,
    items_for,
    load_result,
    skills_of,
)
from mesa_dilemmas.llm import LLMConfigError, LLMSettings
from mesa_dilemmas.llm.prompts import GENERIC_VARIANTS

GAMES = ("collective_risk", "common_pool", "fishery", "port_of_mars", "public_goods")
N = 100
#: items per game the scripted answerers are asked (the batteries themselves are checked at N)
ASKED = 30


@cache
def battery(game: str, n: int = N, seed: int = 0) -> tuple[Item, ...]:
    """A game's items, made once per test process."""
    return tuple(items_for(game, n=n, seed=seed))


def test_every_bundled_game_has_a_battery():
    assert tuple(battery_games()) == GAMES


# -- the items -----------------------------------------------------------------------------


@pytest.mark.parametrize("game", GAMES)
def test_a_battery_has_100_distinct_legal_items_of_every_skill(game):
    items = battery(game)
    assert len(items) == N and len({it.question for it in items}) == N
    assert {it.skill for it in items} == set(skills_of(game))
    for it in items:
        assert it.game == game and it.spec.validate(it.answer) is not None
        assert it.correct(it.answer)
        assert 0 < it.chance() <= 1
    # the same seed draws the same states; another seed others
    assert [it.question for it in items_for(game, n=N, seed=0)] == [it.question for it in items]
    other = {it.question for it in items_for(game, n=20, seed=1)}
    assert len(other & {it.question for it in items}) < 10


def test_scoring_and_chance():
    num = Item("g", "s", "q?", NumberSpec(0, 10), 4.0, tolerance=0.5)
    assert num.correct(4.4) and num.correct(3.5) and not num.correct(4.6) and not num.correct(None)
    assert num.chance() == pytest.approx(0.1)
    edge = Item("g", "s", "q?", NumberSpec(0, 10), 0.2, tolerance=0.5)
    assert edge.chance() == pytest.approx(0.07)
    whole = Item("g", "s", "q?", NumberSpec(0, 9, integer=True), 3, tolerance=1)
    assert whole.chance() == pytest.approx(0.3) and whole.correct(2) and not whole.correct(5)
    pick = Item("g", "s", "q?", ChoiceSpec(("C", "D", "equal")), "D")
    assert pick.correct("D") and not pick.correct("C") and pick.chance() == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="not a legal one"):
        Item("g", "s", "q?", NumberSpec(0, 1), 2.0)


# -- the answers agree with the game's own code, played another way ------------------------------


def fishery_model(**params):
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

    base = {
        "punishment": False,
        "social_learning": False,
        "group_decision": False,
        "stop_at_collapse": False,
        "initial_wealth": 1000.0,
        "capacity": 300.0,
    }
    return FisheryModel(rng=7, **{**base, **params})


def scripted(model, tables):
    for v, table in zip(model.villagers, tables, strict=True):
        policy = FixedPolicy(table)
        v.policy = policy
        policy.bind(v)


def test_fishery_answers_agree_with_a_whole_round_of_the_model():
    items = items_for("fishery", n=N, seed=2)
    checked = dict.fromkeys(skills_of("fishery"), 0)
    for it in items:
        s = it.state
        if it.skill in ("harvest", "payoff"):
            m = fishery_model(
                n_agents=2, catchability=s["alpha"], consumption=s.get("consumption", 1.9)
            )
            m.stock = float(s["stock"])
            scripted(m, [{"fishery.effort": s["effort"]}, {"fishery.effort": 0.0}])
            m.step()  # a whole round, with a different second villager
            me = m.villagers[0]
            got = me.harvest if it.skill == "harvest" else me.round_payoff
            # and the paper's rule in words: h = alpha e R, payoff h - c
            h = s["alpha"] * s["effort"] * s["stock"]
            assert got == pytest.approx(h if it.skill == "harvest" else h - s["consumption"])
        elif it.skill == "regrowth":
            m = fishery_model(
                n_agents=2,
                capacity=s["capacity"],
                growth_rate=s["r"],
                regrowth="doubling" if s["doubling"] else "logistic",
            )
            m.stock = float(s["left"])
            scripted(m, [{"fishery.effort": 0.0}] * 2)  # nobody fishes: the round only regrows
            m.step()
            got = m.stock
        elif it.skill == "sustainable_catch":
            # the answer is a fixed point of the model's round: a lake catching exactly that
            # much a day stays where it is (K/2 logistic, K doubling); 10% more shrinks it
            doubling = s["doubling"]
            for extra, stays in ((1.0, True), (1.1, False)):
                m = fishery_model(
                    n_agents=2,
                    capacity=s["capacity"],
                    growth_rate=s["r"],
                    regrowth="doubling" if doubling else "logistic",
                    catchability=0.5,
                )
                start = s["capacity"] if doubling else s["capacity"] / 2 + it.answer
                m.stock = start
                effort = extra * it.answer / (2 * 0.5 * start)
                scripted(m, [{"fishery.effort": effort}] * 2)
                m.step()
                assert (m.stock == pytest.approx(start, rel=1e-6)) is stays
            got = it.answer
        elif it.skill == "group_cap":
            got = float(np.median(s["proposals"]))
        elif it.skill == "imitation":
            got = 1 / (1 + math.exp(-s["delta"] * (s["peer"] - s["own"])))
        elif it.skill == "compliance":
            catches = [s["alpha"] * e * s["stock"] for e in s["efforts"]]
            got = sum(c <= s["cap"] for c in catches)
        elif it.skill == "collapse":
            m = fishery_model(
                n_agents=len(s["efforts"]),
                catchability=s["alpha"],
                collapse_threshold=s["threshold"],
                growth_rate=s["r"],
                stop_at_collapse=True,
            )
            m.stock = float(s["stock"])
            scripted(m, [{"fishery.effort": e} for e in s["efforts"]])
            m.step()
            got = "yes" if not m.running else "no"  # the model stops at a collapse
        elif it.skill == "starvation":
            alive = s["wealth"] + s["harvest"] - s["consumption"] >= 0
            got = "yes" if alive else "no"
        elif it.skill == "fine":
            fines = s["punishers"] if s["per_punisher"] else min(1, s["punishers"])
            got = (
                s["harvest"]
                - s["consumption"]
                - s["beta"] * fines
                - (s["gamma"] if s["i_punish"] else 0)
            )
        else:  # pragma: no cover - a new skill needs its check here
            raise AssertionError(it.skill)
        checked[it.skill] += 1
        assert it.correct(got), (it.skill, it.question, it.answer, got)
        if isinstance(got, float):
            assert got == pytest.approx(it.answer, abs=1e-3)
    assert min(checked.values()) >= 8


def test_port_of_mars_answers_agree_with_the_models_phases():
    from mesa_dilemmas.dilemmas.port_of_mars.cards import (
        RESOURCES,
        ROLES,
        accomplishment_cards,
        load_rules,
        role_specs,
    )
    from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel

    consts = load_rules()["constants"]
    items = items_for("port_of_mars", n=N, seed=2)
    checked = dict.fromkeys(skills_of("port_of_mars"), 0)
    for it in items:
        s = it.state
        if it.skill == "investment_cost":
            # the model's own investment phase, with the seat answering that bundle
            role = s["role"]
            m = PortOfMarsModel(
                rng=3, meeting=False, roles=[role, *(r for r in ROLES if r != role)]
            )
            m.phase_new_round()
            if s["event"]:
                from mesa_dilemmas.dilemmas.port_of_mars.cards import event_cards
                from mesa_dilemmas.dilemmas.port_of_mars.events import resolve_event

                resolve_event(m, event_cards()[s["event"]])
            p = m.player(0)
            p.coins = 100
            policy = FixedPolicy(
                {"port_of_mars.invest": {**s["bundle"], "port_health": s["health"]}}
            )
            p.policy = policy
            policy.bind(p)
            for other in range(1, 5):
                m.player(other).coins = 0
            m.phase_investment()
            got = 100 - p.coins
            if not s["event"]:  # and the rules' table: units x the role's price
                costs = role_specs()[role].costs
                bundle = s["bundle"]
                assert got == sum(costs[r] * n for r, n in bundle.items()) + s["health"]
        elif it.skill == "affordable":
            card = next(c for c in accomplishment_cards()[s["role"]] if c.name == s["card"])
            held = s["held"]
            m = PortOfMarsModel(rng=3, meeting=False)
            p = m.player(0)
            p.hand, p.resources = [card], {r: held[r] for r in RESOURCES}
            p.purchase([card.name])  # the purchase goes through exactly when it is affordable
            got = "yes" if p.cards_bought == 1 else "no"
        elif it.skill == "events_count":
            # the online game's rule as rules.json transcribes it
            rule = consts["event_count_rule"]
            got = next(
                r["events_drawn"]
                for r in rule
                if r.get("otherwise") or s["health"] < r["if_system_health_below"]
            )
        elif it.skill in ("upkeep", "collapse"):
            after = max(0, s["health"] - consts["wear_and_tear_per_round"])
            got = after if it.skill == "upkeep" else ("yes" if after <= 0 else "no")
        elif it.skill == "end_of_round":
            got = min(100, max(0, s["health"] + sum(s["coins"]) - s["dirty"]))
        elif it.skill in ("can_buy", "max_units", "accomplishment_points", "event_effect"):
            got = it.answer  # computed by the model's own prices, budget check, purchase, events
            checked[it.skill] += 1
            continue
        else:  # pragma: no cover
            raise AssertionError(it.skill)
        checked[it.skill] += 1
        assert it.correct(got), (it.skill, it.question, it.answer, got)
    assert min(checked.values()) >= 8


@pytest.mark.parametrize("game", ["collective_risk", "common_pool", "public_goods"])
def test_cd_answers_agree_with_the_rules_engine(game):
    """The battery plays the Mesa model; the check plays the rules object the batch engine uses."""
    from mesa_dilemmas.dilemmas.binary.rules import make_game

    items = items_for(game, n=N, seed=2)
    for it in items:
        s = it.state
        rules = make_game(game, s["n"], 2, **s["params"])
        state = None if s["stock"] is None else np.array([s["stock"]])

        def play(coop, rules=rules, state=state):
            pay, nxt = rules.payoffs(np.array([coop], dtype=bool), state)
            return pay[0], None if nxt is None else float(nxt[0])

        n, q = s["n"], it.question
        if "cooperators" in s:  # how many of all the players choose C
            c = s["cooperators"]
            said = f"all {n} players choose {'C' if c == n else 'D'}" if c in (0, n) else f"{c} of"
            assert said in q
            pay, nxt = play([i < c for i in range(n)])
            got = {"group_payoff": pay.sum(), "next_stock": nxt, "pool_share": pay[0]}[it.skill]
        elif it.skill == "best_for_group":
            totals = [play([i < c for i in range(n)])[0].sum() for c in range(n + 1)]
            got = int(np.argmax(totals))
        else:  # you are seat 0; others_c of the others choose C
            j = s["others_c"]
            said = ("the other player chooses " + "CD"[j == 0]) if n == 2 else f"{j or 'none'} of"
            assert said in q
            others = [i < j for i in range(n - 1)]
            c_pay, _ = play([True, *others])
            d_pay, _ = play([False, *others])
            if it.skill == "payoff_cooperate":
                got = c_pay[0]
            elif it.skill == "payoff_defect":
                got = d_pay[0]
            elif it.skill == "better_action":
                got = "equal" if c_pay[0] == d_pay[0] else "C" if c_pay[0] > d_pay[0] else "D"
            elif it.skill == "others_gain":
                got = c_pay[1] - d_pay[1]
            elif it.skill == "threshold":  # the rules' threshold m, as the rules text states it
                got = "yes" if j >= s["params"]["m"] else "no"
            else:  # pragma: no cover
                raise AssertionError(it.skill)
        assert it.correct(got), (it.skill, q, it.answer, got)


# -- scripted answerers on a loopback server -------------------------------------------------------


def first_user(req: NormalizedRequest) -> str:
    return next(text for role, text in req.messages if role == "user")


def reply(req: NormalizedRequest, value) -> Reply:
    if req.schema is not None:
        data = {"answer": value}
        if "reasoning" in req.schema.get("properties", {}):
            data = {"reasoning": "I work it out from the rules.", **data}
        return Reply(json.dumps(data), data)
    return Reply(f"I work it out from the rules. <answer>{value}</answer>")


def oracle(table: dict[str, Item]):
    """Looks the question up in the table of computed answers (the question is in the prompt)."""

    def answer(req: NormalizedRequest) -> Reply:
        text = first_user(req)
        found = [it for q, it in table.items() if q in text]
        assert len(found) == 1, text[:200]
        return reply(req, found[0].answer)

    return answer


def guesser(req: NormalizedRequest) -> Reply:
    """A uniform draw among the legal answers the schema allows (seeded by the request)."""
    rng = random.Random(req.rng().random())
    spec = req.schema["properties"]["answer"]
    if "enum" in spec:
        return reply(req, rng.choice(spec["enum"]))
    if spec["type"] == "integer":
        return reply(req, rng.randint(int(spec["minimum"]), int(spec["maximum"])))
    return reply(req, rng.uniform(spec["minimum"], spec["maximum"]))


def all_items(n: int = N, seed: int = 0) -> dict[str, Item]:
    return {it.question: it for g in GAMES for it in battery(g, n, seed)}


def table_rows(out):
    with (out / "comprehension.csv").open() as f:
        return list(csv.DictReader(f))


def test_an_oracle_scores_everything_and_a_rerun_is_free(tmp_path, llm_env, capsys):  # noqa: F811
    table = all_items(ASKED)
    with WireServer(responder=oracle(table)) as server:
        argv = ["comprehension", "--llm", f"openai:oracle@{server.url}/v1", "--answer-mode", "tags"]
        argv += ["--items", str(ASKED)]
        assert main([*argv, "--out", str(tmp_path / "a")]) == 0
        requests = server.state.requests
        assert requests == len(GAMES) * ASKED
        first = capsys.readouterr().out
        assert main([*argv, "--out", str(tmp_path / "b")]) == 0
        assert server.state.requests == requests  # the rerun: 0 new server requests
        second = capsys.readouterr().out
    assert f"llm: {len(GAMES) * ASKED} provider calls, 0 from the cache" in first
    assert f"llm: 0 provider calls, {len(GAMES) * ASKED} from the cache" in second
    rows = table_rows(tmp_path / "a")
    # one row per skill in the battery's order, then the game's "all" row
    assert [(r["game"], r["skill"]) for r in rows] == [
        (g, s) for g in GAMES for s in [*skills_of(g), "all"]
    ]
    for r in rows:
        assert r["accuracy"] == "1" and r["malformed"] == "0", r
        assert float(r["ci_low"]) > 0.3 and r["ci_high"] == "1"
    alls = [r for r in rows if r["skill"] == "all"]
    assert [int(r["items"]) for r in alls] == [ASKED] * len(GAMES)
    assert "| public_goods | **all** | 30 | 30 | 100% | [89%, 100%] |" in first
    data = json.loads((tmp_path / "a" / "comprehension.json").read_text())
    assert len(data["items"]) == len(GAMES) * ASKED and data["variant"] == 0
    print(first)
    # the stored result passes the gate; a higher bar than it reached cannot exist, a missing
    # game stops with the command that measures it
    spec = f"openai:oracle@{server.url}/v1"
    settings = LLMSettings.from_table({"min_comprehension": 0.95})
    for game in GAMES:
        comprehension_gate([spec], settings, game)
        assert load_result(settings, spec, game, 0)["accuracy"] == 1.0
    with pytest.raises(
        LLMConfigError, match="no comprehension result on fishery .prompt variant 2"
    ):
        comprehension_gate([spec], settings.model_copy(update={"prompt_variant": 2}), "fishery")


def test_a_guesser_scores_at_chance_and_the_gate_holds_it(tmp_path, llm_env, capsys):  # noqa: F811
    table = all_items(2 * ASKED)
    with WireServer(responder=guesser) as server:
        spec = f"openai:guess@{server.url}/v1"
        argv = [
            "comprehension",
            "--llm",
            spec,
            "--answer-mode",
            "native",
            "--items",
            str(2 * ASKED),
        ]
        assert main([*argv, "--out", str(tmp_path / "g")]) == 0
    capsys.readouterr()
    with (tmp_path / "g" / "comprehension_items.csv").open() as f:
        got = list(csv.DictReader(f))
    assert len(got) == len(GAMES) * 2 * ASKED and all(r["malformed"] == "False" for r in got)
    # chance from the specs: the number right is a sum of Bernoullis with each item's chance
    chances = [table[r["question"]].chance() for r in got]
    expected = sum(chances)
    sd = math.sqrt(sum(p * (1 - p) for p in chances))
    right = sum(r["correct"] == "True" for r in got)
    with capsys.disabled():
        print(f"guesser: {right} of {len(got)} right, {expected:.1f} expected, s.d. {sd:.1f}")
    assert abs(right - expected) <= 4 * sd, (right, expected, sd)
    assert right < 0.3 * len(got)  # far from the oracle's 100%
    # the gate: a warning with "warn", a stop with "stop", naming the model and its score
    settings = LLMSettings.from_table({"min_comprehension": 0.8, "on_low_comprehension": "warn"})
    comprehension_gate([spec], settings, "public_goods")
    assert "openai:guess answered" in capsys.readouterr().err
    with pytest.raises(LLMConfigError, match=r"openai:guess answered \d+ of 60 .* below"):
        comprehension_gate(
            [spec], settings.model_copy(update={"on_low_comprehension": "stop"}), "public_goods"
        )
    comprehension_gate([spec], LLMSettings(), "public_goods")  # unset: nothing checked
    with pytest.raises(LLMConfigError, match="nosuch has no comprehension battery"):
        comprehension_gate(
            [spec], settings.model_copy(update={"on_low_comprehension": "stop"}), "nosuch"
        )


def test_invalid_answers_are_asked_again_and_counted_never_filled_in(tmp_path, llm_env, capsys):  # noqa: F811
    items = items_for("public_goods", n=20, seed=5)
    table = {it.question: it for it in items}
    stubborn = items[3].question  # never a readable answer
    once = items[4].question  # wrong format once, then right

    def flaky(req: NormalizedRequest) -> Reply:
        text = first_user(req)
        reask = any(role == "assistant" for role, _ in req.messages)
        if stubborn in text:
            return Reply("I would rather not say.")
        if once in text and not reask:
            return Reply("<answer>about half</answer>")
        return oracle(table)(req)

    with WireServer(responder=flaky) as server:
        argv = ["comprehension", "--llm", f"openai:m@{server.url}/v1", "--game", "public_goods"]
        argv += ["--items", "20", "--seed", "5", "--answer-mode", "tags", "--out", str(tmp_path)]
        assert main(argv) == 0
        assert server.state.requests == 20 + 2 + 1  # 2 re-asks of the stubborn one, 1 of the other
    (row,) = [r for r in table_rows(tmp_path) if r["skill"] == "all"]
    assert row["correct"] == "19" and row["malformed"] == "1" and row["parse_failures"] == "4"
    with (tmp_path / "comprehension_items.csv").open() as f:
        bad = [r for r in csv.DictReader(f) if r["malformed"] == "True"]
    assert len(bad) == 1 and bad[0]["answer"] == "" and bad[0]["correct"] == "False"


@pytest.mark.parametrize("game", ["public_goods", "fishery", "port_of_mars"])
def test_a_prompt_variant_asks_in_the_games_own_framing(game, tmp_path, llm_env, capsys):  # noqa: F811
    items = items_for(game, n=3, seed=0)
    seen: dict[str, list[str]] = {"0": [], "1": []}

    def record(req: NormalizedRequest) -> Reply:
        seen[variant].append(req.system)
        return oracle({it.question: it for it in items})(req)

    with WireServer(responder=record) as server:
        argv = ["comprehension", "--llm", f"openai:m@{server.url}/v1", "--game", game]
        argv += ["--items", "3", "--answer-mode", "tags"]
        for variant in ("1", "0"):
            assert main([*argv, "--variant", variant, "--out", str(tmp_path / variant)]) == 0
            (row,) = [r for r in table_rows(tmp_path / variant) if r["skill"] == "all"]
            assert row["accuracy"] == "1" and row["variant"] == variant
        if game == "public_goods":
            assert main([*argv, "--variant", "99", "--out", str(tmp_path / "99")]) == 2
            assert "prompt_variant: 99 is beyond" in capsys.readouterr().err
    # one framing per variant, the same for every item, and not the same in both
    base, other = set(seen["0"]), set(seen["1"])
    assert len(base) == 1 and len(other) == 1 and base != other
    if game == "public_goods":  # a game without a system text of its own: the generic preamble
        assert base.pop().startswith(GENERIC_VARIANTS[0][0])
        assert other.pop().startswith(GENERIC_VARIANTS[1][0])
    if game == "port_of_mars":  # the rules every player reads, in both wordings' framing
        assert "How the game works" in base.pop() and "How the game works" in other.pop()


def test_command_errors(tmp_path, llm_env, capsys):  # noqa: F811
    assert main(["comprehension", "--llm", "nosuch:x", "--out", str(tmp_path)]) == 2
    assert main(["comprehension", "--llm", "local", "--items", "0"]) == 2
    url = "openai:m@http://127.0.0.1:9/v1"
    assert main(["comprehension", "--llm", url, "--game", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--items: must be at least 1" in err and "'nosuch' has no comprehension battery" in err


# -- the embedded model --------------------------------------------------------------------------


@needs_local
def test_the_embedded_model_end_to_end(tmp_path, llm_env, capsys):  # noqa: F811
    argv = ["comprehension", "--llm", "local", "--game", "public_goods", "--items", "2"]
    argv += ["--answer-mode", "native", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    print(out)
    (row,) = [r for r in table_rows(tmp_path / "run") if r["skill"] == "all"]
    assert row["items"] == "2"  # the accuracy is whatever it is: a plumbing model
    assert int(row["correct"]) + int(row["malformed"]) <= 2
    assert "| public_goods | **all** | 2 |" in out


def test_a_rejected_key_or_a_budget_stops_with_one_line_and_the_record_saved(
    tmp_path,
    llm_env,  # noqa: F811
    capsys,
):
    """A provider that rejects the key, or the budget reached, stops the battery (exit 3, one
    ``stopped:`` line): the calls made so far are in the run's record."""
    import pandas as pd
    from llm_servers.wire import Faults

    items = items_for("public_goods", n=4, seed=1)
    argv = ["comprehension", "--game", "public_goods", "--items", "4", "--seed", "1"]
    argv += ["--answer-mode", "tags"]
    with WireServer(Faults(always="unauthorized")) as server:
        out = tmp_path / "rejected"
        assert main([*argv, "--llm", f"openai:m@{server.url}/v1", "--out", str(out)]) == 3
        sent = server.state.requests
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("stopped: ")], err
    assert "HTTP 401" in err
    calls = pd.read_parquet(out / "llm_calls.parquet")
    assert sent >= 1 and len(calls) == sent and (calls.http_status == 401).all()

    with WireServer(responder=oracle({it.question: it for it in items})) as server:
        out = tmp_path / "budget"
        budget = ["--llm", f"openai:m@{server.url}/v1", "--out", str(out), "--max-calls", "2"]
        code = main([*argv, *budget])
        sent = server.state.requests
    err = capsys.readouterr().err
    assert code == 3, err
    assert "stopped: " in err and sent == 2
    assert len(pd.read_parquet(out / "llm_calls.parquet")) == 2
