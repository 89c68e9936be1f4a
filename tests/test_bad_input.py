"""Bad input, as a hostile but ordinary user types it: exit 2, one line naming the field, nothing written.

The named cases are the regressions of issue 14; the hypothesis test generates malformed
scenarios and ``--set`` expressions from the schemas and checks the same contract for each.
"""

from __future__ import annotations

import math
import os
import tempfile
import typing
from pathlib import Path

import annotated_types
import pytest
import tomli_w
from cli_runner import cli_in_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mesa_dilemmas.dilemmas import game_model
from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.scenarios.config import Scenario


def assert_rejected(tmp: Path, args: list[str], field: str) -> str:
    """The contract: exit 2, exactly one line on stderr naming ``field``, nothing written."""
    out = tmp / "out"
    before = sorted(p.name for p in tmp.iterdir())
    code, err = cli_in_process(["run", *args, "--out", str(out), "--no-progress"])
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert field in lines[0], err
    assert not out.exists()
    assert sorted(p.name for p in tmp.iterdir()) == before  # not a byte anywhere else either
    return lines[0]


def write_scenario(tmp: Path, text: str | bytes, name: str = "bad.toml") -> str:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


# -- 1. non-finite numbers ---------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('game = "common_pool"\n[params]\ncapacity = inf\n', "params.capacity"),
        ('game = "fishery"\n[params]\npenalty = inf\n', "params.penalty"),
        ('game = "fishery"\n[params]\ngrowth_rate = nan\n', "params.growth_rate"),
        ('game = "fishery"\n[grid]\npenalty = [1.0, -inf]\n', "grid.penalty"),
        (
            'game = "public_goods"\nexperiment = "self_play:SelfPlayExperiment"\n'
            "[options]\ngame_params = { k = inf }\n",
            "options.game_params.k",
        ),
    ],
)
def test_non_finite_numbers_are_rejected(tmp_path, toml, field):
    assert_rejected(tmp_path, [write_scenario(tmp_path, toml)], field)


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "+inf"])
def test_non_finite_override_is_rejected(tmp_path, value):
    assert_rejected(
        tmp_path, ["common_pool/reference_mix", "--set", f"capacity={value}"], "params.capacity"
    )


# -- 2. booleans are not integers --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["fishery/altruism", "--set", "replications=true"], "replications"),
        (["fishery/altruism", "--set", "seed=false"], "seed"),
        (["fishery/altruism", "--set", "n_agents=true"], "params.n_agents"),
        (["public_goods/reference_mix", "--set", "grid.n_players=[4, true]"], "grid.n_players"),
        (["public_goods/self_play", "--set", "options.samples=true"], "options.samples"),
        (["fishery/altruism", "--set", "llm.max_retries=true"], "llm.max_retries"),
    ],
)
def test_booleans_are_not_numbers(tmp_path, args, field):
    assert_rejected(tmp_path, args, field)


# -- 3. relative module names ------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('game = "fishery"\nfigures = ["..evil:x"]\n', "figures[0]"),
        ('game = "fishery"\nexperiment = ".evil:Foo"\n', "experiment"),
        ('game = "fishery"\nexperiment = "batch:..Foo"\n', "experiment"),
        ('game = "fishery"\nexperiment = "no_such_module:Foo"\n', "experiment"),
    ],
)
def test_relative_or_missing_module_names(tmp_path, toml, field):
    assert_rejected(tmp_path, [write_scenario(tmp_path, toml)], field)


# -- 4. TOML that cannot be read ---------------------------------------------------


def test_deeply_nested_toml(tmp_path):
    line = assert_rejected(tmp_path, [write_scenario(tmp_path, "x = " + "[" * 100_000)], "bad.toml")
    assert len(line) < 300


def test_deeply_nested_override(tmp_path):
    assert_rejected(
        tmp_path, ["fishery/altruism", "--set", "notes.x=" + "[" * 100_000], "--set notes.x"
    )


def test_not_utf8(tmp_path):
    assert_rejected(
        tmp_path,
        [write_scenario(tmp_path, b'game = "fishery"\ndescription = "\xff\xfe"\n')],
        "not UTF-8",
    )


