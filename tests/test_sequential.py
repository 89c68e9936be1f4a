"""Sequential stopping: ``mesa-dilemmas run SCENARIO --until decided[,...]``.

The Lan-DeMets boundaries against published tables and against scipy's multivariate normal
(an independent computation); the type-I error of the design over 400 null studies drawn from
rule-player runs (checked by a binomial interval, next to naive repeated testing, which the same
check must catch); the runs saved against the fixed design of equal power; the driver's looks
file, its early stop and its resume.  ``benchmarks/bench_sequential.py`` is the full-size
version."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_runner import cli_in_process
from llm_fixtures import llm_env  # noqa: F401 - an isolated LLM cache and session
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from mesa_dilemmas.scenarios import sequential as sq
from mesa_dilemmas.scenarios.config import ConfigError
from mesa_dilemmas.scenarios.power import n_by_simulation, run_rule_standin
from mesa_dilemmas.scenarios.runner import default_out_dir, run_scenario

#: Lan-DeMets boundaries for five equally spaced looks, two-sided alpha = 0.05 (DeMets and Lan
#: 1994; the values R's ldbounds and gsDesign print)
PUBLISHED = {
    "obf": (4.877, 3.357, 2.680, 2.290, 2.031),
    "pocock": (2.438, 2.427, 2.410, 2.397, 2.386),
}
FIVE = [0.2, 0.4, 0.6, 0.8, 1.0]


@pytest.mark.parametrize("spending", ["obf", "pocock"])
def test_boundaries_match_published_tables(spending):
    assert sq.boundaries(FIVE, 0.05, spending) == pytest.approx(PUBLISHED[spending], abs=1e-3)


@pytest.mark.parametrize("spending", ["obf", "pocock"])
def test_spending_is_what_scipys_multivariate_normal_finds(spending):
    """P(no stop by look k) under the null is 1 - a(t_k), at unequal looks, computed by
    Genz's algorithm (scipy) over the joint normal of the look statistics."""
    ts = np.array([0.25, 0.6, 1.0])
    bounds = np.array(sq.boundaries(ts, 0.05, spending))
    for k in range(1, len(ts) + 1):
        t = ts[:k]
        cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
        inside = stats.multivariate_normal(np.zeros(k), cov).cdf(
            bounds[:k], lower_limit=-bounds[:k], rng=np.random.default_rng(0)
        )
        assert inside == pytest.approx(1 - sq.spent(t[-1], 0.05, spending), abs=2e-4)


def test_normal_theory_of_the_design():
    fractions = FIVE
    bounds = sq.boundaries(fractions, 0.05, "obf")
    assert sq.operating(fractions, bounds, 0.0).power == pytest.approx(0.05, abs=1e-6)
    d = sq.plan(100, 0.8, 0.05, "obf", 5)
    # Jennison and Turnbull: the O'Brien-Fleming-type maximum is 2-3% above the fixed design
    assert 1.015 < d.inflation < 1.035 and d.max == 105 and d.expected < 85  # 5 batches of 21


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("done", "--until: expected 'decided"),
        ("decided,maxx=4", "--until 'maxx': unknown key"),
        ("decided,max=1", "--until max: must be at least 2"),
        ("decided,max=10,batch=20", "--until batch: 20 is more than max=10"),
        ("decided,alpha=0.7", "--until alpha: must be in (0, 0.5)"),
        ("decided,spending=linear", "--until spending: expected 'obf' or 'pocock'"),
        ("decided,batch=x", "--until batch: expected a whole number"),
        ("decided,outcome=rank", "--until outcome: expected 'mean', 'proportion' or 'survival'"),
    ],
)
def test_bad_until_specs_name_the_field(text, message):
    with pytest.raises(ValueError) as err:
        sq.parse_until(text, 10)
    assert message in str(err.value)


def test_until_spec_defaults():
    spec = sq.parse_until("decided", 10)
    assert (spec.max, spec.batch, spec.alpha, spec.spending) == (10, 2, 0.05, "obf")
    assert sq.parse_until("decided,max=10,batch=4", 10).looks() == [4, 8, 10]


# -- the design on rule players' runs --------------------------------------------------------


