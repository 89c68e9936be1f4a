"""What a new user meets on the command line: suggestions for misspelt keys and names, a
wrapped scenario list, a per-cell summary, a labelled progress bar, figures as PNG/SVG/PDF
with labelled reference lines and error bars."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from cli_runner import cli
from matplotlib.container import BarContainer

from mesa_dilemmas.cli import main, scenario_listing
from mesa_dilemmas.scenarios.config import bundled_scenarios, load_raw

SMALL = ["--set", "replications=2", "--set", "max_steps=12", "--no-progress"]
REPO = Path(__file__).resolve().parent.parent


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


# -- suggestions -------------------------------------------------------------


def test_set_replication_suggests_the_scenario_field_replications(tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["run", "fishery/altruism", "--set", "replication=5", "--out", str(out)]) == 2
    line = _one_error_line(capsys)
    assert line.startswith("error: params.replication: unknown key (did you mean 'replications'")
    assert "--set replications=" in line and "'population'" not in line.split("allowed")[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--set", "penalti=3"], "params.penalti: unknown key (did you mean 'penalty'?)"),
        (
            ["--set", "grid.growth_rat=[0.2]"],
            "grid.growth_rat: unknown parameter (did you mean 'growth_rate'?)",
        ),
        (
            ["--set", "options.replications_per_chunck=2"],
            "options.replications_per_chunck: unknown key (did you mean 'replications_per_chunk'?)",
        ),
        (
            ["--set", "execution.backnd=local"],
            "execution.backnd: unknown key (did you mean 'backend'?)",
        ),
        (["--set", "game=fishry"], "(did you mean 'fishery'?)"),
    ],
)
def test_misspelt_keys_get_the_closest_valid_ones(tmp_path, capsys, args, expected):
    out = tmp_path / "never"
    assert main(["run", "fishery/altruism", *args, "--out", str(out)]) == 2
    assert expected in _one_error_line(capsys)
    assert not out.exists()


def test_unknown_toml_keys_get_suggestions(tmp_path, capsys):
    for text, expected in (
        (
            'game = "fishery"\nreplicates = 3\n',
            "replicates: unknown key (did you mean 'replications'?)",
        ),
        ('game = "fishery"\n[params]\ngrowth_rat = 0.3\n', "(did you mean 'growth_rate'?)"),
    ):
        path = tmp_path / "mine.toml"
        path.write_text(text)
        assert main(["run", str(path), "--out", str(tmp_path / "never")]) == 2
        assert expected in _one_error_line(capsys)
    assert not (tmp_path / "never").exists()


def test_unknown_scenario_names_get_the_closest_bundled_ones(capsys):
    assert main(["run", "fishery/punishment_shok"]) == 2
    assert "(did you mean 'fishery/punishment_shock'?)" in _one_error_line(capsys)
    assert main(["run", "port_of_mars/comunication"]) == 2
    line = _one_error_line(capsys)
    assert (
        "(did you mean 'port_of_mars/communication' or 'port_of_mars/llm_communication'?)" in line
    )
    assert main(["run", "fishery/zzzz"]) == 2
    assert "did you mean" not in _one_error_line(capsys)  # nothing close: no guess


# -- the scenario list ---------------------------------------------------------


@pytest.mark.parametrize("columns", [60, 120])
def test_scenarios_wrap_to_the_terminal_and_lose_no_word(monkeypatch, capsys, columns):
    monkeypatch.setenv("COLUMNS", str(columns))  # what shutil.get_terminal_size reads first
    assert main(["scenarios"]) == 0
    listing = capsys.readouterr().out
    lines = listing.splitlines()
    assert max(len(line) for line in lines) <= columns
    text = " ".join(listing.split())
    for name in bundled_scenarios():
        assert any(line.startswith(name) for line in lines), name
        assert " ".join(load_raw(name).get("description", "").split()) in text


def test_scenarios_piped_are_wrapped_at_100_columns():
    env_columns = os.environ.pop("COLUMNS", None)
    try:
        result = cli("scenarios")
    finally:
        if env_columns is not None:
            os.environ["COLUMNS"] = env_columns
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_scenario_listing_puts_descriptions_below_names_when_narrow():
    listing = {"game/a_very_long_scenario_name": "one two three " * 8, "game/b": "short"}
    narrow = scenario_listing(listing, 44).splitlines()
    assert narrow[0] == "game/a_very_long_scenario_name" and narrow[1].startswith("    one")
    assert max(len(line) for line in narrow) <= 44
    wide = scenario_listing(listing, 100).splitlines()
    assert wide[0].startswith("game/a_very_long_scenario_name  one two")
    assert wide[1].startswith(" " * 32) and not wide[1].startswith(" " * 33)  # hanging indent
    assert wide[-1] == "game/b" + " " * 24 + "  short"
    assert " ".join(" ".join(wide[:-1]).split()[1:]) == " ".join(("one two three " * 8).split())


# -- after a run: one line per grid cell; the progress bar says what it counts ---------


def test_run_prints_one_summary_line_per_grid_cell(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "fishery/altruism", "--out", str(out), *SMALL]) == 0
    printed = capsys.readouterr().out.splitlines()
    summary = json.loads((out / "summary.json").read_text())
    metrics = list(summary["overall"])[:4]
    header = next(i for i, line in enumerate(printed) if line.startswith("altruism_ratio"))
    assert printed[header].split() == ["altruism_ratio", "growth_rate", "runs", *metrics]
    rows = printed[header + 1 : header + 1 + len(summary["groups"])]
    assert len(rows) == len(summary["groups"]) == 6
    for row, group in zip(rows, summary["groups"], strict=True):
        cells = row.split()
        assert [float(c) for c in cells[:2]] == [
            group["params"]["altruism_ratio"],
            group["params"]["growth_rate"],
        ]
        first = group["metrics"][metrics[0]]
        assert cells[3].startswith(f"{first['mean']:.3g}")


def test_progress_bar_says_what_it_counts(tmp_path):
    result = cli(
        "run",
        "fishery/altruism",
        "--out",
        str(tmp_path / "r"),
        "--set",
        "replications=2",
        "--set",
        "max_steps=5",
    )
    assert result.returncode == 0, result.stderr
    assert "model runs (6 grid cells x 2 replications)" in result.stderr
    assert "12/12" in result.stderr and "run/s" in result.stderr


# -- figures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def altruism_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("figs") / "altruism"
    assert main(["run", "fishery/altruism", "--out", str(out), *SMALL]) == 0
    return out


def test_figures_in_svg_and_pdf_with_a_labelled_cap_and_no_t_s(altruism_run, capsys):
    assert main(["figures", str(altruism_run), "--format", "svg"]) == 0
    svg = (altruism_run / "altruism_survival.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "12-step cap" in svg and "T_s" not in svg and "s.e.m." in svg
    assert main(["figures", str(altruism_run), "--format", "pdf"]) == 0
    assert (altruism_run / "altruism_survival.pdf").read_bytes()[:5] == b"%PDF-"


def test_figures_format_choice_is_checked(altruism_run, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["figures", str(altruism_run), "--format", "gif"])
    assert exc.value.code == 2 and "invalid choice: 'gif'" in capsys.readouterr().err


def test_png_is_written_at_a_readable_resolution(altruism_run):
    from PIL import Image

    assert main(["figures", str(altruism_run)]) == 0
    with Image.open(altruism_run / "altruism_survival.png") as image:
        assert round(image.info["dpi"][0]) == 150
        assert image.size[0] >= 900


def test_run_figures_format_svg(tmp_path):
    out = tmp_path / "run"
    assert (
        main(["run", "fishery/altruism", "--out", str(out), *SMALL, "--figures", "--format", "svg"])
        == 0
    )
    assert (out / "altruism_survival.svg").exists() and not (out / "altruism_survival.png").exists()


def _captured(monkeypatch, module) -> list:
    """The figures a module's functions save (drawn, not read back from a file)."""
    figures: list = []

    def capture(fig, path):
        figures.append(fig)
        return Path(path)

    monkeypatch.setattr(module, "save", capture)
    return figures


