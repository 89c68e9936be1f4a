"""The fishery's vectorised engine equals the Mesa model exactly on the same random streams.

Every state-driven column of ``batch_run``'s rows (reporters, ids, steps, arguments) must be
identical; ``norm_similarity`` / ``norm_alignment`` (computed batched, never fed back into the
dynamics) agree to 1e-12.  The grid switches every option the engine supports."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.fishery.vector import unsupported
from mesa_dilemmas.scenarios.batch import derive_seeds
from mesa_dilemmas.scenarios.batch_chunks import choose_engine, make_chunk, run_batch_chunk
from mesa_dilemmas.scenarios.runner import run_scenario

CELLS = [
    {},
    {"penalty": 18.0, "growth_rate": 0.8},
    {"population": "typed", "punisher_profile": "text", "punishment_off_at": 5},
    {"regrowth": "doubling", "fine_per_punisher": True, "sanction_learning": 0.05,
     "respect_personal_cap": True},
    {"stop_at_collapse": False, "growth_rate": 0.2, "initial_wealth": 5.0, "consumption": 3.0},
    {"social_learning": False, "group_decision": False, "punish_cost": 1.0},
    {"n_agents": 5, "revision_rate": 1.0, "selection_strength": 5.0, "altruism_ratio": 0.3,
     "population": "typed"},
    {"punishment": False, "initial_stock": 0.5, "monitoring_min": 0.1},
]  # fmt: skip
TOLERANT = ("norm_similarity", "norm_alignment")


def _compare(mesa: pd.DataFrame, vector: pd.DataFrame) -> None:
    assert list(mesa.columns) == list(vector.columns)
    assert len(mesa) == len(vector)
    for col in mesa.columns:
        a, b = mesa[col], vector[col]
        if col in TOLERANT:
            np.testing.assert_allclose(a.astype(float), b.astype(float), atol=1e-12, rtol=0)
            continue
        same = (a == b) | (a.isna() & b.isna())
        assert same.all(), f"{col} differs at rows {np.flatnonzero(~same)[:5].tolist()}"


@pytest.mark.parametrize("cell", range(len(CELLS)))
def test_vector_equals_mesa_exactly(cell: int) -> None:
    """Each cell over a few replications, with every column of every step compared."""
    params = {key: [value] for key, value in CELLS[cell].items()}
    seeds = derive_seeds(23 + cell, 6)
    chunk = make_chunk(
        0, range(6), game="fishery", parameters=params, n_cells=1, seeds=seeds, max_steps=40
    )
    mesa = run_batch_chunk(chunk)
    vector = run_batch_chunk(
        make_chunk(
            0,
            range(6),
            game="fishery",
            parameters=params,
            n_cells=1,
            seeds=seeds,
            max_steps=40,
            engine="vector",
        )
    )
    _compare(mesa, vector)


def test_vector_grid_chunk_equals_mesa() -> None:
    """A grid chunk cut mid-replication (common random numbers across cells), runs of differing
    length advancing together."""
    params = {"penalty": [2.0, 10.0, 18.0], "growth_rate": [0.2, 0.5, 0.8]}
    seeds = derive_seeds(2027, 4)
    for engine in ("mesa", "vector"):
        chunk = make_chunk(
            0,
            range(4, 31),
            game="fishery",
            parameters=params,
            n_cells=9,
            seeds=seeds,
            max_steps=60,
            engine=engine,
        )
        if engine == "mesa":
            mesa = run_batch_chunk(chunk)
        else:
            vector = run_batch_chunk(chunk)
    _compare(mesa, vector)
    assert mesa["Step"].max() > 10 and mesa.groupby("RunId")["Step"].max().nunique() > 1


def test_unsupported_fall_back_to_mesa() -> None:
    model = game_model("fishery")
    assert unsupported({}) is None
    assert "LLM" in unsupported({"llm_agents": 2})
    assert "text" in unsupported({"proposal_form": "text"})
    engine, why = choose_engine(model, {"llm_agents": [0, 1]}, 2)
    assert engine == "mesa" and "LLM" in why
    assert choose_engine(model, {"penalty": [2.0, 4.0]}, 2)[0] == "vector"
    assert choose_engine(model, {"penalty": [2.0]}, 1, "mesa")[0] == "mesa"
    with pytest.raises(ValueError, match="execution.engine"):
        choose_engine(model, {"proposal_form": ["text"]}, 1, "vector")


def test_batch_scenario_names_its_engine(tmp_path) -> None:
    """A bundled batch scenario uses the vector engine by itself and says so; forcing the Mesa
    model gives the same runs."""
    common = [
        "replications=2",
        "max_steps=15",
        "grid.penalty=[2.0,18.0]",
        "grid.growth_rate=[0.3,0.7]",
    ]
    run_scenario(
        "fishery/beta_growth_sweep", out_dir=tmp_path / "v", overrides=common, progress=False
    )
    run_scenario(
        "fishery/beta_growth_sweep",
        out_dir=tmp_path / "m",
        overrides=[*common, "execution.engine=mesa"],
        progress=False,
    )
    manifest = json.loads((tmp_path / "v" / "manifest.json").read_text())
    assert manifest["engine"]["name"] == "vector"
    assert json.loads((tmp_path / "m" / "manifest.json").read_text())["engine"]["name"] == "mesa"
    for table in ("runs", "steps"):
        _compare(
            pd.read_parquet(tmp_path / "m" / f"{table}.parquet"),
            pd.read_parquet(tmp_path / "v" / f"{table}.parquet"),
        )


def test_word_by_word_path_is_exact(monkeypatch) -> None:
    """The rare path taken after a rejected bounded draw gives what the fast path gives."""
    from mesa_dilemmas.dilemmas.fishery import vector

    monkeypatch.setattr(vector, "_ALWAYS_SLOW", True)
    params = {"n_agents": [3, 7], "population": ["typed"]}
    seeds = derive_seeds(5, 3)
    chunk = make_chunk(
        0, range(6), game="fishery", parameters=params, n_cells=2, seeds=seeds, max_steps=25
    )
    fast = make_chunk(
        0,
        range(6),
        game="fishery",
        parameters=params,
        n_cells=2,
        seeds=seeds,
        max_steps=25,
        engine="vector",
    )
    _compare(run_batch_chunk(chunk), run_batch_chunk(fast))


def test_buffered_draws_equal_the_generators() -> None:
    """The engine's buffered ``model.rng`` draws (bounded integers, doubles, and normals through
    the ziggurat read off numpy, its slow path and buffer refills included) are the Generator's
    own, call for call."""
    from mesa_dilemmas.dilemmas.fishery.vector import _Numpy

    seeds = list(range(40))
    ref = [np.random.default_rng(s) for s in seeds]
    engine = _Numpy([np.random.default_rng(s) for s in seeds], width=64)
    rows = np.arange(len(seeds))
    L = 2 + rows % 11
    for size in (3, 30, 60, 6, 45):
        u, picks = engine.draw(rows, L, doubles=True)
        for j, g in enumerate(ref):
            assert np.array_equal(u[j, : L[j]], g.random(L[j]))
            assert np.array_equal(picks[j, : L[j]], g.integers(0, L[j] - 1, size=L[j]))
        got = engine.normals(rows, np.full(len(seeds), size))
        want = np.concatenate([g.normal(0.0, 1.0, size=size) for g in ref])
        assert np.array_equal(got, want)
        _, picks = engine.draw(rows, L, doubles=False)
        for j, g in enumerate(ref):
            assert np.array_equal(picks[j, : L[j]], g.integers(0, L[j] - 1, size=L[j]))