@pytest.fixture(scope="module")
def pools():
    """Survival times of the fishery's rule villagers at r = 0.3 under a weak (beta = 2) and
    a stronger (beta = 8) fine: 300 runs each on the vectorised engine."""
    runs = run_rule_standin(
        "fishery/beta_growth_sweep",
        ["grid.growth_rate=[0.3]", "grid.penalty=[2.0,8.0]"],
        replications=300,
    )
    weak = runs.loc[np.isclose(runs.penalty, 2.0), "survival_time"].to_numpy(float)
    strong = runs.loc[np.isclose(runs.penalty, 8.0), "survival_time"].to_numpy(float)
    return weak, strong


@pytest.mark.parametrize("spending", ["obf", "pocock"])
def test_type_one_error_stays_at_alpha_over_400_null_studies(pools, spending):
    weak, _ = pools
    spec = sq.Spec(50, 10, 0.05, spending)
    design = sq.simulate_studies(weak, weak, spec, "survival", 400, seed=11)
    naive = sq.simulate_studies(weak, weak, spec, "survival", 400, seed=11, bounds=[1.96] * 5)
    low, high = proportion_confint(design.rejected, design.studies, 0.05, method="beta")
    assert low <= 0.05, f"{design.rejected}/400 null studies rejected"
    # the same check catches testing at 1.96 after every batch (about 14% here)
    naive_low, _ = proportion_confint(naive.rejected, naive.studies, 0.05, method="beta")
    assert naive_low > 0.05, f"naive {naive.rejected}/400"


def test_a_known_effect_needs_30_percent_fewer_runs_than_the_fixed_design(pools):
    """Pocock-type spending, five looks, 95% power: the mean replications per arm against the
    replications a fixed design needs for the power the sequential one showed."""
    weak, strong = pools
    fixed = n_by_simulation(strong, weak, 0.95, 0.05, seed=1, sims=1000)
    plan = sq.plan(fixed, 0.95, 0.05, "pocock", 5)
    batch = math.ceil(plan.max / 5)
    spec = sq.Spec(batch * 5, batch, 0.05, "pocock")
    found = sq.simulate_studies(strong, weak, spec, "survival", 400, seed=12)
    equal = n_by_simulation(strong, weak, min(found.rate, 0.99), 0.05, seed=2, sims=1000)
    saving = 1 - found.mean_n / equal
    assert found.rate > 0.9, found
    assert saving >= 0.30, (found, fixed, equal)


# -- the driver ------------------------------------------------------------------------------

HARSH = ["max_steps=40", "grid.growth_rate=[0.2]", "grid.altruism_ratio=[0.0,1.0]"]
RICH = ["max_steps=20", "grid.growth_rate=[0.6]", "grid.altruism_ratio=[0.0,1.0]"]


def _sets(overrides: list[str]) -> list[str]:
    return [x for o in overrides for x in ("--set", o)]


def test_run_until_stops_when_the_contrast_is_decided(tmp_path):
    out = tmp_path / "seq"
    code, err = cli_in_process(
        ["run", "fishery/altruism", "--out", str(out), "--no-progress", *_sets(HARSH),
         "--until", "decided,max=24,batch=8,spending=pocock"]
    )  # fmt: skip
    assert code == 0, err
    looks = json.loads((out / "looks.json").read_text())
    design = json.loads((out / "sequential.json").read_text())
    assert design["until"] == "decided,max=24,batch=8,alpha=0.05,spending=pocock"
    assert design["kind"] == "survival"  # read off the first look, kept for the next and a resume
    assert design["boundaries"] == pytest.approx(sq.boundaries([1 / 3, 2 / 3, 1], 0.05, "pocock"))
    assert len(looks) < 3  # all-altruistic groups outlive selfish ones by far in a harsh lake
    last = looks[-1]["contrasts"][0]
    assert last["contrast"] == "altruism_ratio=1.0 vs 0.0" and last["decision"] == "effect"
    assert abs(last["z"]) >= last["boundary"] and last["n_a"] == last["n_b"] == 8 * len(looks)
    assert sorted(p.name for p in (out / "batches").iterdir()) == [
        f"{i:02d}" for i in range(1, len(looks) + 1)
    ]
    report = (out / "sequential.md").read_text()
    assert "Pocock-type" in report and "stopped at look" in report
    # run --resume DIR on a sequential run continues its design (here: nothing left to run)
    code, err = cli_in_process(["run", "fishery/altruism", "--resume", str(out), "--no-progress",
                                *_sets(HARSH)])  # fmt: skip
    assert code == 0, err
    assert json.loads((out / "looks.json").read_text()) == looks


