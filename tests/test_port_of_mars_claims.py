"""Paper 001's claims: the persona parameters' provenance, the claims register (one row per
stated finding), and the judges' verdicts on runs whose answer is known."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from mesa_dilemmas.dilemmas.port_of_mars import claims as pom
from mesa_dilemmas.dilemmas.port_of_mars.personas import (
    CULTURAL_SETTINGS,
    DROPPED_OVERRIDES,
    RULE_PROVENANCE,
    SVO_PROVENANCE,
    TRAIT_SETTINGS,
    PlayerParams,
    encoded_by,
    params_for,
    provenance_rows,
    svo_params,
)

ROOT = Path(__file__).resolve().parents[1]
REGISTER = tomllib.loads(pom.REGISTER.read_text(encoding="utf-8"))
ROWS = REGISTER["claim"]
KEYS = {c.key for c in pom.CLAIMS}
SOURCES = {"persona text", "behavioural rule", "tuned"}


# -- provenance ------------------------------------------------------------------------------


def test_every_persona_parameter_names_where_it_comes_from():
    covered = {n.strip() for name in SVO_PROVENANCE for n in name.split(",")}
    fields = {f.name for f in dataclasses.fields(PlayerParams)} - {"angle"}
    assert fields <= covered, fields - covered
    settings = [*SVO_PROVENANCE.values(), *RULE_PROVENANCE.values()]
    for table in (CULTURAL_SETTINGS, TRAIT_SETTINGS):
        for values in table.values():
            assert "angle" in values
            assert set(values) - {"angle"} <= fields
            settings += values.values()
    for s in settings:
        assert s.source in SOURCES and len(s.why) > 20, s
        assert s.source != "tuned" or s.encodes, f"a tuned value must name what it encodes: {s}"


def test_the_overrides_that_only_made_table_1s_order_are_gone():
    for group, dropped in DROPPED_OVERRIDES.items():
        table = CULTURAL_SETTINGS if group in CULTURAL_SETTINGS else TRAIT_SETTINGS
        assert not set(dropped) & set(table[group]), group
    hi = params_for_group("hierarchical-individualist")
    ec = params_for_group("egalitarian-communitarian")
    assert hi.dirty_bias == svo_params(0.0).dirty_bias
    assert ec == svo_params(50.0)  # the egalitarian communitarian is its angle, nothing else
    assert not any(
        name in ("dirty_bias", "discard_dirty")
        for values in CULTURAL_SETTINGS.values()
        for name in values
    )


def params_for_group(group: str) -> PlayerParams:
    from mesa_dilemmas.dilemmas.port_of_mars.persona import CrewPersona

    return params_for(CrewPersona(cultural_group=group))


def test_what_a_value_encodes_names_real_claims_and_makes_them_by_construction():
    encoded = {k for s in [*SVO_PROVENANCE.values(), *RULE_PROVENANCE.values()] for k in s.encodes}
    assert encoded <= KEYS, encoded - KEYS
    for claim in pom.CLAIMS:
        assert tuple(claim.by_construction) == encoded_by(claim.key)
    by_construction = {c.key for c in pom.CLAIMS if c.by_construction}
    # the SVO gradients and the meeting's health effect are encoded; survival, the meeting's
    # survival effect, the dirty-card contradiction and Table 1's rankings are what emerges
    assert {"pom_health", "pom_dirty", "pom_points", "pom_communication"} <= by_construction
    emergent = {
        "pom_survival",
        "pom_comm_survival",
        "pom_comm_dirty",
        "pom_culture_dirty",
        "pom_culture_points",
        "pom_culture_health",
        "pom_lead_trend",
    }
    assert not emergent & by_construction


def test_the_docs_print_every_provenance_row():
    docs = (ROOT / "docs" / "port_of_mars.md").read_text(encoding="utf-8")
    for persona, name, value, source, why, encodes in provenance_rows():
        row = f"| {persona} | {name} | {value} | {source} | {why} | {encodes or '-'} |"
        assert row in docs, row


# -- the register --------------------------------------------------------------------------


def test_register_rows_are_complete():
    assert REGISTER["paper"] == "001"
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)) and all(i.startswith("001-") for i in ids)
    assert len(ROWS) >= 25
    for r in ROWS:
        for field in ("where", "says", "range", "names", "kind"):
            assert r.get(field), (r["id"], field)
        assert r["kind"] in {"judged", "llm", "untestable", "not_run"}, r["id"]
        if r["kind"] == "judged":
            assert r["claims"] and set(r["claims"]) <= KEYS, r["id"]
            assert "rule" in r["test"].lower(), r["id"]  # says it is a rule-ABM check
        elif r["kind"] == "llm":
            assert r["scenario"].startswith("port_of_mars/llm_") and r["test"], r["id"]
            assert all(re.fullmatch(r"[a-z]+:[\w.-]+", m) for m in r["models"]), r["id"]
            assert "gemini:gemini-1.5-flash-002" in r["models"]
        else:
            assert len(r.get("reason", "")) > 20, r["id"]


def test_every_registered_claim_and_llm_claim_has_its_row():
    judged = {k for r in ROWS if r["kind"] == "judged" for k in r["claims"]}
    assert judged == KEYS
    llm_scenarios = {r["scenario"] for r in ROWS if r["kind"] == "llm"}
    assert {c.scenario for c in pom.LLM_CLAIMS} <= llm_scenarios
    from mesa_dilemmas.scenarios.config import load_scenario

    for scenario in sorted(llm_scenarios):
        load_scenario(scenario, [])  # a bundled scenario
    judged_where = {r["where"].split(",")[-1].strip() for r in ROWS}
    for fig in ("Fig. 2A", "Fig. 2B", "Fig. 2C", "Fig. 3", "Fig. 4", "Fig. 5", "Fig. 6"):
        assert fig in judged_where, fig


def test_every_judged_claim_has_an_experiment_with_three_sizes():
    experiments = {e.key: e for e in pom.EXPERIMENTS}
    for claim in pom.CLAIMS:
        exp = experiments[claim.experiment]
        assert exp.tiny and exp.quick, exp.key
    from mesa_dilemmas.scenarios.config import load_scenario

    for exp in pom.EXPERIMENTS:
        load_scenario(exp.scenario, exp.overrides("quick"))


# -- judges on runs with a known answer -------------------------------------------------------


def _write(path: Path, runs: pd.DataFrame) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    runs = runs.copy()
    runs["RunId"] = range(len(runs))
    runs.to_parquet(path / "runs.parquet")
    return path


def _culture_runs(rng: np.random.Generator, n: int, dirty: dict[str, float]) -> pd.DataFrame:
    groups = list(dirty)
    rows = []
    for _ in range(n):
        row: dict = {"survived": True}
        for seat, g in enumerate([*groups, groups[0]]):
            opps = 4
            row |= {
                f"seat{seat}_label": g,
                f"seat{seat}_points": 5,
                f"seat{seat}_health_coins": 40,
                f"seat{seat}_dirty_taken": int(rng.binomial(opps, dirty[g])),
                f"seat{seat}_dirty_opportunities": opps,
            }
        rows.append(row)
    return pd.DataFrame(rows)


def test_the_ranking_judge_reproduces_fails_or_says_it_cannot_tell(tmp_path):
    rng = np.random.default_rng(3)
    paper = {
        "hierarchical-individualist": 0.8,
        "egalitarian-individualist": 0.6,
        "hierarchical-communitarian": 0.35,
        "egalitarian-communitarian": 0.1,
    }
    verdict = pom.judge_pom_culture_dirty(_write(tmp_path / "a", _culture_runs(rng, 300, paper)))
    assert verdict.status == "reproduced", verdict
    swapped = paper | {"hierarchical-individualist": 0.4, "egalitarian-individualist": 0.8}
    verdict = pom.judge_pom_culture_dirty(_write(tmp_path / "b", _culture_runs(rng, 300, swapped)))
    assert verdict.status == "not reproduced", verdict  # HI < EI, significantly
    # the paper's own 2-point HI - EI gap at 20 games: a null is inconclusive, with the power
    level = paper | {"hierarchical-individualist": 0.6}
    verdict = pom.judge_pom_culture_dirty(_write(tmp_path / "c", _culture_runs(rng, 20, level)))
    assert verdict.status == "inconclusive" and "80% power needs about" in verdict.ours


def _lead_runs(rng: np.random.Generator, n: int, survival: dict[str, list[float]]) -> pd.DataFrame:
    rows = []
    angles = (-15, 0, 15, 30, 60)
    for variant, by_angle in survival.items():
        for i, angle in enumerate(angles):
            for _ in range(n):
                alive = bool(rng.random() < by_angle[i])
                rows.append(
                    {
                        "leadership": variant,
                        "leader_label": f"svo{angle}",
                        "survived": alive,
                        "winner_labels": f"svo{angles[int(rng.integers(5))]}" if alive else "",
                    }
                )
    return pd.DataFrame(rows)


def test_the_leadership_judges_read_what_the_paper_says(tmp_path):
    rng = np.random.default_rng(5)
    falling = [0.95, 0.9, 0.8, 0.65, 0.55]
    runs = _lead_runs(rng, 120, {"vanilla": falling, "announce": falling, "unaware": falling})
    assert pom.judge_pom_lead_trend(_write(tmp_path / "a", runs)).status == "reproduced"
    rising = _lead_runs(rng, 120, {"vanilla": falling, "announce": falling[::-1]})
    assert pom.judge_pom_lead_trend(_write(tmp_path / "b", rising)).status == "not reproduced"
    flat = [0.8] * 5
    both = _lead_runs(rng, 150, {"vanilla": flat, "announce": [0.97] * 5, "unaware": flat})
    verdict = pom.judge_pom_lead_announce(_write(tmp_path / "c", both))
    assert verdict.status == "reproduced", verdict
    # winners drawn regardless of who leads: the unaware leader's own wins are unchanged
    verdict = pom.judge_pom_lead_unaware_wins(_write(tmp_path / "c", both))
    assert verdict.status == "reproduced", verdict
    verdict = pom.judge_pom_lead_vanilla_wins(_write(tmp_path / "c", both))
    assert verdict.status in ("inconclusive", "not reproduced"), verdict


def _set_runs(rng: np.random.Generator, n: int, low_points: float) -> pd.DataFrame:
    """Runs of both SVO sets: the -15..60 set scores 7 points a player on average."""
    rows = []
    for low in (False, True):
        for variant in ("none", "vanilla", "announce", "unaware"):
            for _ in range(n):
                rows.append(
                    {
                        "svo_angles": json.dumps(
                            [-30, -15, 0, 15, 60] if low else [-15, 0, 15, 30, 60]
                        ),
                        "leadership": variant,
                        "survived": True,
                        "health_coins_total": rng.normal(200 if low else 230, 20),
                        "final_points_mean": rng.normal(low_points if low else 7.0, 1.0),
                        "gini_points": rng.normal(0.36, 0.05),
                    }
                )
    return pd.DataFrame(rows)


def test_the_svo_set_judges(tmp_path):
    rng = np.random.default_rng(7)
    worse = _write(tmp_path / "a", _set_runs(rng, 40, low_points=5.0))
    assert pom.judge_pom_groups_health(worse).status == "reproduced"
    assert pom.judge_pom_groups_points(worse).status == "reproduced"
    better = _write(tmp_path / "c", _set_runs(rng, 40, low_points=9.0))
    assert pom.judge_pom_groups_points(better).status == "not reproduced"
    same = _write(tmp_path / "b", _set_runs(rng, 5, low_points=7.0))
    gini = pom.judge_pom_groups_gini(same)
    assert gini.status == "inconclusive" and "power" in gini.ours
    best = pom.judge_pom_groups_best(worse)
    assert best.status in ("reproduced", "inconclusive", "not reproduced")
    assert "top tenth" in best.ours


def test_judges_run_on_real_rule_games_at_the_tiny_size(tmp_path):
    """Every Port of Mars experiment at its tiny size: each judge gives a verdict (no
    exception, a known status), and a by-construction claim says which parameters."""
    from mesa_dilemmas.scenarios.runner import run_scenario

    statuses = {"reproduced", "not reproduced", "inconclusive", "not testable"}
    for exp in pom.EXPERIMENTS:
        out = tmp_path / exp.key
        run_scenario(
            exp.scenario, out_dir=out / "run", overrides=exp.overrides("tiny"), progress=False
        )
        for claim in (c for c in pom.CLAIMS if c.experiment == exp.key):
            verdict = claim.judge(out / "run")
            assert verdict.status in statuses, (claim.key, verdict)
            assert verdict.status != "partly"


def test_the_docs_count_the_register_as_it_is():
    from collections import Counter

    kinds = Counter(r["kind"] for r in ROWS)
    docs = " ".join((ROOT / "docs" / "port_of_mars.md").read_text(encoding="utf-8").split())
    assert (
        f"({len(ROWS)} rows: {kinds['judged']} judged here on rule players, {kinds['llm']} "
        f"that need LLM players"
    ) in docs
    assert f"{kinds['untestable'] + kinds['not_run']} not testable here" in docs
