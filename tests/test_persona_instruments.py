"""The instruments beyond the SVO slider (cultural orientation, prosociality), the targets of
Port of Mars's cultural groups and trait sets and of the fishery's dispositions, the overlap
flags, the stored result per (model, game) and the run guard's ``require_persona_check``.

The numbers come from a loopback server that answers every item as the persona in its system
prompt would if it were exactly what its targets say (a known answer to get back), or that
always takes the first option (a position-biased model: what the instruments must not mistake
for any persona)."""

from __future__ import annotations

import json
import re
from functools import cache

import pytest
from llm_fixtures import llm_env  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply
from llm_servers.wire import WireServer
from test_persona_check import answers_for

from mesa_dilemmas.cli import main
from mesa_dilemmas.instruments import (
    INSTRUMENTS,
    PersonaCase,
    Target,
    load_instrument,
    persona_cases,
    target_window,
)
from mesa_dilemmas.instruments.culture import HIERARCHY, HIERARCHY_AXIS, INDIVIDUALISM
from mesa_dilemmas.instruments.culture import INDIVIDUALISM_AXIS as IND
from mesa_dilemmas.instruments.persona_check import check, flag_overlaps, store_results
from mesa_dilemmas.instruments.prosociality import DILEMMAS, INSTRUMENT, options_of
from mesa_dilemmas.llm import LLMSettings
from mesa_dilemmas.llm.guard import LLMConfigError, RunGuard, stored_persona_check

# -- the instruments ------------------------------------------------------------------------


def test_the_culture_axes_score_keyed_answers():
    for axis, statements in ((IND, INDIVIDUALISM), (HIERARCHY_AXIS, HIERARCHY)):
        items = axis.items()
        assert len(items) == 6 and sum(k for _, k in statements) == 0  # balanced keying
        pole = ["strongly agree" if k > 0 else "strongly disagree" for _, k in statements]
        other = ["strongly disagree" if k > 0 else "strongly agree" for _, k in statements]
        assert axis.score(pole) == 2.0 and axis.category(2.0) == axis.positive
        assert axis.score(other) == -2.0 and axis.category(-2.0) == axis.negative
        # the same answer to every statement (acquiescence, position bias) measures 0: mixed
        for option in items[0].options:
            assert axis.score([option] * 6) == 0.0
        assert axis.category(0.0) == "mixed" and axis.category(0.3) == axis.positive
        with pytest.raises(ValueError):
            axis.score(pole[:5])


def test_the_prosociality_index_counts_prosocial_choices():
    items = INSTRUMENT.items()
    assert [it.options for it in items] == [options_of(i) for i in range(1, 9)]
    assert [it.options[0] == d[1] for it, d in zip(items, DILEMMAS, strict=True)] == [
        True,
        False,
    ] * 4
    assert INSTRUMENT.score([d[1] for d in DILEMMAS]) == 1.0
    assert INSTRUMENT.score([d[2] for d in DILEMMAS]) == 0.0
    # always the first option listed (or always the last): half prosocial, mixed
    assert INSTRUMENT.score([it.options[0] for it in items]) == 0.5
    assert INSTRUMENT.score([it.options[1] for it in items]) == 0.5
    assert INSTRUMENT.category(0.5) == "mixed"
    assert INSTRUMENT.category(0.75) == "prosocial" and INSTRUMENT.category(0.25) == "proself"


def test_targets_are_values_or_categories_with_windows():
    svo = load_instrument("svo_slider")
    assert target_window(svo, Target(value=30.0)) == (15.0, 45.0)
    assert target_window(svo, Target(value=30.0, tolerance=5)) == (25.0, 35.0)
    assert target_window(svo, Target(category="prosocial")) == (22.45, 57.15)
    assert target_window(IND, Target(category="communitarian")) == (-2.0, -0.25)
    with pytest.raises(ValueError, match="unknown category 'x'"):
        target_window(IND, Target(category="x"))
    with pytest.raises(ValueError):
        Target()
    assert set(INSTRUMENTS) >= {"culture_individualism", "culture_hierarchy", "prosociality"}


