"""The persona manipulation check: the SVO slider measure's items and angle, the check run through
a loopback server whose scripted answers encode a known angle, the response cache, invalid
answers, the command, and one tiny run of the embedded model."""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
from functools import cache

import numpy as np
import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply
from llm_servers.wire import WireServer

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.port_of_mars.persona import svo_category
from mesa_dilemmas.dilemmas.port_of_mars.personas import svo_persona
from mesa_dilemmas.dilemmas.port_of_mars.text import persona_text
from mesa_dilemmas.instruments import PersonaCase, persona_cases
from mesa_dilemmas.instruments.persona_check import check
from mesa_dilemmas.instruments.svo_slider import (
    INSTRUMENT,
    ITEMS,
    allocation_of,
    angle,
    category,
    measure,
)
from mesa_dilemmas.llm import LLMSettings, session

# -- the instrument ------------------------------------------------------------------------

#: the six primary items as printed in Murphy, Ackermann & Handgraaf (2011): (self row, other row)
PUBLISHED = [
    ([85] * 9, [85, 76, 68, 59, 50, 41, 33, 24, 15]),
    ([85, 87, 89, 91, 93, 94, 96, 98, 100], [15, 19, 24, 28, 33, 37, 41, 46, 50]),
    ([50, 54, 59, 63, 68, 72, 76, 81, 85], [100, 98, 96, 94, 93, 91, 89, 87, 85]),
    ([50, 54, 59, 63, 68, 72, 76, 81, 85], [100, 89, 79, 68, 58, 47, 36, 26, 15]),
    ([100, 94, 88, 81, 75, 69, 63, 56, 50], [50, 56, 63, 69, 75, 81, 88, 94, 100]),
    ([100, 98, 96, 94, 93, 91, 89, 87, 85], [50, 54, 59, 63, 68, 72, 76, 81, 85]),
]


def test_the_items_are_the_published_ones():
    assert [([a[0] for a in it], [a[1] for a in it]) for it in ITEMS] == PUBLISHED


def pick(key):
    """Each item's allocation maximising ``key`` (ties: the first in the key's order)."""
    return [max(item, key=key) for item in ITEMS]


def test_the_angle_of_the_reference_choosers():
    # computed from the item table: the prototypes of the published measure
    altruist = pick(lambda a: (a[1], a[0]))
    inequality_averse = [min(it, key=lambda a: (abs(a[0] - a[1]), -(a[0] + a[1]))) for it in ITEMS]
    individualist = pick(lambda a: (a[0], -a[1]))
    competitor = pick(lambda a: (a[0] - a[1], a[0]))
    assert angle(altruist) == pytest.approx(61.39, abs=0.01)
    assert angle(inequality_averse) == pytest.approx(37.48, abs=0.01)
    assert angle(individualist) == pytest.approx(-7.82, abs=0.01)
    assert angle(competitor) == pytest.approx(-16.26, abs=0.01)
    # all on the first endpoints (a respondent who always takes the first option listed):
    # means (78.3, 66.7), 30.47 degrees -- a prosocial angle from position bias alone
    first = [it[0] for it in ITEMS]
    assert angle(first) == pytest.approx(math.degrees(math.atan2(400 / 6 - 50, 470 / 6 - 50)))
    assert angle(first) == pytest.approx(30.47, abs=0.01)
    assert angle([it[-1] for it in ITEMS]) == pytest.approx(14.74, abs=0.01)
    # all-self (mean other 50) is 0 degrees; equal split 45
    assert angle([(90, 50)] * 6) == 0.0 and angle([(75, 75)] * 6) == pytest.approx(45.0)
    # a linear-utility chooser (cos 30 * self + sin 30 * other) does not measure 30 degrees
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    assert angle(pick(lambda a: c * a[0] + s * a[1])) == pytest.approx(37.09, abs=0.01)
    with pytest.raises(ValueError):
        angle(first[:5])
    # the whole range: no choice of options leaves [-16.26, 61.39]
    lo, hi = reachable()
    assert lo == pytest.approx(-16.26, abs=0.01) and hi == pytest.approx(61.39, abs=0.01)
    assert INSTRUMENT.reachable == pytest.approx((lo, hi), abs=0.01)


def test_categories_are_the_games_boundaries():
    for a in np.arange(-40, 80, 0.01):
        assert category(float(a)) == svo_category(float(a))


def test_options_name_their_allocation():
    for i, item in enumerate(INSTRUMENT.items()):
        assert [allocation_of(o) for o in item.options] == list(ITEMS[i])
        assert all(o in item.text for o in item.options)
    assert INSTRUMENT.score([item.options[0] for item in INSTRUMENT.items()]) == angle(
        [it[0] for it in ITEMS]
    )


