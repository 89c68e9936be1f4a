"""Issue 36, parent-side parsing: what the run reads itself is bounded and fails in one line.

A manifest nested 100,000 deep, a manifest larger than the limit, an output directory that
cannot be made (under /proc): ``analyse strategies``, ``run`` and ``strategies generate`` end
with exit 2 and one line naming the set and the problem -- no traceback -- before any work
starts.  (Before issue 36: RecursionError tracebacks, a "options: maximum recursion depth
..." line, and a FileNotFoundError traceback from ``strategies generate --out /proc/x``.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.binary.strategies.loader import MAX_FILE_BYTES

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux paths")

SCENARIO = """
description = "self-play with a set that cannot be read"
experiment = "self_play:SelfPlayExperiment"
game = "public_goods"
seed = 1
processes = 1

[options]
collective_set = "{bad}"
group_sizes = [3]
samples = 1
rounds = 2
"""


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.fixture(params=["deep", "huge"])
def bad_set(request, tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / request.param
    folder.mkdir()
    if request.param == "deep":
        text = 'name = "deep"\nx = ' + "[" * 100_000 + "]" * 100_000 + "\n"
        why = "nests too deeply"
    else:
        text = 'name = "huge"\n' + "# padding\n" * (MAX_FILE_BYTES // 10 + 1)
        why = "larger than the limit"
    (folder / "strategy_set.toml").write_text(text)
    return folder, why


def test_analyse_strategies_refuses_in_one_line(bad_set, tmp_path: Path, capsys) -> None:
    folder, why = bad_set
    code = main(["analyse", "strategies", str(folder), "--out", str(tmp_path / "out")])
    assert code == 2
    assert why in _one_line_error(capsys)
    assert not (tmp_path / "out").exists()


def test_run_refuses_in_one_line_naming_the_set_and_why(bad_set, tmp_path: Path, capsys) -> None:
    folder, why = bad_set
    config = tmp_path / "bad.toml"
    config.write_text(SCENARIO.format(bad=folder))
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert why in err and f"strategy set {folder}" in err


@pytest.mark.parametrize(
    "args",
    [
        [
            "strategies",
            "generate",
            "--game",
            "public_goods",
            "--attitude",
            "collective",
            "--model",
            "local",
            "-n",
            "2",
            "--out",
            "/proc/x",
        ],
        ["analyse", "strategies", "reference_collective", "--out", "/proc/x"],
    ],
)
def test_an_output_directory_that_cannot_be_made_is_refused_first(args, capsys) -> None:
    assert main(args) == 2
    assert "/proc" in _one_line_error(capsys)