def test_the_hooks_declare_the_bundled_personas():
    pom = {c.label: c for c in persona_cases("port_of_mars")}
    hi = pom["hierarchical-individualist"]
    assert hi.target("culture_individualism").category == "individualist"
    assert hi.target("culture_hierarchy").category == "hierarchical"
    assert hi.target("svo_slider").category == "individualistic"
    ec = pom["egalitarian-communitarian"]
    assert (
        ec.target("culture_individualism").category,
        ec.target("culture_hierarchy").category,
    ) == (
        "communitarian",
        "egalitarian",
    )
    assert pom["cooperative"].target("prosociality").category == "prosocial"
    assert pom["selfish"].target("svo_slider").category == "competitive"
    assert "selfish, uncooperative" in pom["selfish"].prompt
    fish = {c.label: c for c in persona_cases("fishery")}
    assert fish["altruistic"].target("prosociality").category == "prosocial"
    assert fish["selfish"].target("prosociality").category == "proself"
    assert fish["general"].targets == {} and fish["general"].prompt == ""
    assert fish["selfish"].prompt == "You care mainly about your own payoff."


# -- scripted respondents --------------------------------------------------------------------

_OPTION = re.compile(r"^- (.+)$", re.MULTILINE)
SVO_ANGLE = {"competitive": -90.0, "individualistic": 0.0, "prosocial": 40.0, "altruistic": 90.0}


@cache
def profiles() -> dict[str, dict[str, Target]]:
    """Each bundled persona's words -> its targets."""
    cases = persona_cases("port_of_mars") + persona_cases("fishery")
    return {c.prompt: {k: c.target(k) for k in c.targets} for c in cases if c.prompt}


def faithful_answer(system: str, question: str) -> str:
    """The option the persona of ``system`` would take if it were exactly its targets."""
    prompt = max((p for p in profiles() if p in system), key=len)
    targets = profiles()[prompt]
    options = _OPTION.findall(question)
    if m := re.search(r'statement \d of 6.*?"(.+?)"', question, re.S):
        statement = m.group(1)
        for axis, statements in ((IND, INDIVIDUALISM), (HIERARCHY_AXIS, HIERARCHY)):
            keys = dict(statements)
            if statement in keys:
                towards = targets[axis.name].category == axis.positive
                agree = (keys[statement] > 0) == towards
                return "strongly agree" if agree else "strongly disagree"
    if m := re.search(r"choice (\d) of 8", question):
        _, pro, self_ = DILEMMAS[int(m.group(1)) - 1]
        return pro if targets["prosociality"].category == "prosocial" else self_
    t = targets["svo_slider"]
    angle = t.value if t.value is not None else SVO_ANGLE[t.category]
    from mesa_dilemmas.instruments.svo_slider import ITEMS, allocation_of

    allocations = [allocation_of(o) for o in options[:9]]
    item = [list(it) for it in ITEMS].index(allocations)
    return options[answers_for(angle)[item]]


def reply(req: NormalizedRequest, answer: str) -> Reply:
    if req.schema is not None:
        data = {"reasoning": "As myself.", "answer": answer}
        return Reply(json.dumps(data), data)
    return Reply(f"As myself. <answer>{answer}</answer>")


def faithful(req: NormalizedRequest) -> Reply:
    question = next(text for role, text in req.messages if role == "user")
    return reply(req, faithful_answer(req.system, question))


def first_option(req: NormalizedRequest) -> Reply:
    question = next(text for role, text in req.messages if role == "user")
    return reply(req, _OPTION.findall(question)[0])


