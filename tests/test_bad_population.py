"""A ``[population]`` that cannot seat its game is refused before anything is written: exit 2,
one line naming the group and what is allowed (issue: bad input, the rest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import cli_in_process

CASES = [
    ("fishery", '{ factory = "nosuch_module_xyz:f", count = 1 }', "cannot load it"),
    ("fishery", '{ factory = "os:sep", count = 1 }', "not a callable"),
    ("fishery", '{ factory = "os.path:join", count = 1 }', "f(model=, seat=, persona=)"),
    ("fishery", '{ factory = ".relative:f", count = 1 }', "absolute module names"),
    ("fishery", '{ rule = "nobody", count = 1 }', "unknown rule player; allowed: rule"),
    ("fishery", '{ strategy = "all_c", count = 1 }', "seats no strategy players"),
    ("fishery", '{ llm = "local", count = 1, llm_options = { tempreature = 0.1 } }',
     "llm_options.tempreature: unknown setting"),
    ("fishery", '{ rule = "rule", seats = [] }', "give at least one seat"),
    ("fishery", '{ rule = "rule", count = 1, persona = { disposition = "saintly" } }',
     "persona.disposition: 'saintly' is not one of general, altruistic, selfish"),
    ("fishery", '{ rule = "rule", fraction = 0.7 }, { rule = "rule", fraction = 0.6 }',
     "the fractions add up to 1.3"),
    ("port_of_mars", '{ rule = "nobody", count = 1 }', "unknown rule player"),
    ("public_goods", '{ strategy = "nosuch", count = 1 }', "unknown reference strategy"),
    ("public_goods", '{ strategy = "/nonexistent/set.json:x", count = 1 }', "no such set"),
    ("public_goods", '{ rule = "rule", count = 1 }', "seats no rule players"),
    ("public_goods", '{ strategy = "tft(2.0)", count = 1 }', "q must be a number from 0 to 1"),
    ("public_goods", '{ strategy = "all_c", seats = [7] }', "seat 7 >= 4 players"),
    ("public_goods", '{ strategy = "all_c", seats = [1] }, { strategy = "all_d", seats = [1] }',
     "seat 1 claimed twice"),
    ("port_of_mars", '{ rule = "rule", seats = [7] }', "seat 7 >= 5 players"),
]  # fmt: skip


@pytest.mark.parametrize(("game", "group", "says"), CASES, ids=[c[2][:24] for c in CASES])
def test_a_population_the_game_cannot_seat_is_one_line_and_writes_nothing(
    tmp_path: Path, game: str, group: str, says: str
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'game = "{game}"\nmax_steps = 1\n[population]\ngroups = [{group}]\n')
    out = tmp_path / "out"
    code, err = cli_in_process(["run", str(scenario), "--out", str(out), "--no-progress"])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "population." in lines[0] and says in lines[0], lines[0]
    assert not out.exists()