def test_port_of_mars_panels_have_error_bars_and_health_lines_are_named(monkeypatch, tmp_path):
    from mesa_dilemmas.dilemmas.port_of_mars import figures as pom
    from mesa_dilemmas.viz import figures as figures_module

    out = tmp_path / "pom"
    assert (
        main(
            [
                "run",
                "port_of_mars/svo_rule_based",
                "--out",
                str(out),
                "--no-progress",
                "--set",
                "replications=6",
            ]
        )
        == 0
    )
    scenario, runs, steps = figures_module.load_run(out)
    drawn = _captured(monkeypatch, pom)
    pom.svo_points(out, runs, steps, scenario)
    pom.health_trajectories(out, runs, steps, scenario)
    panel_a, _, panel_c, health = drawn
    for ax in [*panel_a.axes, *panel_c.axes]:  # every bar of A and C carries its error bar
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        assert bars and all(b.errorbar is not None for b in bars), ax.get_title()
        (whiskers,) = bars[0].errorbar.lines[2]
        assert any(np.ptp(seg[:, 1]) > 0 for seg in whiskers.get_segments()), ax.get_title()
    texts = [t.get_text() for t in health.axes[0].texts]
    assert texts == [
        "65: below, two events a round",
        "35: below, three events a round",
        "0: the port collapses",
    ]
    assert health.axes[1].collections, "the survival curve has its s.e.m. band"


def test_fishery_reference_lines_are_labelled(monkeypatch, altruism_run):
    from mesa_dilemmas.dilemmas.fishery import figures as fishery_figures
    from mesa_dilemmas.viz import figures as figures_module

    scenario, runs, steps = figures_module.load_run(altruism_run)
    drawn = _captured(monkeypatch, fishery_figures)
    fishery_figures.altruism_bars(altruism_run, runs, steps, scenario)
    (fig,) = drawn
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    assert "12-step cap (run length)" in labels
    assert all("T_s" not in t for t in [ax.get_ylabel(), ax.get_title(), *labels])