def test_a_killed_sequential_run_resumes_the_same_design(tmp_path):
    calls: list[tuple[str, bool]] = []

    def killed_at_batch_2(name, *, out_dir=None, resume=None, **kw):
        """The runner, killed once: after batch 2's runs, before its look is written."""
        folder = resume or out_dir
        calls.append((folder.name, resume is not None))
        outcome = run_scenario(name, out_dir=out_dir, resume=resume, **kw)
        if folder.name == "02" and len(calls) == 2:
            raise KeyboardInterrupt
        return outcome

    spec = "decided,max=6,batch=2"  # no effect in the rich lake (every group lives): to the cap
    common = dict(overrides=RICH, default_out=default_out_dir, progress=False)
    out = tmp_path / "seq"
    with pytest.raises(KeyboardInterrupt):
        sq.run_until("fishery/altruism", spec, out_dir=out, run=killed_at_batch_2, **common)
    first = (out / "batches" / "01" / "runs.parquet").stat().st_mtime_ns
    assert len(json.loads((out / "looks.json").read_text())) == 1
    with pytest.raises(ConfigError, match="differs from the saved one in until"):
        sq.run_until(
            "fishery/altruism", "decided,max=8,batch=2", resume=out, run=run_scenario, **common
        )
    done = sq.run_until("fishery/altruism", None, resume=out, run=killed_at_batch_2, **common)
    assert calls[2:] == [("01", True), ("02", True), ("03", False)]
    assert (out / "batches" / "01" / "runs.parquet").stat().st_mtime_ns == first  # not redone
    assert done.stopped_at == 3 and done.n_per_cell == 6 and done.runs == 12
    fresh = sq.run_until(
        "fishery/altruism", spec, out_dir=tmp_path / "fresh", run=run_scenario, **common
    )
    resumed = json.loads((out / "looks.json").read_text())
    assert resumed == json.loads((fresh.out_dir / "looks.json").read_text())
    assert "ran to the cap" in done.report


LLM_SCENARIO = """
name = "sequential-llm"
game = "fishery"
seed = 5
replications = 4
max_steps = 2
[params]
n_agents = 3
llm_agents = 2
llm = "openai:test-model@{url}/v1"
[grid]
altruism_ratio = [1.0, 0.0]
[llm]
max_tokens = 64
"""


def test_llm_batches_record_their_calls_and_a_resume_pays_nothing_twice(tmp_path, llm_env):  # noqa: F811
    """LLM villagers answered by a loopback OpenAI-wire server: each batch is a run with its
    own LLM record; resuming the finished design reaches the server zero times."""
    import sqlite3

    from llm_servers.wire import WireServer

    def paid(batch):
        with sqlite3.connect(f"file:{batch / 'llm_calls.sqlite'}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM calls WHERE source = 'provider'").fetchone()[
                0
            ]

    out = tmp_path / "seq"
    common = dict(run=run_scenario, default_out=default_out_dir, progress=False)
    with WireServer() as server:
        scenario = tmp_path / "s.toml"
        scenario.write_text(LLM_SCENARIO.format(url=server.url))
        first = sq.run_until(str(scenario), "decided,max=4,batch=2", out_dir=out, **common)
        requests = server.state.requests
        batches = sorted((out / "batches").iterdir())
        assert [b.name for b in batches] == ["01", "02"]  # 2 rounds: every group lives, no stop
        assert all(paid(b) > 0 for b in batches)
        assert sum(paid(b) for b in batches) <= requests  # (native mode: a schema probe more)
        looks = json.loads((out / "looks.json").read_text())
        sq.run_until(str(scenario), None, resume=out, **common)
        assert server.state.requests == requests  # nothing paid twice
        assert json.loads((out / "looks.json").read_text()) == looks
    assert "ran to the cap: 4 replications per cell" in first.report
