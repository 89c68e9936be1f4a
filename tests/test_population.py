"""Populations: who plays is data, built outside the games; shorthands expand into the same thing."""

from __future__ import annotations

import numpy as np
import pytest

from mesa_dilemmas.agents.population import Group, Population, population_table
from mesa_dilemmas.dilemmas.base import build_model, shorthand_names
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.dilemmas.port_of_mars.model import PortOfMarsModel
from mesa_dilemmas.dilemmas.public_goods.model import PublicGoodsModel
from mesa_dilemmas.dilemmas.registry import game_model
from mesa_dilemmas.scenarios.config import ConfigError, bundled_scenarios, load_raw, validate


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"groups": [{"llm": "local", "rule": "rule", "count": 1}]}, "exactly one of"),
        ({"groups": [{"count": 1}]}, "exactly one of"),
        (
            {"groups": [{"llm": "local", "count": 1, "fraction": 0.5}]},
            "one of count, fraction, seats",
        ),
        ({"groups": [{"llm": "local", "count": True}]}, "population.groups.0.count"),
        ({"groups": [{"llm": "local", "fraction": 1.5}]}, "population.groups.0.fraction"),
        ({"placement": "middle"}, "population.placement"),
        ({"teams": []}, "population.teams"),
    ],
)
def test_a_bad_population_table_is_one_line_naming_the_field(table, message):
    with pytest.raises(ValueError, match=message):
        population_table(table)


@pytest.mark.parametrize(
    ("game", "field", "other_game_field"),
    [("fishery", "disposition", "svo_angle"), ("port_of_mars", "svo_angle", "disposition")],
)
def test_persona_fields_are_the_games_own(game, field, other_game_field):
    """A population table knows no game: the game's persona type says which persona fields a
    group may set, when the scenario is checked and when the model is built."""
    from mesa_dilemmas.dilemmas.base import build_model
    from mesa_dilemmas.dilemmas.registry import game_model
    from mesa_dilemmas.scenarios.population_check import check_population

    model_cls = game_model(game)
    value = {"disposition": "selfish", "svo_angle": 30.0}
    own = {"groups": [{"rule": "rule", "count": 1, "persona": {field: value[field]}}]}
    assert field in model_cls.PERSONA.field_names() and check_population(model_cls, own) == []
    other = {
        "groups": [
            {"rule": "rule", "count": 1, "persona": {other_game_field: value[other_game_field]}}
        ]
    }
    (problem,) = check_population(model_cls, other)
    assert f"unknown field {other_game_field!r}" in problem
    with pytest.raises(ValueError, match=f"persona: unknown field {other_game_field!r}"):
        build_model(model_cls, {"players": other}, 1)


def test_seats_counts_and_fractions_are_placed_without_overlap():
    pop = Population(
        groups=[
            Group(llm="replay:a", seats=[0, 1]),
            Group(llm="replay:b", count=3),
            Group(rule="rule", fraction=0.25),
        ]
    )
    seats = pop.assign(10, np.random.default_rng(1))
    assert seats[0] is seats[1] is pop.groups[0]
    assert sum(s is pop.groups[1] for s in seats) == 3
    assert sum(s is pop.groups[2] for s in seats) == 3  # round(0.25 * 10)
    assert sum(s is None for s in seats) == 2  # the game's default rule player
    first = Population(groups=[Group(llm="replay:a", count=2)], placement="first")
    assert [s is not None for s in first.assign(4, np.random.default_rng(0))] == [
        True,
        True,
        False,
        False,
    ]


def test_a_population_without_counted_groups_draws_nothing():
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    Population(groups=[Group(rule="rule", seats=[1])]).assign(4, rng)
    assert rng.bit_generator.state == state


@pytest.mark.parametrize(
    ("pop", "n", "message"),
    [
        (Population(groups=[Group(llm="x", count=5)]), 4, "5 players asked for, the game has 4"),
        (Population(groups=[Group(llm="x", seats=[4])]), 4, "seat 4 >= 4 players"),
        (
            Population(groups=[Group(llm="x", seats=[1]), Group(rule="rule", seats=[1])]),
            4,
            "claimed twice",
        ),
        (Population(roles={"judge": Group(llm="x")}), 4, "roles.judge: unknown role"),
    ],
)
def test_a_population_that_does_not_fit_the_game_is_rejected(pop, n, message):
    with pytest.raises(ValueError, match=message):
        pop.check(n, roles=("meeting",))


def _policies(model) -> list[str]:
    return [a.policy.name for a in sorted(model.agents, key=lambda a: a.slot)]