def test_cultural_groups_and_trait_sets_measure_what_their_words_say(tmp_path, llm_env):  # noqa: F811
    wanted = ("hierarchical-individualist", "egalitarian-communitarian", "cooperative", "selfish")
    cases = [c for c in persona_cases("port_of_mars") if c.label in wanted]
    settings = LLMSettings.from_table({"answer_mode": "tags"})
    with WireServer(responder=faithful) as server:
        # 5 samples of a deterministic respondent (a verdict needs 30: the fishery test has them)
        rows = check(f"openai:m@{server.url}/v1", cases, samples=5, settings=settings)
        assert server.state.requests == 5 * (2 * 18 + 2 * 14)
    got = {(r["persona"], r["instrument"]): r for r in rows}
    assert len(got) == 10 and all(r["verdict"] == "pass (n<30)" for r in rows), rows
    assert got[("hierarchical-individualist", "culture_individualism")]["mean"] == 2.0
    assert got[("egalitarian-communitarian", "culture_hierarchy")]["mean"] == -2.0
    assert got[("cooperative", "prosociality")]["mean"] == 1.0
    assert got[("selfish", "prosociality")]["mean"] == 0.0
    assert got[("cooperative", "svo_slider")]["measured_category"] == "altruistic"
    assert got[("selfish", "svo_slider")]["mean"] == pytest.approx(-16.26, abs=0.01)
    # different categories, disjoint windows, separated answers: nothing flagged
    assert not any(r["window_overlaps"] or r["ci_overlaps"] for r in rows)


def test_a_position_biased_model_fails_and_is_flagged(tmp_path, llm_env):  # noqa: F811
    cases = [c for c in persona_cases("port_of_mars") if c.label in ("cooperative", "selfish")]
    cases += [
        PersonaCase("port_of_mars", f"svo{a}", f"Your SVO angle is {a}.", {"svo_slider": a})
        for a in (15, 30)
    ]
    settings = LLMSettings.from_table({"answer_mode": "tags"})
    with WireServer(responder=first_option) as server:
        rows = check(f"openai:m@{server.url}/v1", cases, samples=3, settings=settings)
    got = {(r["persona"], r["instrument"]): r for r in rows}
    for label in ("cooperative", "selfish"):
        row = got[(label, "prosociality")]
        assert row["mean"] == 0.5 and row["measured_category"] == "mixed"
        assert row["verdict"].startswith("fail") and row["first_option_share"] == 1.0
    # both measure the same: the battery does not separate them on this model
    assert got[("cooperative", "prosociality")]["ci_overlaps"] == "selfish"
    assert got[("cooperative", "prosociality")]["window_overlaps"] == ""
    # the first SVO options measure 30.47 degrees: prosocial, neither altruistic nor competitive
    assert got[("cooperative", "svo_slider")]["mean"] == pytest.approx(30.47, abs=0.01)
    assert got[("selfish", "svo_slider")]["ci_overlaps"] == "cooperative"
    # svo15 passes in [0, 30], svo30 in [15, 45]; both measured 30.47 (svo30 passes, svo15 not)
    assert got[("svo15", "svo_slider")]["verdict"].startswith("fail")
    assert got[("svo30", "svo_slider")]["verdict"].startswith("pass")
    assert got[("svo15", "svo_slider")]["window_overlaps"] == "svo30"
    assert got[("svo15", "svo_slider")]["ci_overlaps"] == "svo30"  # not the category personas
    flagged = flag_overlaps([dict(r, window_overlaps="", ci_overlaps="") for r in rows])
    assert ("port_of_mars", "prosociality", "cooperative", "selfish", "measured") in flagged
    assert ("port_of_mars", "svo_slider", "svo15", "svo30", "targets+measured") in flagged


def test_overlapping_value_windows_are_flagged():
    rows = [
        {
            "game": "g",
            "instrument": "svo_slider",
            "persona": f"svo{a}",
            "target": float(a),
            "pass_low": a - 15.0,
            "pass_high": a + 15.0,
            "ci_low": m - 1.0,
            "ci_high": m + 1.0,
            "window_overlaps": "",
            "ci_overlaps": "",
        }
        for a, m in ((0, 0.0), (15, 14.0), (60, 59.0))
    ]
    flagged = flag_overlaps(rows)
    assert flagged == [("g", "svo_slider", "svo0", "svo15", "targets")]
    assert rows[0]["window_overlaps"] == "svo15" and rows[2]["window_overlaps"] == ""


