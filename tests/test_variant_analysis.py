"""``analyse variants``: a prompt-variant design run end to end on a scripted OpenAI-compatible
loopback server whose answers are known (an effort set by the wording and the model, plus a
little per-request noise), so the ANOVA, the shares of variance, the per-variant means and
"holds in x of k variants" can be checked against numbers computed here by hand; one tiny run
on the embedded model."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from llm_fixtures import llm_env, needs_local  # noqa: F401
from llm_servers.responder import NormalizedRequest, Reply, instance, scripted_reply
from llm_servers.wire import WireServer

from mesa_dilemmas.analysis import variants as av
from mesa_dilemmas.llm.prompts import load_template_dir
from mesa_dilemmas.scenarios.runner import run_scenario

REPO = Path(__file__).resolve().parents[1]
FISHERY_PROMPTS = REPO / "mesa_dilemmas/dilemmas/fishery/prompts"
SCENARIO = "fishery/prompt_variants"
VARIANTS = (0, 1, 2)
REPLICATIONS = 3


def wording_of() -> dict[str, int]:
    """The fishery's system text of each wording -> its variant index."""
    effort = load_template_dir(str(FISHERY_PROMPTS), "fishery")["fishery.effort"]
    return {effort.variant(v).system: v for v in range(effort.k)}


def expected_effort(variant: int, model: str) -> float:
    """What the scripted models answer to an effort question: model b fishes 0.3 harder than
    model a in every wording but variant 2 (the contrast holds in 2 of the 3 variants)."""
    return 0.2 + 0.1 * variant + (0.3 if model == "b" and variant != 2 else 0.0)


def make_responder(systems: dict[str, int]):
    def respond(req: NormalizedRequest) -> Reply:
        answer_schema = (req.schema or {}).get("properties", {}).get("answer", {})
        if answer_schema.get("type") != "number":  # punish, norms, vote: any legal answer
            return scripted_reply(req)
        noise = req.rng().uniform(-0.04, 0.04)  # fixed by the request (its seed: the run's)
        effort = round(expected_effort(systems[req.system], req.model) + noise, 3)
        data = {**instance(req.schema, req.rng()), "answer": effort}
        return Reply(json.dumps(data), data)

    return respond


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    """The bundled variant scenario, three wordings x two scripted models x 3 replications."""
    import os

    from mesa_dilemmas.llm import session

    tmp = tmp_path_factory.mktemp("variants")
    old = os.environ.get("MESA_DILEMMAS_CACHE_DIR")
    os.environ["MESA_DILEMMAS_CACHE_DIR"] = str(tmp / "cache")
    try:
        with session.use(None), WireServer(responder=make_responder(wording_of())) as server:
            url = f"{server.url}/v1"
            out = run_scenario(
                SCENARIO,
                out_dir=tmp / "run",
                overrides=[
                    f"grid.llm.prompt_variant={list(VARIANTS)}",
                    f'grid.llm=["openai:a@{url}", "openai:b@{url}"]',
                    "params.llm_agents=2",
                    "params.n_agents=2",
                    "max_steps=1",
                    f"replications={REPLICATIONS}",
                ],
                progress=False,
            )
    finally:
        if old is None:
            os.environ.pop("MESA_DILEMMAS_CACHE_DIR", None)
        else:
            os.environ["MESA_DILEMMAS_CACHE_DIR"] = old
    return out.out_dir


def test_the_run_record_names_the_variant_of_every_call(scripted_run):
    with sqlite3.connect(scripted_run / "llm_calls.sqlite") as db:
        calls = dict(db.execute("SELECT variant, COUNT(*) FROM calls GROUP BY variant"))
        decisions = dict(db.execute("SELECT variant, COUNT(*) FROM decisions GROUP BY variant"))
        prompts = db.execute("SELECT variant, request FROM calls WHERE kind = 'fishery.effort'")
        systems = wording_of()
        for variant, request in prompts:
            system = json.loads(request)["messages"][0]["content"]
            assert systems[system] == variant  # the recorded variant is the one sent
    assert set(calls) == set(VARIANTS) and set(decisions) == set(VARIANTS)
    assert len(set(calls.values())) == 1  # the same number of calls in every wording
    for table, counts in (("calls", calls), ("decisions", decisions)):  # and the tables
        frame = pd.read_parquet(scripted_run / f"llm_{table}.parquet")
        assert frame["variant"].value_counts().to_dict() == counts, table


def test_the_outcome_follows_the_known_answers(scripted_run):
    config, runs = av.read_run(scripted_run)
    frame = av.factor_frame(config, runs)
    assert sorted(frame["prompt_variant"].unique()) == list(VARIANTS)
    assert len(frame) == len(VARIANTS) * 2 * REPLICATIONS
    for row in frame.itertuples():
        model = row.model.split(":")[1].split("@")[0]
        assert abs(row.mean_effort - expected_effort(row.prompt_variant, model)) <= 0.04 + 1e-9