def test_scenario_that_is_a_directory(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    assert_rejected(tmp_path, [str(tmp_path / "dir.toml")], "dir.toml")


# -- 5. every check before the first byte ------------------------------------------


def test_missing_strategy_set(tmp_path):
    assert_rejected(
        tmp_path,
        ["public_goods/self_play", "--set", f'options.collective_set="{tmp_path}/nope"'],
        "options: strategy set",
    )


def test_empty_strategy_set(tmp_path):
    empty = tmp_path / "empty_set"
    empty.mkdir()
    (empty / "strategy_set.toml").write_text(
        'name = "empty"\nsource = "nobody"\nattitude = "collective"\n'
    )
    assert_rejected(
        tmp_path,
        ["public_goods/self_play", "--set", f'options.collective_set="{empty}"'],
        "has no strategies: no Strategy subclass",
    )


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ('["tft(0.5)", "nonsense(3)"]', "params.strategies: 'nonsense(3)'"),
        ("[]", "params.strategies"),
        ('["no_such_set:foo"]', "params.strategies: 'no_such_set:foo'"),
    ],
)
def test_strategy_specs_resolve(tmp_path, value, field):
    assert_rejected(tmp_path, ["public_goods/reference_mix", "--set", f"strategies={value}"], field)


def test_k_not_below_n_in_a_binary_game(tmp_path):
    assert_rejected(tmp_path, ["public_goods/reference_mix", "--set", "k=5"], "params.k")
    assert_rejected(
        tmp_path,
        ["public_goods/reference_mix", "--set", "grid.k=[2, 4]", "--set", "n_players=4"],
        "params.k",
    )


# -- 6. --out -----------------------------------------------------------------------


def test_out_onto_a_file(tmp_path):
    (tmp_path / "file").write_text("mine")
    code, err = cli_in_process(["run", "fishery/altruism", "--out", str(tmp_path / "file")])
    assert code == 2 and err.count("\n") == 1 and "--out" in err and "not a directory" in err
    assert (tmp_path / "file").read_text() == "mine"


def test_out_under_a_file(tmp_path):
    (tmp_path / "file").write_text("mine")
    code, err = cli_in_process(
        ["run", "fishery/altruism", "--out", str(tmp_path / "file" / "sub" / "run")]
    )
    assert code == 2 and err.count("\n") == 1 and "is not a directory" in err


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
def test_out_into_proc():
    code, err = cli_in_process(
        ["run", "fishery/altruism", "--out", "/proc/mesa-dilemmas-run", "--no-progress"]
    )
    assert code == 2 and err.count("\n") == 1 and "--out /proc/mesa-dilemmas-run" in err


# -- 7. --processes ---------------------------------------------------------------


def test_processes_one_rule_for_both_routes(tmp_path):
    line = assert_rejected(tmp_path, ["fishery/altruism", "--processes", "100000"], "processes")
    scenario_line = assert_rejected(
        tmp_path, ["fishery/altruism", "--set", "processes=100000"], "processes"
    )
    assert line == scenario_line
    assert_rejected(tmp_path, ["fishery/altruism", "--processes", "0"], "processes")


def test_processes_capped_at_the_cores(tmp_path):
    from mesa_dilemmas.scenarios.runner import cap_processes

    cores = os.cpu_count() or 1
    assert cap_processes(cores + 3) == cores
    assert cap_processes(cores + 3, force=True) == cores + 3
    assert cap_processes(1) == 1
    out = tmp_path / "run"
    code, err = cli_in_process(
        [
            "run",
            "fishery/altruism",
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "replications=1",
            "--set",
            "max_steps=2",
            "--processes",
            str(cores + 1),
        ]
    )
    assert code == 0, err
    assert f"capped at {cores}" in err
    assert f"processes = {cores}\n" in (out / "config.toml").read_text()


# -- 8. large runs ------------------------------------------------------------------


def test_huge_grid_needs_yes(tmp_path):
    values = ", ".join(str(1.5 + i / 1000) for i in range(1000))
    text = (
        'game = "public_goods"\nreplications = 2\n[params]\nn_players = 4\n'
        f"[grid]\nk = [{values}]\nrounds = [{', '.join(str(r) for r in range(1, 1001))}]\n"
    )
    line = assert_rejected(tmp_path, [write_scenario(tmp_path, text)], "run size: 2,000,000 runs")
    assert "--yes" in line and "about" in line  # time and disk estimates


