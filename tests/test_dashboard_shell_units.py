"""The dashboard shell's pieces without a browser: value boxes, captions, themes, saved scenarios,
the compare model."""

from __future__ import annotations

import math
import tomllib
from typing import Annotated

import mesa
import pytest
from pydantic import Field

from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.dilemmas.fishery.page import COMPARE
from mesa_dilemmas.scenarios.batch import derive_seeds
from mesa_dilemmas.scenarios.config import validate
from mesa_dilemmas.viz.dashboard import vega
from mesa_dilemmas.viz.dashboard.app import PAGES
from mesa_dilemmas.viz.dashboard.charts import Series
from mesa_dilemmas.viz.dashboard.compare import CompareModel, setting_specs
from mesa_dilemmas.viz.dashboard.components import (
    default_params,
    latest_caption,
    latest_values,
)
from mesa_dilemmas.viz.dashboard.inputs import parse_number, show_number
from mesa_dilemmas.viz.dashboard.runtime import DashboardModel, model_seed
from mesa_dilemmas.viz.dashboard.save_scenario import scenario_dict, scenario_toml

INT = {"type": "SliderInt", "min": 2, "max": 40, "step": 1}
FLOAT = {"type": "SliderFloat", "min": 0.0, "max": 2.0, "step": 0.05}


def test_the_value_box_takes_numbers_within_the_sliders_range_only() -> None:
    assert parse_number("12", INT) == 12 and parse_number(" 12.0 ", INT) == 12
    assert parse_number("12.5", INT) is None  # a whole-number slider
    assert parse_number("41", INT) is None and parse_number("1", INT) is None
    assert parse_number("abc", INT) is None and parse_number("", INT) is None
    assert parse_number("nan", FLOAT) is None and parse_number("inf", FLOAT) is None
    assert parse_number("0.35", FLOAT) == pytest.approx(0.35)
    assert show_number(0.1 + 0.2, FLOAT) == "0.3" and show_number(12.0, INT) == "12"


def test_units_come_from_the_parameter_schema() -> None:
    from mesa_dilemmas.viz.dashboard import controls as c

    class Toy(mesa.Model):
        def __init__(
            self, depth: Annotated[float, Field(ge=0, le=9, json_schema_extra={"unit": "m"})] = 1.0
        ) -> None:
            super().__init__()

    assert c.slider(Toy, "depth")["unit"] == "m"
    assert c.slider(FisheryModel, "capacity", low=50, high=1000)["unit"] == "fish"
    assert "unit" not in c.slider(FisheryModel, "growth_rate")
    assert c.llm_controls()["llm_max_tokens"]["unit"] == "tokens"


def test_a_line_charts_caption_names_every_series_at_the_last_round() -> None:
    spec = vega.line(
        "t",
        [Series("compliance", [1.0, 0.5, 0.25]), Series("mean effort", [0.4, 0.6], x=[1, 2])],
    )
    x, values = latest_values(spec)
    assert x == 2 and values == {"compliance": 0.25, "mean effort": 0.6}
    assert latest_caption(spec) == "round 2: compliance 0.25 · mean effort 0.6"
    assert latest_caption(spec, "generation").startswith("generation 2: ")
    assert latest_caption(vega.line("t", [])) == ""  # nothing played yet: no caption
    assert latest_caption(vega.bars("t", ["a"], {"g": [1.0]})) == ""  # not a line chart


def test_the_pages_seed_is_replication_0_of_a_scenario_with_that_seed() -> None:
    assert model_seed(42) == derive_seeds(42, 1)[0]
    page = next(p for p in PAGES if p.path == "fishery")
    model = DashboardModel(**default_params({"page": page, **page.controls()}))
    direct = FisheryModel(rng=model_seed(42))
    for _ in range(3):
        model.step()
        direct.step()
    assert model.view.series["stock"][-1] == direct.datacollector.model_vars["stock"][-1]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path)
def test_every_pages_saved_scenario_validates(page) -> None:  # noqa: ANN001
    params = default_params({"page": page, **page.controls()})
    model = DashboardModel(**params)
    raw = tomllib.loads(scenario_toml(model))
    scenario, _ = validate(raw)
    assert scenario.seed == model.seed and scenario.replications == 1


def test_llm_players_are_saved_as_a_population_with_their_seats() -> None:
    page = next(p for p in PAGES if p.path == "public_goods")
    params = {**default_params({"page": page, **page.controls()}), "n_llm": 2}
    params.update(llm_provider="openai", llm_model="m@http://127.0.0.1:9/v1")
    model = DashboardModel(**params)  # nothing listens there: only its settings are read
    raw = scenario_dict(model)
    groups = raw["population"]["groups"]
    assert groups[0] == {"llm": "openai:m@http://127.0.0.1:9/v1", "seats": [0, 1]}
    assert sum(len(g["seats"]) for g in groups) == raw["params"]["n_players"]
    assert raw["llm"] == {"answer_mode": "native", "max_tokens": 256}
    validate(raw)


def test_the_compare_model_plays_both_settings_from_one_seed() -> None:
    a = default_params(setting_specs(COMPARE.page))
    b = {**a, **COMPARE.b_defaults(setting_specs(COMPARE.page))}
    model = CompareModel(compare=COMPARE, a=a, b=b, rng="5")
    assert model.error is None and model.seed == 5
    assert model.differences() == [("punishment", "yes", "no")]
    for _ in range(3):
        model.step()
    assert model.round == 3 and model.sides["A"].round == model.sides["B"].round == 3
    start_a = model.sides["A"].view.series["stock"][0]
    assert start_a == model.sides["B"].view.series["stock"][0]
    assert sum(model.sides["B"].view.series["punishments"]) == 0
    bad = CompareModel(compare=COMPARE, a=a, b=b, rng="x")
    assert bad.error is not None and "seed" in bad.error and not bad.running
    assert not math.isnan(model.sides["A"].view.series["stock"][-1])
