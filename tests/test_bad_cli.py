"""Command-line mistakes and bad parameter values: one line naming the argument or field and
what is allowed, exit 2, nothing written (issue: bad input, the rest)."""

from __future__ import annotations

import importlib.util
import typing

import annotated_types
import pytest
from cli_runner import cli, cli_in_process

from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.dilemmas.registry import game_model, games
from mesa_dilemmas.scenarios.config import ConfigError, validate


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_unknown_format_is_one_line():
    done = cli("run", "fishery/punishment_shock", "--format", "gif")
    assert done.returncode == 2 and "--format" in one_line(done.stderr) and "png" in done.stderr


@pytest.mark.parametrize("name", ["", "file"])
def test_an_out_that_is_empty_or_a_file_is_refused_before_anything_runs(tmp_path, name):
    (tmp_path / "file").write_text("keep")
    out = str(tmp_path / name) if name else ""
    for command in (["run", "fishery/punishment_shock"], ["reproduce", "--tiny"]):
        code, err = cli_in_process([*command, "--out", out, "--no-progress"])
        assert code == 2 and "--out" in one_line(err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    assert (tmp_path / "file").read_text() == "keep"


def test_an_out_that_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    code, err = cli_in_process(["reproduce", "--tiny", "--out", str(tmp_path / "file" / "x")])
    assert code == 2 and "is not a directory" in one_line(err)


def test_a_set_value_that_is_not_utf8_is_named():
    value = b"penalty=\xff".decode("utf-8", "surrogateescape")
    code, err = cli_in_process(["run", "fishery/punishment_shock", "--set", value])
    assert code == 2 and "--set penalty: the value is not UTF-8 text" in one_line(err)


@pytest.mark.parametrize("port", ["-1", "70000", "http"])
def test_a_dashboard_port_out_of_range_is_one_line(port):
    done = cli("dashboard", "--port", port, "--no-assets")
    assert done.returncode == 2 and "0-65535" in one_line(done.stderr)


def test_a_record_dir_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    done = cli("dashboard", "--record-dir", str(tmp_path / "file"), "--port", "0", "--no-assets")
    assert done.returncode == 2 and "--record-dir" in one_line(done.stderr)


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")
def test_a_ray_address_where_nothing_answers_is_one_line_before_ray_starts(tmp_path):
    out = tmp_path / "out"
    for address, says in (("127.0.0.1:1", "nothing answers there"), ("bogus", "host:port")):
        code, err = cli_in_process(
            [
                "run",
                "fishery/punishment_shock",
                "--backend",
                "ray",
                "--address",
                address,
                "--out",
                str(out),
            ]  # fmt: skip
        )
        assert code == 2 and says in one_line(err) and "execution.address" in err
    assert not out.exists()


# -- every schema field of every game rejects a wrong type and an out-of-range value ---------


def wrong_values(annotation, metadata) -> list[object]:
    """A value of the wrong type, and values just outside the declared bounds or choices."""
    out: list[object] = [{"not": "a value"}]
    if typing.get_origin(annotation) is typing.Literal:
        out.append("no-such-choice")
    for c in metadata:
        if isinstance(c, annotated_types.Ge):
            out.append(c.ge - 1)
        elif isinstance(c, annotated_types.Gt):
            out.append(c.gt)
        elif isinstance(c, annotated_types.Le):
            out.append(c.le + 1)
        elif isinstance(c, annotated_types.Lt):
            out.append(c.lt)
    return out


CASES = [
    (game, name, value)
    for game in games()
    for name, info in params_model(game_model(game)).model_fields.items()
    for value in wrong_values(info.annotation, info.metadata)
]


@pytest.mark.parametrize(
    ("game", "field", "value"), CASES, ids=[f"{g}.{f}={v!r}" for g, f, v in CASES]
)
def test_every_parameter_rejects_a_wrong_type_and_an_out_of_range_value(game, field, value):
    with pytest.raises(ConfigError) as err:
        validate({"name": "t", "game": game, "params": {field: value}})
    message = str(err.value)
    assert "\n" not in message and field in message, message
