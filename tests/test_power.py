"""Power before paying: ``mesa-dilemmas estimate SCENARIO --power P --effect D|--effect-from``.

Replications from statsmodels for textbook cases, by simulation for survival times (checked
against the t-test's answer on normal data), read off a pilot's runs, and priced from the
fixed design's estimate on a price table given here (so the dollars do not move with
prices.toml).  The bundled LLM scenarios print (fishery llm_societies, Port of Mars
llm_communication); no test calls a model."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from cli_runner import cli_in_process

from mesa_dilemmas.scenarios import power as pw
from mesa_dilemmas.scenarios.config import load_raw, load_scenario

#: a price table for the tests: $1 per million input tokens, $4 per million output tokens
PRICES = ['llm.prices={"openai:gpt-4o" = {input = 1.0, output = 4.0}}']
SOCIETIES = ['grid.llm=["openai:gpt-4o"]', *PRICES]
MARS = ['params.llm="openai:gpt-4o"', *PRICES]


def estimate_json(capsys, scenario: str, overrides: list[str], *extra: str) -> dict:
    args = ["estimate", scenario, "--json", *extra]
    for o in overrides:
        args += ["--set", o]
    from mesa_dilemmas.cli import main

    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


# -- replications ----------------------------------------------------------------------------


def test_textbook_cases_give_statsmodels_and_cohens_answers():
    # Cohen (1988), Table 2.4.1: d = 0.5, power 0.8, two-sided 0.05 -> 64 per group
    assert pw.n_for_effect(0.5, "mean", 0.8, 0.05) == 64
    # h = 0.2 -> (1.96 + 0.8416)^2 * 2 / 0.2^2 = 392.4 -> 393 per group (normal approximation)
    assert pw.n_for_effect(0.2, "proportion", 0.8, 0.05) == 393
    # a rank test on normal outcomes needs 1 / (3/pi) more
    assert pw.n_for_effect(0.5, "survival", 0.8, 0.05) == math.ceil(64 / (3 / math.pi))
    assert pw.n_for_effect(0.0, "mean", 0.8, 0.05) is None


def test_simulated_power_agrees_with_the_t_test_on_normal_outcomes():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.5, 1.0, 20_000), rng.normal(0.0, 1.0, 20_000)
    n = pw.n_by_simulation(a, b, 0.8, 0.05, seed=1, sims=2000)
    expected = 64 / (3 / math.pi)  # Mann-Whitney's efficiency on normal data: about 67
    assert abs(n - expected) <= 0.1 * expected, n
    assert pw.n_by_simulation(a, b, 0.8, 0.05, seed=1, sims=2000) == n  # seeded: reproducible
    same = np.full(100, 50.0)
    assert pw.n_by_simulation(same, same, 0.8, 0.05) is None  # every run at the cap: no effect


def test_outcome_kinds():
    assert pw.outcome_kind([0, 1, 1, 0]) == "proportion"
    assert pw.outcome_kind([12, 50, 50, 31], cap=50) == "survival"
    assert pw.outcome_kind([12, 40, 44, 31], cap=50) == "mean"
    assert pw.outcome_kind([0.3, 0.7, 1.2]) == "mean"


def test_effect_read_from_a_pilot_run_directory(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = []
    for level, mean in ((True, 10.0), (False, 13.0)):  # d = 0.6 with sd 5
        for v in rng.normal(mean, 5.0, 40):
            rows.append({"meeting": level, "port_health": v})
    pilot = tmp_path / "pilot"
    pilot.mkdir()
    pd.DataFrame(rows).to_parquet(pilot / "runs.parquet")
    out = estimate_json(
        capsys,
        "port_of_mars/llm_communication",
        MARS,
        "--power",
        "0.8",
        "--effect-from",
        str(pilot),
        "--metric",
        "port_health",
    )
    (size,) = out["sizes"]
    runs = pd.DataFrame(rows)
    a = runs.loc[~runs.meeting, "port_health"].to_numpy()
    b = runs.loc[runs.meeting, "port_health"].to_numpy()
    from statsmodels.stats.power import TTestIndPower

    d = pw.cohen_d(a, b)
    assert size["contrast"] == "meeting=False vs True" and size["kind"] == "mean"
    assert size["effect"] == pytest.approx(d)
    assert size["replications"] == math.ceil(
        TTestIndPower().solve_power(abs(d), power=0.8, alpha=0.05)
    )


# -- contrasts -------------------------------------------------------------------------------


def test_contrasts_come_from_the_grid_and_name_the_declared_claims(monkeypatch):
    scenario, _ = load_scenario("fishery/llm_societies")
    contrasts, source = pw.contrasts_for(scenario)
    # the rich-lake claim names its contrast (LLMClaim.contrasts): only that one is sized
    assert [c.name for c in contrasts] == ["altruism_ratio=0.0 vs 1.0 at growth_rate=0.6"]
    assert source == "the 1 contrast(s) its declared claims name"
    grid = [c.name for c in pw.grid_contrasts(scenario)]
    assert len(grid) == 7  # growth rate at 3 priors + 2 priors at 2 growth rates
    claims = pw._llm_claims("fishery/llm_societies")
    monkeypatch.setattr(pw, "_llm_claims", lambda name: [replace(c, contrasts=()) for c in claims])
    every, source = pw.contrasts_for(scenario)  # claims that name none: every grid contrast
    assert [c.name for c in every] == grid
    assert "declared claim(s)" in source and "first level" in source
    one, why = pw.contrasts_for(load_scenario("port_of_mars/llm_svo")[0])
    assert one == [] and "one condition" in why


def test_contrasts_a_claim_names_are_the_ones_sized(monkeypatch):
    from types import SimpleNamespace

    claim = SimpleNamespace(
        paper="003",
        where="Fig. 6",
        statement="rich lakes: selfish priors outlast altruistic ones",
        contrasts=("altruism_ratio=0.0 vs 1.0 at growth_rate=0.6", "no such contrast"),
    )
    monkeypatch.setattr(pw, "_llm_claims", lambda name: [claim])
    contrasts, source = pw.contrasts_for(load_scenario("fishery/llm_societies")[0])
    assert [c.name for c in contrasts] == ["altruism_ratio=0.0 vs 1.0 at growth_rate=0.6"]
    assert source == "the 1 contrast(s) its declared claims name"


def test_the_rule_stand_in_seats_no_language_model():
    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.scenarios.config import validate

    for name in ("fishery/llm_societies", "port_of_mars/llm_communication"):
        raw = load_raw(name)
        model_cls = game_model(raw["game"])
        standin = pw.rule_standin(raw, model_cls)
        scenario, _ = validate(standin)
        for point in scenario.grid_points() or [{}]:
            assert model_cls.llm_specs({**scenario.params, **point}) == set(), (name, point)
        assert set(scenario.grid) <= set(raw["grid"])


# -- printed designs and dollars -------------------------------------------------------------


def test_fishery_llm_societies_prices_the_powered_design(capsys):
    fixed = estimate_json(capsys, "fishery/llm_societies", SOCIETIES)
    per_rep_in = fixed[0]["tokens_in"] / 10  # the scenario's 10 replications per cell
    per_rep_usd = fixed[0]["list_usd"] / 10
    assert fixed[0]["list_usd"] == pytest.approx(
        (fixed[0]["tokens_in"] * 1.0 + fixed[0]["tokens_out"] * 4.0) / 1e6
    )
    out = estimate_json(
        capsys, "fishery/llm_societies", SOCIETIES, "--power", "0.8", "--effect", "0.5"
    )
    assert {s["replications"] for s in out["sizes"]} == {64}  # d read for a t-test: Cohen's 64
    designs = {d["design"]: d for d in out["designs"]}
    powered = designs["fixed for 80% power"]
    assert powered["replications"] == 64
    assert powered["tokens_in"] == pytest.approx(per_rep_in * 64)
    assert powered["list_usd"] == pytest.approx(per_rep_usd * 64)
    bundled = designs["fixed as bundled (10 per cell)"]
    assert bundled["list_usd"] == pytest.approx(fixed[0]["list_usd"])
    seq = designs["sequential obf, 5 looks: at most"]
    # OBF inflates the maximum by about 2.5%, rounded up to five equal batches: 66 -> 70
    assert seq["replications"] == 70
    assert out["until"] == "decided,max=70,batch=14,alpha=0.05"
    assert designs["sequential obf, 5 looks: expected at the effect"]["replications"] < 64


def test_port_of_mars_llm_communication_prints_replications_and_dollars():
    from contextlib import redirect_stdout
    from io import StringIO

    from mesa_dilemmas.cli import main

    buf = StringIO()
    args = ["estimate", "port_of_mars/llm_communication", "--power", "0.8", "--effect", "0.2",
            "--outcome", "proportion"]  # fmt: skip
    for o in MARS:
        args += ["--set", o]
    with redirect_stdout(buf):
        assert main(args) == 0
    text = buf.getvalue()
    assert "meeting=False vs True: 393" in text
    assert "the 1 contrast(s) its declared claims name" in text and "claim 001 Sec. 4.3" in text
    rows = {x.split("  ")[0]: x.split() for x in text.splitlines() if x.startswith("fixed ")}
    bundled = rows["fixed as bundled (50 per cell)"]
    powered = rows["fixed for 80% power"]
    assert powered[4:6] == ["393", "786"]  # 393 per cell x 2 cells
    dollars = [float(x.strip("$").replace(",", "")) for x in (bundled[-2], powered[-2])]
    calls = [int(x.replace(",", "")) for x in (bundled[-5], powered[-5])]
    assert dollars[1] == pytest.approx(dollars[0] * 393 / 50, abs=0.01)  # per replication x 393
    assert calls[1] == pytest.approx(calls[0] * 393 / 50, abs=1)
    # the price table given: $1 per million input tokens, $4 per million output tokens
    tokens = [int(x.replace(",", "")) for x in powered[-4:-2]]
    assert dollars[1] == pytest.approx((tokens[0] + 4 * tokens[1]) / 1e6, abs=0.01)


def test_effect_from_rule_plays_the_stand_in_and_sizes_each_contrast(capsys):
    out = estimate_json(
        capsys,
        "fishery/llm_societies",
        [*SOCIETIES, "max_steps=20", "grid.altruism_ratio=[1.0,0.0]", "grid.growth_rate=[0.2]"],
        "--power",
        "0.8",
        "--effect-from",
        "rule",
    )
    (size,) = out["sizes"]
    assert size["contrast"] == "altruism_ratio=0.0 vs 1.0" and size["kind"] == "survival"
    assert "rule stand-in" in out["effect_source"]
    assert size["effect"] < 0 and 2 <= size["replications"] < 100


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--power", "1.5", "--effect", "0.5"], "--power: must be between 0 and 1"),
        (["--power", "0.8"], "give one of --effect D or --effect-from"),
        (["--power", "0.8", "--effect", "0.5", "--effect-from", "rule"], "give one of"),
        (["--power", "0.8", "--effect", "-1"], "--effect: must be a positive"),
        (["--power", "0.8", "--effect-from", "/no/such/run"], "not a run directory"),
    ],
)
def test_bad_power_options_fail_fast_with_one_line(extra, message):
    code, err = cli_in_process(["estimate", "fishery/llm_societies", *extra])
    assert code == 2 and message in err and err.count("\n") == 1, err