def test_the_game_hook_gives_the_games_own_words():
    cases = [c for c in persona_cases("port_of_mars") if c.label.startswith("svo")]
    angles = [c.target("svo_slider").value for c in cases]
    assert angles == [-30, -15, 0, 15, 30, 60]
    for c, a in zip(cases, angles, strict=True):
        assert c.prompt == persona_text(svo_persona(a))
        assert c.label == f"svo{a:g}"


# -- a scripted respondent ------------------------------------------------------------------


@cache
def combos() -> tuple[np.ndarray, np.ndarray]:
    """Every way to answer the six items: option indices and the angle of each."""
    idx = np.array(list(itertools.product(range(9), repeat=6)))
    arr = np.array(ITEMS, dtype=float)  # (6, 9, 2)
    chosen = arr[np.arange(6), idx]  # (n, 6, 2)
    means = chosen.mean(axis=1)
    return idx, np.degrees(np.arctan2(means[:, 1] - 50, means[:, 0] - 50))


def reachable() -> tuple[float, float]:
    _, angles = combos()
    return float(angles.min()), float(angles.max())


@cache
def answers_for(target: float) -> tuple[int, ...]:
    """The option of each item whose six answers together measure closest to ``target``."""
    idx, angles = combos()
    return tuple(int(i) for i in idx[int(np.argmin(np.abs(angles - target)))])


_ANGLE = re.compile(r"Your SVO angle is (-?\d+(?:\.\d+)?) degrees")
_OPTION = re.compile(r"you get \d+ and the other gets \d+")


def svo_responder(req: NormalizedRequest) -> Reply:
    """Answers an SVO slider item as a chooser of the angle its system prompt states would."""
    target = float(_ANGLE.search(req.system).group(1))
    first_user = next(text for role, text in req.messages if role == "user")
    options = _OPTION.findall(first_user)[:9]
    allocations = [allocation_of(o) for o in options]
    item = [list(it) for it in ITEMS].index(allocations)
    answer = options[answers_for(target)[item]]
    if req.schema is not None:
        data = {"reasoning": "I weigh both.", "answer": answer}
        return Reply(json.dumps(data), data)
    return Reply(f"I weigh both. <answer>{answer}</answer>")


def cases_for(*angles: float) -> list[PersonaCase]:
    return [
        PersonaCase("port_of_mars", f"svo{a:g}", persona_text(svo_persona(a)), {"svo_slider": a})
        for a in angles
    ]


@pytest.mark.parametrize("mode", ["native", "tags"])
def test_a_scripted_chooser_gets_its_angle_back(tmp_path, llm_env, mode):  # noqa: F811
    settings = LLMSettings.from_table({"answer_mode": mode})
    with WireServer(responder=svo_responder) as server:
        spec = f"openai:m@{server.url}/v1"
        session.start_run(settings, tmp_path / "one")
        try:
            rows = measure(spec, cases_for(30, -10), samples=30, settings=settings)
        finally:
            first = session.finish_run()
        requests = server.state.requests
        assert first["provider_calls"] == 2 * 30 * 6
        assert requests - first["provider_calls"] <= 1  # native: the server's schema probe
        for row, target in zip(rows, (30, -10), strict=True):
            assert abs(row["mean"] - target) <= 2.0, row
            assert row["ci_low"] <= row["mean"] <= row["ci_high"]
            assert row["verdict"] == "pass" and row["valid_samples"] == 30
            assert row["measured_category"] == category(target)
            assert row["paid_calls"] == 180 and row["cached_calls"] == 0
            chosen = answers_for(target)
            assert row["first_option_share"] == pytest.approx(chosen.count(0) / 6)
        # a rerun is answered from the cache: no request reaches the server
        session.start_run(settings, tmp_path / "two")
        try:
            again = measure(spec, cases_for(30, -10), samples=30, settings=settings)
        finally:
            second = session.finish_run()
        assert server.state.requests == requests and second["provider_calls"] == 0
        assert [r["mean"] for r in again] == [r["mean"] for r in rows]
        assert all(r["paid_calls"] == 0 and r["cached_calls"] == 180 for r in again)


def is_reask(req: NormalizedRequest) -> bool:
    return any(role == "assistant" for role, _ in req.messages)


