"""The command line answers without importing what it does not need: ``--help``, ``scenarios``
and argument errors import neither Mesa nor a game's model; a shared command is listed by its
one-line help and built in full only when it is the command.  (How fast that is, is measured by
``benchmarks/bench_cli.py``, not here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import import_module

import pytest

from mesa_dilemmas.cli import SHARED_COMMANDS, build_parser, chosen_command

PROBE = """
import json, sys
from mesa_dilemmas.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("mesa", "pandas", "numpy", "mesa_dilemmas.dilemmas.base",
                            "mesa_dilemmas.llm", "mesa_dilemmas.dilemmas.fishery.model")
               if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def imported_by(*argv: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120
    )
    return json.loads(result.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("argv", "code"),
    [(["--help"], 0), (["scenarios"], 0), (["rnu"], 2), (["run"], 2)],
)
def test_listing_and_argument_errors_import_no_game_and_no_mesa(argv, code):
    found = imported_by(*argv)
    assert found["code"] == code and found["heavy"] == [], found


def test_a_chosen_command_is_built_from_its_module():
    assert "mesa" in imported_by("params", "fishery")["heavy"]  # it loads the game
    assert "mesa_dilemmas.llm" in imported_by("llm", "--help")["heavy"]


def test_each_shared_command_is_listed_with_the_help_its_module_gives_it():
    full = build_parser()  # every command in full
    subparsers = next(a for a in full._actions if a.dest == "command")
    helps = {c.dest: c.help for c in subparsers._choices_actions}
    for name, (module, help_text) in SHARED_COMMANDS.items():
        import_module(module)
        assert helps[name] == help_text, name
    lazy = build_parser("")
    listed = next(a for a in lazy._actions if a.dest == "command")
    assert {c.dest: c.help for c in listed._choices_actions} == helps


def test_the_chosen_command_is_the_first_word_that_is_no_option():
    assert chosen_command(["run", "fishery/altruism", "--set", "x=1"]) == "run"
    assert chosen_command(["--help"]) is None and chosen_command([]) is None