def test_the_anova_and_shares_match_a_hand_computation(scripted_run):
    config, runs = av.read_run(scripted_run)
    report = av.analyse(config, runs, "mean_effort")
    assert report.factors == ["model", "prompt_variant", "seed"] and report.k == len(VARIANTS)
    frame = av.factor_frame(config, runs)
    y = frame["mean_effort"].to_numpy(float)
    total = ((y - y.mean()) ** 2).sum()
    # a balanced design: each main effect's type-II SS is its between-level SS
    for factor in ("model", "prompt_variant", "seed"):
        means = frame.groupby(frame[factor].astype(str))["mean_effort"].agg(["mean", "size"])
        ss = float((means["size"] * (means["mean"] - y.mean()) ** 2).sum())
        assert report.anova.loc[factor, "sum_sq"] == pytest.approx(ss, rel=1e-9)
        assert report.anova.loc[factor, "eta_sq"] == pytest.approx(ss / total, rel=1e-9)
    assert report.anova["eta_sq"].sum() == pytest.approx(1.0)
    for v in VARIANTS:  # the wording's means: the scripted answers, averaged over both models
        mean = (expected_effort(v, "a") + expected_effort(v, "b")) / 2
        assert report.per_variant.loc[str(v), "mean"] == pytest.approx(mean, abs=0.04)
    # the per-variant means and their t intervals
    for v in VARIANTS:
        values = frame.loc[frame["prompt_variant"] == v, "mean_effort"].to_numpy(float)
        row = report.per_variant.loc[str(v)]
        assert row["mean"] == pytest.approx(values.mean())
        half = (row["ci_high"] - row["ci_low"]) / 2
        from scipy import stats

        t = stats.t.ppf(0.975, len(values) - 1)
        assert half == pytest.approx(t * values.std(ddof=1) / np.sqrt(len(values)))


def test_the_model_contrast_holds_in_two_of_three_variants(scripted_run):
    config, runs = av.read_run(scripted_run)
    report = av.analyse(config, runs, "mean_effort")
    (name,) = report.contrasts.index
    row = report.contrasts.loc[name]
    assert name.startswith("model=openai:b@") and " vs openai:a@" in name
    assert row["holds_in"] == "2 of 3 variants"
    assert row["v0_effect"] == pytest.approx(0.3, abs=0.08)
    assert row["v2_effect"] == pytest.approx(0.0, abs=0.08) and row["v2_p"] > 0.05
    assert row["v0_p"] < 0.05 and row["v1_p"] < 0.05


def test_the_command_prints_and_writes_the_tables(scripted_run, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    av.register(parser.add_subparsers())
    args = parser.parse_args(["variants", str(scripted_run), "--out", str(tmp_path)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "outcome: survival_time" in out  # the run's first summarised metric by default
    args = parser.parse_args(
        ["variants", str(scripted_run), "--outcome", "mean_effort", "--out", str(tmp_path)]
    )
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "2 of 3 variants" in out and "prompt_variant" in out
    assert pd.read_csv(tmp_path / "variants_anova.csv", index_col=0).loc["model", "df"] == 1
    args = parser.parse_args(["variants", str(scripted_run), "--outcome", "nope"])
    assert args.func(args) == 2
    assert "--outcome: no column 'nope'" in capsys.readouterr().err
    args = parser.parse_args(["variants", str(tmp_path)])
    assert args.func(args) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_one_wording_has_no_variance_to_split():
    config = {"params": {}, "grid": {}, "llm": {"prompt_variant": 3}}
    runs = pd.DataFrame({"seed": [1, 1], "survival_time": [4.0, 5.0], "players": [None, None]})
    report = av.analyse(config, runs, "survival_time")
    assert report.factors == [] and report.k == 1 and len(report.contrasts) == 0
    assert list(report.per_variant.index) == ["3"]
    assert any("one wording" in n for n in report.notes)


@needs_local
def test_a_tiny_run_in_one_rewording_on_the_embedded_model(tmp_path, llm_env):  # noqa: F811
    """The embedded model plays a round in wording 3 (the plain one): every call is sent in
    it and recorded as it (8 calls; the scripted server above checks the numbers)."""
    out = run_scenario(
        SCENARIO,
        out_dir=tmp_path / "run",
        overrides=[
            "llm.prompt_variant=3",
            "params.llm_agents=2",
            "params.n_agents=2",
            "max_steps=1",
            "replications=1",
        ],
        progress=False,
    )
    plain = {v: s for s, v in wording_of().items()}[3]
    with sqlite3.connect(out.out_dir / "llm_calls.sqlite") as db:
        rows = db.execute("SELECT variant, request FROM calls").fetchall()
        decided = {v for (v,) in db.execute("SELECT DISTINCT variant FROM decisions")}
    assert rows and {v for v, _ in rows} == {3} and decided == {3}
    assert all(json.loads(r)["messages"][0]["content"] == plain for _, r in rows)
    config, runs = av.read_run(out.out_dir)
    report = av.analyse(config, runs, "mean_effort")
    assert report.k == 1 and list(report.per_variant.index) == ["3"]