def test_invalid_answers_are_asked_again_and_counted_never_filled_in(tmp_path, llm_env):  # noqa: F811
    def flaky(req: NormalizedRequest) -> Reply:
        first_user = next(text for role, text in req.messages if role == "user")
        item = int(re.search(r"question (\d) of 6", first_user).group(1))
        if item == 2 and not is_reask(req):  # wrong once, then right
            return Reply("I choose the second one. <answer>the second one</answer>")
        if item == 4 and "-10 degrees" in req.system:  # never right
            return Reply("<answer>you get 1000 and the other gets 0</answer>")
        return svo_responder(req)

    settings = LLMSettings.from_table({"answer_mode": "tags", "answer_retries": 2})
    details: list[dict] = []
    with WireServer(responder=flaky) as server:
        rows = check(
            f"openai:m@{server.url}/v1",
            cases_for(30, -10),
            samples=3,
            settings=settings,
            details=details,
        )
        # per sample: 6 items + 1 re-ask of item 2; for -10 also 2 re-asks of item 4
        assert server.state.requests == 3 * 7 + 3 * 9
    ok, broken = rows
    assert ok["reasks"] == 3 and ok["invalid_items"] == 0 and ok["valid_samples"] == 3
    assert abs(ok["mean"] - 30) <= 2
    assert broken["invalid_items"] == 3 and broken["valid_samples"] == 0
    assert broken["verdict"] == "no valid sample" and math.isnan(broken["mean"])
    assert broken["reasks"] == 3 * (1 + 2)
    bad = [d for d in details if d["persona"] == "svo-10"]
    assert all(d["value"] is None and d["answers"][3] is None for d in bad)
    assert all(d["failures"] == ["invalid"] for d in bad)


# -- the command ----------------------------------------------------------------------------


def test_the_command_writes_the_table_and_reruns_free(tmp_path, llm_env, capsys):  # noqa: F811
    svo = ["svo-30", "svo-15", "svo0", "svo15", "svo30", "svo60"]
    with WireServer(responder=svo_responder) as server:
        argv = ["personas", "check", "--llm", f"openai:m@{server.url}/v1", "--game", "port_of_mars"]
        argv += [x for label in svo for x in ("--persona", label)]
        assert main([*argv, "--out", str(tmp_path / "a")]) == 0
        requests = server.state.requests
        assert requests - 6 * 30 * 6 in (0, 1)  # 1: the server's structured-output probe
        first = capsys.readouterr().out
        assert main([*argv, "--out", str(tmp_path / "b")]) == 0
        assert server.state.requests == requests
        second = capsys.readouterr().out
    assert "llm: 0 provider calls, 1080 from the cache" in second
    assert "llm: 1080 provider calls" in first
    md = (tmp_path / "a" / "persona_check.md").read_text()
    table = (tmp_path / "a" / "persona_check.csv").read_text().splitlines()
    assert len(table) == 7 and table[0].startswith("game,persona,instrument,target")
    lines = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if "svo" in line}
    # -30 lies beyond the measure's end (-16.26): the nearest a chooser can come is 13.7 off
    assert "| pass |" in lines["port_of_mars/svo-30"] and "-16.3" in lines["port_of_mars/svo-30"]
    assert "svo-30: target beyond the instrument's range [-16.26, 61.39]" in md
    for label in ("svo-15", "svo0", "svo15", "svo30", "svo60"):
        assert "| pass |" in lines[f"port_of_mars/{label}"]
    print(md)


def test_command_errors(tmp_path, llm_env, capsys):  # noqa: F811
    assert main(["personas", "check", "--llm", "nosuch:x", "--out", str(tmp_path)]) == 2
    assert main(["personas", "check", "--llm", "local", "--samples", "0"]) == 2
    assert (
        main(
            [
                "personas",
                "check",
                "--llm",
                "openai:m@http://127.0.0.1:9/v1",
                "--persona",
                "svo99",
                "--out",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert "unknown svo99" in capsys.readouterr().err
    assert main(["personas", "list"]) == 0
    assert "port_of_mars/svo30" in capsys.readouterr().out


# -- the embedded model ---------------------------------------------------------------------


@needs_local
def test_the_embedded_model_end_to_end(tmp_path, llm_env, capsys):  # noqa: F811
    argv = ["personas", "check", "--llm", "local", "--persona", "svo30", "--samples", "1"]
    argv += ["--answer-mode", "native", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "svo30" in line)
    print(row)
    assert "(n<30)" in row or "no valid sample" in row  # one sample is no verdict
    with (tmp_path / "run" / "persona_check.csv").open() as f:
        (values,) = list(csv.DictReader(f))
    assert int(values["samples"]) == 1 and int(values["paid_calls"]) >= 6
    # the fallback count is what it is: every item is either answered or counted invalid
    assert int(values["valid_samples"]) + (int(values["invalid_items"]) > 0) == 1