def test_fishery_shorthand_and_population_build_the_same_lake():
    short = build_model(FisheryModel, {"n_agents": 6, "llm_agents": 2, "llm": "replay:local"}, 3)
    table = {"groups": [{"llm": "replay:local", "count": 2}]}
    full = FisheryModel(n_agents=6, players=table, rng=3)
    assert _policies(short) == _policies(full)
    language = short.seats.get("language")
    assert language == full.seats.get("language") and sum(language) == 2
    assert [a.norm_text for a in short.villagers] == [a.norm_text for a in full.villagers]
    np.testing.assert_array_equal(
        short.seats.get("strategy_effort"), full.seats.get("strategy_effort")
    )


def test_several_models_and_rule_players_in_one_game():
    table = {
        "groups": [
            {"llm": "replay:openai:gpt-4o", "seats": [0]},
            {"llm": "replay:local", "seats": [1], "persona": {"svo_angle": 45.0}},
        ],
        "roles": {"meeting": {"rule": "rule"}},
    }
    model = PortOfMarsModel(players=table, rng=1)
    names = _policies(model)
    assert names[0].startswith("llm:") and "gpt-4o" in names[0]
    assert names[1].startswith("llm:") and "local" in names[1]
    assert names[2:] == ["rule", "rule", "rule"]
    assert model.player(1).persona.svo_angle == 45.0
    assert (
        model.broker.narrator.name == "rule_narrator"
    )  # the meeting writer is a role of the population


def test_port_of_mars_shorthand_expands_to_seats_and_the_meeting_writer():
    pop = PortOfMarsModel.population_from_params({"llm_players": 2, "llm": "openai:gpt-4o"})
    assert pop.groups[0].seats == [0, 1] and pop.groups[0].llm == "openai:gpt-4o"
    assert pop.roles["meeting"].rule == "rule"  # LLM players do not make the meeting an LLM's
    written = PortOfMarsModel.population_from_params(
        {"llm_players": 2, "llm": "openai:gpt-4o", "meeting_writer": "llm"}
    )
    assert written.roles["meeting"].llm == "openai:gpt-4o"
    assert PortOfMarsModel.llm_specs({"llm_players": 2, "llm": "openai:gpt-4o"}) == {
        "openai:gpt-4o"
    }
    assert PortOfMarsModel.llm_specs({"llm_players": 0}) == set()


def test_strategy_groups_in_a_binary_game():
    model = PublicGoodsModel(
        n_players=4,
        strategies=("all_d",),
        players={"groups": [{"strategy": "all_c", "count": 2}]},
        rng=0,
    )
    assert sorted(_policies(model)) == [
        "strategy:all_c",
        "strategy:all_c",
        "strategy:all_d",
        "strategy:all_d",
    ]


def test_scenario_population_table_is_validated_and_becomes_the_players_parameter(tmp_path):
    raw = {
        "name": "t",
        "game": "fishery",
        "params": {"n_agents": 4},
        "population": {"groups": [{"llm": "local", "count": 9}]},
    }
    with pytest.raises(
        ConfigError, match="params.population.groups: 9 players asked for, the game has 4"
    ):
        validate(raw)
    raw["population"] = {"groups": [{"llm": "local", "count": 1}]}
    scenario, _ = validate(raw)
    assert scenario.params["players"] == raw["population"]


SHORTHANDS = ("llm_agents", "llm_players", "policy_factory")


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_every_bundled_scenario_validates_and_its_shorthand_equals_its_population(name):
    """Older keys expand into a population; building the model either way is the same model."""
    scenario, _ = validate(load_raw(name))
    if scenario.experiment != "batch":
        return
    model_cls = game_model(scenario.game)
    for point in scenario.grid_points() or [{}]:
        params = {**scenario.params, **point}
        if not any(params.get(k) not in (None, 0, "rule") for k in SHORTHANDS):
            continue
        expanded = model_cls.population_from_params(params)
        shorthands = {*SHORTHANDS, *shorthand_names(model_cls)}
        explicit = {k: v for k, v in params.items() if k not in shorthands} | {
            "players": expanded.model_dump(exclude_defaults=True)
        }
        replay = {k: (f"replay:{v}" if k == "llm" else v) for k, v in params.items()}
        a = build_model(model_cls, replay, 11)
        b = model_cls(**{k: v for k, v in explicit.items() if k != "llm"}, rng=11)
        assert [p.removeprefix("llm:replay:") for p in _policies(a)] == [
            p.removeprefix("llm:") for p in _policies(b)
        ] or _policies(a) == _policies(b)
