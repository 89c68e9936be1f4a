"""Experiments on Ray: the same results as the local pool, killed workers survived, clear stops.

One local Ray instance (2 CPUs) serves the module; the command-line test starts its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

import ray_tasks  # noqa: E402
from llm_servers.wire import WireServer  # noqa: E402

from mesa_dilemmas.llm import session  # noqa: E402
from mesa_dilemmas.scenarios import execution  # noqa: E402
from mesa_dilemmas.scenarios.execution import ExecutionSettings, TaskFailed  # noqa: E402
from mesa_dilemmas.scenarios.runner import run_scenario  # noqa: E402

RAY = ExecutionSettings(backend="ray", max_retries=2)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}},
    )
    yield
    ray.shutdown()


def test_tasks_run_on_ray_in_task_order(local_ray):
    with execution.use(RAY):
        got = execution.map_tasks(
            ray_tasks.square, list(range(12)), processes=2, progress=False, desc="t"
        )
    assert got == [x * x for x in range(12)]


def test_a_worker_killed_mid_task_is_retried_and_the_run_completes(local_ray, tmp_path):
    marker = tmp_path / "killed"
    tasks = [(x, str(marker)) for x in range(6)]
    with execution.use(RAY):
        got = execution.map_tasks(ray_tasks.die_once, tasks, processes=2, progress=False, desc="t")
    assert marker.exists()  # the first attempt of task 0 really killed its worker
    assert got == [x * x for x in range(6)]


def test_a_task_that_keeps_failing_stops_with_its_name_and_keeps_what_finished(local_ray, tmp_path):
    marker = tmp_path / "deaths"
    saved: dict[int, int] = {}
    tasks = [(x, str(marker)) for x in range(6)]
    with (
        execution.use(RAY),
        pytest.raises(TaskFailed, match="chunk 3 failed after up to 2 retries"),
    ):
        execution.map_tasks(
            ray_tasks.die_always,
            tasks,
            processes=1,
            progress=False,
            desc="t",
            on_result=saved.__setitem__,
            label=lambda i: f"chunk {i}",
        )
    assert len(marker.read_text().split()) == 3  # the first attempt and two retries
    assert 3 not in saved and saved  # what finished before the stop was handed over


def _read(out: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    summary = json.loads((out / "summary.json").read_text())
    summary.pop("wall_time_s")
    return pd.read_parquet(out / "runs.parquet"), pd.read_parquet(out / "steps.parquet"), summary


def test_a_batch_sweep_gives_identical_results_locally_and_on_ray(local_ray, tmp_path):
    small = [
        "replications=5",
        "max_steps=25",
        "grid.growth_rate=[0.3,0.6]",
        "grid.penalty=[2.0,10.0]",
        "options.keep_chunks=true",
    ]
    run_scenario(
        "fishery/beta_growth_sweep",
        out_dir=tmp_path / "local",
        overrides=small,
        processes=2,
        progress=False,
    )
    run_scenario(
        "fishery/beta_growth_sweep",
        out_dir=tmp_path / "ray",
        overrides=small,
        processes=2,
        progress=False,
        execution={"backend": "ray"},
    )
    local, on_ray = _read(tmp_path / "local"), _read(tmp_path / "ray")
    pd.testing.assert_frame_equal(local[0], on_ray[0])
    pd.testing.assert_frame_equal(local[1], on_ray[1])
    assert local[2] == on_ray[2]
    # 5 replications x 4 cells over 2 workers: 4 chunks per worker (of 2 or 3 runs, cutting
    # replications apart), saved as they arrive
    assert len(list((tmp_path / "ray" / "partial").glob("chunk_*.parquet"))) == 8


def test_resume_on_ray_runs_only_the_missing_chunks(local_ray, tmp_path):
    small = [
        "replications=4",
        "max_steps=10",
        "grid.growth_rate=[0.4]",
        "grid.penalty=[5.0]",
        "options.keep_chunks=true",
    ]
    out = tmp_path / "run"
    run_scenario(
        "fishery/beta_growth_sweep",
        out_dir=out,
        overrides=small,
        processes=2,
        progress=False,
        execution={"backend": "ray"},
    )
    before = _read(out)
    chunks = sorted((out / "partial").glob("chunk_*.parquet"))
    mtimes = {c: c.stat().st_mtime_ns for c in chunks[1:]}
    chunks[0].unlink()  # as if the driver died before this chunk arrived
    run_scenario(
        "fishery/beta_growth_sweep",
        resume=out,
        overrides=small,
        processes=2,
        progress=False,
        execution={"backend": "ray"},
    )
    assert all(c.stat().st_mtime_ns == t for c, t in mtimes.items())  # not re-run
    after = _read(out)
    pd.testing.assert_frame_equal(before[0], after[0])


def test_asking_for_ray_without_it_installed_is_one_line_and_nothing_written(tmp_path):
    out = tmp_path / "run"
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from mesa_dilemmas.cli import main\n"
        f"sys.exit(main(['run', 'fishery/punishment_shock', '--backend', 'ray', '--out', {str(out)!r}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "execution.backend: 'ray' needs Ray" in lines[0], result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("scenario", "small"),
    [
        (
            "public_goods/self_play",
            ["options.samples=6", "options.group_sizes=[4,16]", "options.splits=3"],
        ),
        (
            "public_goods/cultural_evolution",
            [
                "options.runs=3",
                "options.population=32",
                "options.survivors=8",
                "options.group_sizes=[4]",
                "options.max_generations=5",
            ],
        ),
    ],
)
def test_self_play_and_evolution_give_identical_results_locally_and_on_ray(
    local_ray, tmp_path, scenario, small
):
    run_scenario(scenario, out_dir=tmp_path / "local", overrides=small, processes=2, progress=False)
    run_scenario(
        scenario,
        out_dir=tmp_path / "ray",
        overrides=small,
        processes=2,
        progress=False,
        execution={"backend": "ray"},
    )
    local, on_ray = _read(tmp_path / "local"), _read(tmp_path / "ray")
    pd.testing.assert_frame_equal(local[0], on_ray[0])
    assert local[2] == on_ray[2]


LLM_SCENARIO = """
game = "fishery"
seed = 3
replications = 4
max_steps = 2
[params]
n_agents = 4
llm_agents = 4
llm = "openai:test-model@{url}/v1"
[llm]
max_tokens = 32
[llm.providers.openai]
max_concurrency = {k}
"""


def _llm_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MESA_DILEMMAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    session.activate(None)  # no LLM run active in this thread: the runs start their own


def test_llm_limits_hold_across_every_ray_worker(tmp_path, monkeypatch):
    """Runs of four LLM villagers on two workers put up to 2 x K calls in flight when each
    process keeps its own limit (the local pool, shown first); on Ray the gate holds K = 2 for
    the whole run, and the server never sees more."""
    _llm_env(tmp_path, monkeypatch)
    with WireServer(latency_s=0.1) as server:
        scenario = tmp_path / "s.toml"
        scenario.write_text(LLM_SCENARIO.format(url=server.url, k=2))
        run_scenario(str(scenario), out_dir=tmp_path / "local", processes=2, progress=False)
        assert server.state.peak_in_flight > 2  # per-process limits: K per worker
    _llm_env(tmp_path / "second", monkeypatch)  # a fresh cache: every call is paid again
    with WireServer(latency_s=0.1) as server:
        scenario.write_text(LLM_SCENARIO.format(url=server.url, k=2))
        run_scenario(
            str(scenario),
            out_dir=tmp_path / "ray",
            processes=2,
            progress=False,
            execution={"backend": "ray"},
        )
        assert (
            server.state.requests >= 4 * 4 * 2
        )  # every villager decided every round at least once
        assert server.state.peak_in_flight == 2  # the limit was reached, and never passed


def test_the_llm_budget_holds_for_the_whole_ray_run(tmp_path, monkeypatch):
    from mesa_dilemmas.scenarios.runner import RunStopped

    _llm_env(tmp_path, monkeypatch)
    with WireServer(latency_s=0.05) as server:
        scenario = tmp_path / "s.toml"
        scenario.write_text(LLM_SCENARIO.format(url=server.url, k=8))
        with pytest.raises(RunStopped, match="max_calls = 13"):
            run_scenario(
                str(scenario),
                out_dir=tmp_path / "run",
                processes=2,
                progress=False,
                overrides=["llm.budget.max_calls=13"],
                execution={"backend": "ray"},
            )
        assert server.state.requests == 13  # exactly the budget, over both workers


def test_sensitivity_and_calibration_give_the_same_numbers_on_ray(local_ray, tmp_path):
    """The points of a Sobol analysis and of a calibration go out as Ray tasks; the indices
    and the trials equal the local pool's."""
    from mesa_dilemmas.scenarios.calibrate import Target, Targets, run_calibration
    from mesa_dilemmas.scenarios.config import load_scenario
    from mesa_dilemmas.scenarios.sensitivity import run_sensitivity

    scenario, _ = load_scenario("fishery/beta_growth_sweep", ["replications=2", "max_steps=30"])
    ranges = {"penalty": (2.0, 18.0), "growth_rate": (0.2, 0.8)}
    targets = Targets([Target("survival_time", "maximize")])
    results = {}
    for name, settings in (("local", ExecutionSettings()), ("ray", RAY)):
        with execution.use(settings, 2):
            s = run_sensitivity(
                scenario,
                method="sobol",
                ranges=ranges,
                samples=4,
                metric="survival_time",
                out_dir=tmp_path / f"s_{name}",
                processes=2,
            )
            c = run_calibration(
                scenario,
                targets=targets,
                ranges=ranges,
                trials=4,
                out_dir=tmp_path / f"c_{name}",
                processes=2,
            )
        results[name] = (s.table, c.trials.drop(columns=["state"]))
    pd.testing.assert_frame_equal(results["local"][0], results["ray"][0])
    pd.testing.assert_frame_equal(results["local"][1], results["ray"][1])
