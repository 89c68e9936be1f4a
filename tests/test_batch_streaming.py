"""A batch sweep cut into chunks over grid cells and replications, its tables streamed to disk
chunk by chunk: the same tables as one ``batch_run`` of the whole sweep held in memory (how
they were made before), and a resume that meets chunks of another size re-runs them."""

from __future__ import annotations

import itertools
import json
import tomllib

import pandas as pd
import pytest
from cli_runner import cli_in_process
from mesa.batchrunner import batch_run

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.scenarios import execution
from mesa_dilemmas.scenarios.batch import derive_seeds
from mesa_dilemmas.scenarios.batch_chunks import (
    CHUNKS_PER_WORKER,
    MAX_RUNS_PER_CHUNK,
    cell_kwargs,
    chunk_ranges,
    to_plain,
)
from mesa_dilemmas.scenarios.config import load_scenario
from mesa_dilemmas.scenarios.state_hash import state_hashes

FISHERY = (
    "fishery/beta_growth_sweep",
    ["replications=3", "max_steps=15", "grid.growth_rate=[0.3,0.6]", "grid.penalty=[2.0,10.0]"],
)
MARS = ("port_of_mars/leadership_rule_based", ["replications=2", "grid.leader_seat=[0,4]"])


def whole_sweep_tables(name: str, overrides: list[str]) -> dict[str, pd.DataFrame]:
    """runs/steps/agents from one ``batch_run`` of the whole sweep, shaped in memory."""
    scenario, _ = load_scenario(name, overrides)
    model_cls = game_model(scenario.game)
    parameters = {k: [v] for k, v in scenario.params.items()}
    parameters.update(scenario.grid)
    rows = batch_run(
        model_cls,
        parameters=parameters,
        number_processes=1,
        data_collection_period=1,
        max_steps=scenario.max_steps,
        display_progress=False,
        rng=derive_seeds(scenario.seed, scenario.replications),
    )
    steps = pd.DataFrame(rows).rename(columns={"rng": "seed"})
    steps["Step"] = steps["Step"].astype(int)
    steps = steps.sort_values(["RunId", "Step"], kind="stable").reset_index(drop=True)
    for col in steps.columns:
        if steps[col].dtype == object:
            steps[col] = steps[col].map(to_plain)
    keys = ["RunId", "iteration", "seed", "Step"]
    out = {}
    if "AgentID" in steps.columns:
        agent_cols = ["AgentID", *(c for c in model_cls.AGENT_REPORTERS if c in steps.columns)]
        out["agents"] = steps[keys + agent_cols].reset_index(drop=True)
        steps = steps.drop(columns=agent_cols).drop_duplicates(["RunId", "Step"])
        steps = steps.reset_index(drop=True)
    runs = steps.groupby("RunId", sort=True).tail(1).reset_index(drop=True)
    out["runs"] = runs.rename(columns={"Step": "steps_run"})
    reporters = [c for c in steps.columns if c not in parameters and c not in keys]
    out["steps"] = steps[[*keys, *scenario.grid, *reporters]]
    return out


def cli_args(name: str, overrides: list[str]) -> list[str]:
    overrides = [*overrides, "options.keep_chunks=true"]  # the tests look at the saved chunks
    return [name, "--no-progress", *itertools.chain.from_iterable(("--set", o) for o in overrides)]


@pytest.mark.parametrize("case", [FISHERY, MARS], ids=["fishery", "port_of_mars_agents"])
def test_streamed_tables_equal_one_whole_sweep_in_memory(tmp_path, case):
    name, overrides = case
    out = tmp_path / "run"
    code, err = cli_in_process(["run", *cli_args(name, overrides), "--out", str(out)])
    assert code == 0, err
    # the sweep went out in several chunks, some of them cutting a replication's cells apart
    assert len(list((out / "partial").glob("chunk_*.parquet"))) == CHUNKS_PER_WORKER
    expected = whole_sweep_tables(name, overrides)
    assert set(expected) | {"state_hashes"} == {p.stem for p in out.glob("*.parquet")}
    for table, frame in expected.items():
        pd.testing.assert_frame_equal(pd.read_parquet(out / f"{table}.parquet"), frame, obj=table)
    # the per-round state hashes are those of the whole sweep's tables
    config = tomllib.loads((out / "config.toml").read_text())  # what the runner leaves out
    skip = [*config.get("params", {}), *config.get("grid", {})]
    hashes = state_hashes(expected["steps"], expected.get("agents"), skip=skip)
    stored = pd.read_parquet(out / "state_hashes.parquet")
    assert stored["state_hash"].nunique() > 1
    pd.testing.assert_frame_equal(stored, hashes, obj="state_hashes")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_runs"] == len(expected["runs"])


def test_a_resume_re_runs_chunks_saved_with_another_size(tmp_path):
    name, overrides = FISHERY
    out = tmp_path / "run"
    assert cli_in_process(["run", *cli_args(name, overrides), "--out", str(out)])[0] == 0
    before = {t: pd.read_parquet(out / f"{t}.parquet") for t in ("runs", "steps")}
    # two processes cut the 12 runs into 8 chunks instead of 4: no saved chunk fits
    code, err = cli_in_process(
        ["run", *cli_args(name, overrides), "--resume", str(out), "--processes", "2"]
    )
    assert code == 0, err
    assert "chunk_00000.parquet holds other runs than this chunk's 0..0" in err
    assert len(list((out / "partial").glob("chunk_*.parquet"))) == 2 * CHUNKS_PER_WORKER
    for table, frame in before.items():
        pd.testing.assert_frame_equal(pd.read_parquet(out / f"{table}.parquet"), frame, obj=table)


@pytest.mark.parametrize("n_runs", [1, 5, 12, 63, 315, 6300])
@pytest.mark.parametrize("workers", [1, 2, 7])
def test_automatic_chunks_are_balanced_and_cover_every_run_once(n_runs, workers):
    chunks = chunk_ranges(n_runs, 63, replications_per_chunk=0, workers=workers)
    assert [r for c in chunks for r in c] == list(range(n_runs))
    sizes = [len(c) for c in chunks]
    assert max(sizes) - min(sizes) <= 1 and max(sizes) <= MAX_RUNS_PER_CHUNK
    assert len(chunks) == min(n_runs, max(CHUNKS_PER_WORKER * workers, -(-n_runs // 50)))


def test_replications_per_chunk_gives_whole_replications_of_every_cell():
    chunks = chunk_ranges(5 * 6, 6, replications_per_chunk=2, workers=4)
    assert chunks == [range(0, 12), range(12, 24), range(24, 30)]


def test_cell_numbers_follow_the_order_of_batch_run():
    parameters = {"a": [1], "b": ["x", "y", "z"], "c": [0.1, 0.2], "d": [[1, 2]]}
    cells = [
        dict(zip(parameters, combo, strict=True))
        for combo in itertools.product(*parameters.values())
    ]
    assert [cell_kwargs(parameters, i) for i in range(len(cells))] == cells


def test_map_tasks_can_hand_each_result_over_without_keeping_it():
    handed: dict[int, int] = {}
    got = execution.map_tasks(
        abs,
        [-1, -2, 3],
        processes=1,
        progress=False,
        desc="t",
        on_result=handed.__setitem__,
        keep=False,
    )
    assert got == [None, None, None] and handed == {0: 1, 1: 2, 2: 3}