def test_large_run_prints_its_size(tmp_path):
    out = tmp_path / "run"
    code, err = cli_in_process(
        [
            "run",
            "public_goods/reference_mix",
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "replications=400",
            "--set",
            "rounds=2",
            "--set",
            "max_steps=2",
        ]
    )
    assert code == 0, err
    assert "run size: 1,200 runs, about" in err


# -- the fuzz test: malformed scenarios and --set expressions from the schemas ------------


def _bounds(field) -> tuple[float | None, float | None]:
    low = high = None
    for meta in field.metadata:
        if isinstance(meta, annotated_types.Ge | annotated_types.Gt):
            low = meta.ge if isinstance(meta, annotated_types.Ge) else meta.gt
        if isinstance(meta, annotated_types.Le | annotated_types.Lt):
            high = meta.le if isinstance(meta, annotated_types.Le) else meta.lt
    return low, high


def _numeric_kind(annotation) -> type | None:
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if all(a is int for a in args):
        return int
    if all(a in (int, float) for a in args):
        return float
    return None


def _numeric_fields(model) -> list[tuple[str, type, float | None, float | None]]:
    out = []
    for name, field in model.model_fields.items():
        kind = _numeric_kind(field.annotation)
        if kind is not None:
            out.append((name, kind, *_bounds(field)))
    return out


GAMES = {
    "fishery": "fishery/altruism",
    "public_goods": "public_goods/reference_mix",
    "common_pool": "common_pool/reference_mix",
}
TOP = [f for f in _numeric_fields(Scenario)]
PARAMS = {g: _numeric_fields(params_model(game_model(g))) for g in GAMES}


@st.composite
def bad_value(draw, kind: type, low: float | None, high: float | None):
    choices = [
        st.sampled_from([math.inf, -math.inf, math.nan]),
        st.booleans(),
        st.text(alphabet="abcxyz", min_size=1, max_size=5),
        st.just([1, 2]),
        st.just({"a": 1}),
    ]
    if low is not None:
        choices.append(
            st.just(low - 1) if kind is int else st.floats(low - 100, low, exclude_max=True)
        )
    if high is not None:
        choices.append(
            st.just(high + 1) if kind is int else st.floats(high, high + 100, exclude_min=True)
        )
    if kind is int:
        choices.append(st.floats(0.1, 0.9))  # not an integer
    return draw(st.one_of(choices))


@st.composite
def malformed(draw):
    """(bundled scenario, TOML overrides or --set items, the field the error must name)."""
    game = draw(st.sampled_from(sorted(GAMES)))
    where = draw(st.sampled_from(["top", "params", "grid", "unknown"]))
    if where == "unknown":
        key = draw(st.from_regex(r"[a-z]{3,8}_zz", fullmatch=True))
        section = draw(st.sampled_from(["", "params."]))
        return GAMES[game], f"{section}{key}", 1, key
    if where == "top":
        name, kind, low, high = draw(st.sampled_from(TOP))
        return GAMES[game], name, draw(bad_value(kind, low, high)), name
    name, kind, low, high = draw(st.sampled_from(PARAMS[game]))
    value = draw(bad_value(kind, low, high))
    if where == "grid":
        return GAMES[game], f"grid.{name}", [value], f"grid.{name}"
    return GAMES[game], f"params.{name}", value, f"params.{name}"


def _toml_value(value) -> str:
    """A TOML literal (tables inline, so it fits in ``--set key=value``)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return tomli_w.dumps({"v": value}).partition("=")[2].strip()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=malformed(), route=st.sampled_from(["set", "file"]))
def test_fuzz_malformed_input_contract(case, route):
    scenario, key, value, field = case
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        if route == "set":
            args = [scenario, "--set", f"{key}={_toml_value(value)}"]
        else:
            from mesa_dilemmas.scenarios.config import load_raw

            raw = load_raw(scenario)
            node = raw
            *parents, last = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = value
            if parents == ["params"]:
                raw.get("grid", {}).pop(last, None)
            if parents == ["grid"]:
                raw.get("params", {}).pop(last, None)
            args = [write_scenario(tmp_path, tomli_w.dumps(raw), "fuzz.toml")]
        assert_rejected(tmp_path, args, field)
