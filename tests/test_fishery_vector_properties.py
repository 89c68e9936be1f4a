"""The fishery's vectorised engine cannot silently fall behind the Mesa model.

- Every model parameter is declared by the engine: run at every value (``SUPPORTED``), changes
  nothing with rule villagers alone (``INERT``), or run at some values only (``ONLY``). A
  parameter added to the model and declared nowhere fails here, and until it is declared a sweep
  that sets it runs on the Mesa model (the allow-list).
- Property-based equality: hypothesis draws every supported and inert parameter at once, over
  the range the model accepts (numbers bounded to sizes a test can run), and the two engines
  must write identical rows on the same seeds (``norm_similarity`` / ``norm_alignment`` to
  1e-12, as in ``test_fishery_vector.py``). ``derandomize`` keeps CI's draws fixed.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.dilemmas.fishery import vector
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.scenarios.batch import derive_seeds
from mesa_dilemmas.scenarios.batch_chunks import choose_engine, make_chunk, run_batch_chunk
from tests.test_fishery_vector import _compare

#: what a scenario may set: the model's ``Parameters`` and its ``Shorthands`` (llm_agents, llm)
MODEL_PARAMETERS = set(params_model(FisheryModel).model_fields)


def _frac() -> st.SearchStrategy[float]:
    return st.floats(0.0, 1.0, allow_subnormal=False)


def _num(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_subnormal=False)


#: a strategy for every parameter the engine runs or ignores: the model's own bounds where it
#: has them, sizes a test can afford where it has none (capacity, wealth, fines)
DRAWS: dict[str, st.SearchStrategy] = {
    "n_agents": st.integers(2, 12),
    "capacity": _num(20.0, 1000.0),
    "growth_rate": _num(0.0, 2.0),
    "initial_stock": _frac(),
    "catchability": _num(0.001, 1.0),
    "consumption": _num(0.0, 10.0),
    "initial_wealth": _num(0.0, 200.0),
    "collapse_threshold": _num(0.0, 300.0),
    "penalty": _num(0.0, 40.0),
    "punish_cost": _num(0.0, 10.0),
    "punishment": st.booleans(),
    "punishment_off_at": st.integers(0, 30),
    "regrowth": st.sampled_from(["logistic", "doubling"]),
    "population": st.sampled_from(["general", "typed"]),
    "altruism_ratio": _frac(),
    "punisher_profile": st.sampled_from(["table", "text"]),
    "monitoring_min": _frac(),
    "monitoring_max": _frac(),
    "selection_strength": _num(0.0, 20.0),
    "mutation_sd": _num(0.0, 0.5),
    "norm_mutation_sd": _num(0.0, 5.0),
    "payoff_ema": st.floats(0.0, 1.0, exclude_min=True, allow_subnormal=False),  # gt=0
    "revision_rate": _frac(),
    "respect_personal_cap": st.booleans(),
    "sanction_learning": _num(0.0, 1.0),
    "fine_per_punisher": st.booleans(),
    "efficiency_horizon": st.integers(1, 40),
    "social_learning": st.booleans(),
    "group_decision": st.booleans(),
    "stop_at_collapse": st.booleans(),
    "llm": st.sampled_from(["local", "openai:gpt-4o-mini"]),
    "peers_sampled": st.integers(1, 20),
    "universalization_hint": st.booleans(),
}


def test_every_model_parameter_is_declared_once() -> None:
    declared = [vector.SUPPORTED, vector.INERT, set(vector.ONLY)]
    union = set().union(*declared)
    assert MODEL_PARAMETERS - union == set(), (
        "model parameters the vectorised engine never declares"
    )
    assert union - MODEL_PARAMETERS == set(), "declared names that are no model parameter"
    assert sum(map(len, declared)) == len(union), "a parameter declared twice"


def test_every_run_parameter_is_drawn() -> None:
    """The equality test below varies every parameter the engine runs or ignores."""
    assert set(DRAWS) == vector.SUPPORTED | vector.INERT


def test_an_undeclared_parameter_sends_the_sweep_to_mesa(monkeypatch) -> None:
    """A parameter the engine does not declare is never run there: the sweep falls back."""
    model = game_model("fishery")
    assert choose_engine(model, {"penalty": [2.0]}, 1)[0] == "vector"
    monkeypatch.setattr(vector, "SUPPORTED", vector.SUPPORTED - {"penalty"})
    engine, why = choose_engine(model, {"penalty": [2.0]}, 1)
    assert engine == "mesa" and why.startswith("penalty: not a parameter")


def test_model_and_engine_write_the_same_reporters() -> None:
    model = FisheryModel(rng=1)
    columns = list(model.datacollector.get_model_vars_dataframe().columns)
    assert columns == list(FisheryModel.STEP_REPORTERS) == list(vector.REPORTERS)


@st.composite
def _cells(draw: st.DrawFn) -> dict:
    cell = {name: draw(strategy) for name, strategy in DRAWS.items()}
    low, high = sorted((cell["monitoring_min"], cell["monitoring_max"]))
    cell["monitoring_min"], cell["monitoring_max"] = low, high
    if cell["regrowth"] != "doubling":  # the model refuses the hint without GovSim's regrowth
        cell["universalization_hint"] = False
    return cell


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(cell=_cells(), seed=st.integers(0, 2**31))
def test_vector_equals_mesa_on_any_parameters(cell: dict, seed: int) -> None:
    params = {key: [value] for key, value in cell.items()}
    seeds = derive_seeds(seed, 3)
    rows = {
        engine: run_batch_chunk(
            make_chunk(
                0,
                range(3),
                game="fishery",
                parameters=params,
                n_cells=1,
                seeds=seeds,
                max_steps=30,
                engine=engine,
            )
        )
        for engine in ("mesa", "vector")
    }
    _compare(rows["mesa"], rows["vector"])