# -- the command, the stored result and the run guard ----------------------------------------


def test_fishery_check_is_stored_and_gates_runs(tmp_path, llm_env, capsys):  # noqa: F811
    settings = LLMSettings.from_table({"require_persona_check": True})
    with WireServer(responder=faithful) as server:
        spec = f"openai:m@{server.url}/v1"
        guard = RunGuard.configure([spec], {"require_persona_check": True}, game="fishery")
        with pytest.raises(LLMConfigError) as missing:
            guard.preflight()
        assert str(missing.value) == (
            "llm.require_persona_check: openai:m has no persona check for fishery; "
            f"run: mesa-dilemmas personas check --llm {spec} --game fishery"
        )
        argv = ["personas", "check", "--llm", spec, "--game", "fishery"]
        assert main([*argv, "--out", str(tmp_path / "a")]) == 0
        requests = server.state.requests
        assert requests - 2 * 30 * 8 in (0, 1)  # 1: the server's structured-output probe
        out = capsys.readouterr().out
        assert "stored: openai:m / fishery: passed" in out
        assert main([*argv, "--out", str(tmp_path / "b")]) == 0
        assert server.state.requests == requests  # a rerun is answered from the cache
        assert "llm: 0 provider calls, 480 from the cache" in capsys.readouterr().out
        guard.preflight()  # passed: the run may start
        # another game of the same model has no check
        with pytest.raises(LLMConfigError, match="openai:m has no persona check for port_of_mars"):
            RunGuard.configure(
                [spec], {"require_persona_check": True}, game="port_of_mars"
            ).preflight()
        # without the setting nothing is asked
        RunGuard.configure([spec], {}, game="port_of_mars").preflight()
    record = stored_persona_check(settings, "openai:m", "fishery")
    assert record["passed"] and record["expected"] == [
        "altruistic/prosociality",
        "selfish/prosociality",
    ]
    md = (tmp_path / "a" / "persona_check.md").read_text()
    assert "| fishery/altruistic | prosociality | prosocial | [0.65, 1.00] | 1.00 |" in md
    table = json.loads((tmp_path / "a" / "persona_check.json").read_text())
    assert [(r["persona"], r["verdict"], r["mean"]) for r in table["rows"]] == [
        ("altruistic", "pass", 1.0),
        ("selfish", "pass", 0.0),
    ]
    print(md)


def test_a_failed_check_stops_the_run(tmp_path, llm_env):  # noqa: F811
    settings = LLMSettings.from_table({"answer_mode": "tags"})
    cases = persona_cases("fishery")
    with WireServer(responder=first_option) as server:
        spec = f"openai:m@{server.url}/v1"
        rows = check(spec, cases, samples=3, settings=settings)
    store_results("openai:m", rows, settings)
    record = stored_persona_check(settings, "openai:m", "fishery")
    assert not record["passed"]
    assert "0 of 2 rows passed" in record["why"]
    guard = RunGuard.configure([spec], {"require_persona_check": True}, game="fishery")
    with pytest.raises(LLMConfigError) as failed:
        guard.preflight()
    message = str(failed.value)
    assert message.startswith("llm.require_persona_check: openai:m did not pass its persona check")
    assert "for fishery" in message and "\n" not in message
    # a check of one persona that passes updates its row, the other still fails
    with WireServer(responder=faithful) as server:
        spec = f"openai:m@{server.url}/v1"
        one = [c for c in cases if c.label == "altruistic"]
        store_results("openai:m", check(spec, one, samples=30, settings=settings), settings)
    record = stored_persona_check(settings, "openai:m", "fishery")
    assert not record["passed"] and record["why"].endswith("failed: selfish/prosociality")
