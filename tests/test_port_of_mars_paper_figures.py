"""``analyse port_of_mars`` draws paper 001's Figs. 2-6 from small real runs of the bundled
scenarios, and each figure shows the numbers of its CSV (checked against the run's own data)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from scipy.stats import mannwhitneyu

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.port_of_mars.figures import label_order
from mesa_dilemmas.dilemmas.port_of_mars.paper_figures import paper_figures
from mesa_dilemmas.dilemmas.port_of_mars.tables import analyse
from mesa_dilemmas.viz.figures import load_run

QUIET = ["--no-progress"]


def _run(tmp: Path, name: str, *sets: str) -> Path:
    out = tmp / name.replace("/", "_")
    args = ["run", f"port_of_mars/{name}", "--out", str(out), *QUIET]
    for item in sets:
        args += ["--set", item]
    assert main(args) == 0
    return out


def _analyse(run_dir: Path, capsys, *extra: str) -> str:
    capsys.readouterr()
    assert main(["analyse", "port_of_mars", str(run_dir), *extra]) == 0
    return capsys.readouterr().out


def _figures(run_dir: Path):
    scenario, runs, _ = load_run(run_dir)
    grid = list(scenario.grid)
    return paper_figures(analyse(runs, grid), runs, grid), runs


def _bars(ax) -> list[BarContainer]:
    """The bar groups of an axis, in drawing order (one per colour)."""
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def _players(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, run in runs.iterrows():
        for rec in json.loads(run["players_json"]):
            rows.append({**rec, "meeting": bool(run["meeting"])})
    return pd.DataFrame(rows)


def test_communication_run_draws_figs_2_3_6_and_fig3_shows_its_csv(tmp_path, capsys):
    run_dir = _run(tmp_path, "communication", "replications=6")
    out = _analyse(run_dir, capsys)
    analysis = run_dir / "analysis"
    for stem in ("fig2_by_label", "fig3_meeting", "fig6_groups"):
        assert (analysis / f"{stem}.png").stat().st_size > 10_000, stem
    assert not list(analysis.glob("fig4*")) and not list(analysis.glob("fig5*"))
    skipped = [line for line in out.splitlines() if line.startswith("figures skipped:")]
    assert len(skipped) == 1 and "Figs. 4-5 (the grid has no leadership" in skipped[0]

    tests = pd.read_csv(analysis / "meeting_tests.csv")
    labels = label_order(tests["label"].tolist())
    tests = tests.set_index("label").loc[labels]
    (figures, _), runs = _figures(run_dir)
    fig = figures["fig3_meeting"]
    health_ax, dirty_ax = fig.axes[:2]
    on, off = _bars(health_ax)  # bars of meeting on / off
    np.testing.assert_allclose(on.datavalues, tests["health_coins_total_on"])
    np.testing.assert_allclose(off.datavalues, tests["health_coins_total_off"])
    np.testing.assert_allclose(_bars(dirty_ax)[0].datavalues, tests["pct_dirty_on"])
    p_texts = [t.get_text() for t in health_ax.texts]
    assert p_texts == [
        "p < 0.001" if p < 0.001 else f"p = {p:.3f}" for p in tests["health_coins_total_p"]
    ]
    suptitle = " ".join(fig._suptitle.get_text().split())
    assert "two-sided Mann-Whitney U" in suptitle

    # the same numbers straight from the run's players_json, without the analysis code
    players = _players(runs)
    svo60 = players[players["label"] == "svo60"]
    on60, off60 = svo60[svo60["meeting"]], svo60[~svo60["meeting"]]
    assert on.datavalues[labels.index("svo60")] == pytest.approx(on60["health_coins_total"].mean())
    p = mannwhitneyu(
        on60["health_coins_total"], off60["health_coins_total"], alternative="two-sided"
    ).pvalue
    assert tests.loc["svo60", "health_coins_total_p"] == pytest.approx(p)
    survival_on = runs[runs["meeting"].astype(bool)]["survived"].mean()
    assert f"meeting on {100 * survival_on:.0f}%" in suptitle


def test_fig2_bars_and_error_bars_are_the_by_label_csv(tmp_path, capsys):
    run_dir = _run(tmp_path, "svo_rule_based", "replications=8")
    out = _analyse(run_dir, capsys)
    assert "Fig. 3 (the grid does not run the meeting both on and off)" in out
    by_label = pd.read_csv(run_dir / "analysis" / "by_label.csv").set_index("label")
    labels = label_order(by_label.index.tolist())
    (figures, _), runs = _figures(run_dir)
    fig = figures["fig2_by_label"]
    titles = {" ".join(ax.get_title().split()): ax for ax in fig.axes}
    dirty = _bars(titles["% dirty accomplishments taken"])[0]
    np.testing.assert_allclose(dirty.datavalues, by_label.loc[labels, "pct_dirty"])
    # every panel has error bars: the caps sit at mean ± s.e.m.
    for title, column in (
        ("% dirty accomplishments taken", "pct_dirty"),
        ("coins to port health per round", "health_spend_per_round"),
        ("selfish offers proposed per game", "proposed_selfish"),
    ):
        bars = _bars(titles[title])[0]
        (whiskers,) = bars.errorbar.lines[2]  # one vertical segment per bar
        upper = [max(seg[:, 1]) for seg in whiskers.get_segments()]
        expected = by_label.loc[labels, column] + by_label.loc[labels, f"{column}_sem"]
        np.testing.assert_allclose(upper, expected)
        assert (by_label[f"{column}_sem"] > 0).any()
    # pooled % dirty from players_json directly
    players = _players(runs)
    g = players[players["label"] == "svo-15"]
    pooled = 100 * g["dirty_taken"].sum() / g["dirty_opportunities"].sum()
    assert dirty.datavalues[labels.index("svo-15")] == pytest.approx(pooled)


def test_leadership_run_draws_figs_4_5_with_the_leadership_csv(tmp_path, capsys):
    run_dir = _run(
        tmp_path,
        "leadership_rule_based",
        "replications=4",
        "grid.leadership=['announce', 'unaware']",
        "grid.leader_seat=[0, 4]",
    )
    _analyse(run_dir, capsys, "--format", "svg")
    analysis = run_dir / "analysis"
    for stem in ("fig4_survival_by_leader", "fig5_winners_by_leader"):
        assert "<svg" in (analysis / f"{stem}.svg").read_text()[:2000]
    assert not list(analysis.glob("*.png"))
    table = pd.read_csv(analysis / "leadership.csv")
    (figures, _), runs = _figures(run_dir)
    heat = figures["fig5_winners_by_leader"]
    announce = table[table["leadership"] == "announce"].set_index("leader")
    leaders = label_order(announce.index.tolist())
    winners = label_order([c[4:] for c in table.columns if c.startswith("won_")])
    shown = np.asarray(heat.axes[0].images[0].get_array())
    expected = 100 * announce.loc[leaders, [f"won_{w}" for w in winners]].to_numpy().T
    np.testing.assert_allclose(shown, expected)
    bars = _bars(figures["fig4_survival_by_leader"].axes[0])[0]  # announce
    np.testing.assert_allclose(bars.datavalues, 100 * announce.loc[leaders, "survival"])
    # survival straight from runs.parquet
    mine = runs[(runs["leadership"] == "announce") & (runs["leader_label"] == "svo60")]
    assert bars.datavalues[leaders.index("svo60")] == pytest.approx(100 * mine["survived"].mean())
    wins = np.mean(["svo0" in str(w).split("|") for w in mine["winner_labels"]])
    assert shown[winners.index("svo0"), leaders.index("svo60")] == pytest.approx(100 * wins)


def _cell_markers(ax) -> np.ndarray:
    """Centres of Fig. 6's cell markers (the games' dots are size 8, the legend's empty)."""
    big = [
        c
        for c in ax.collections
        if isinstance(c, PathCollection) and len(c.get_offsets()) == 1 and c.get_sizes()[0] > 8
    ]
    return np.array([c.get_offsets()[0] for c in big])


def test_fig6_compares_two_svo_sets_of_one_grid_with_the_groups_csv(tmp_path, capsys):
    run_dir = _run(
        tmp_path,
        "svo_rule_based",
        "replications=5",
        "grid.svo_angles=[[-15, 0, 15, 30, 60], [-30, -15, 0, 15, 60]]",
    )
    out = _analyse(run_dir, capsys)
    assert "second SVO set" not in out
    groups = pd.read_csv(run_dir / "analysis" / "groups.csv")
    (figures, _), runs = _figures(run_dir)
    ax = figures["fig6_groups"].axes[0]
    legend = [t.get_text() for t in figures["fig6_groups"].legends[0].get_texts()]
    assert legend[:2] == ["SVO set -15..60", "SVO set -30..60"]
    np.testing.assert_allclose(
        _cell_markers(ax), groups[["gini_points", "health_coins_total"]].to_numpy()
    )
    wide = runs[runs["svo_angles"].astype(str).str.startswith("[-30")]
    assert groups["gini_points"].iloc[1] == pytest.approx(wide["gini_points"].mean())


def test_fig6_draws_another_run_beside_this_one_with_with(tmp_path, capsys):
    main_run = _run(tmp_path, "svo_rule_based", "replications=4")
    out = _analyse(main_run, capsys)
    assert "Fig. 6's second SVO set (one set here" in out
    other = tmp_path / "wide"
    assert (
        main(
            [
                "run",
                "port_of_mars/svo_rule_based",
                "--out",
                str(other),
                *QUIET,
                "--set",
                "replications=4",
                "--set",
                "svo_angles=[-30, -15, 0, 15, 60]",
            ]
        )
        == 0
    )
    out = _analyse(main_run, capsys, "--with", str(other), "--format", "pdf")
    assert "second SVO set" not in out
    analysis = main_run / "analysis"
    assert (analysis / "fig6_groups.pdf").read_bytes()[:5] == b"%PDF-"
    compared = pd.read_csv(analysis / "groups_compared.csv")
    assert compared["group"].tolist() == ["all", "wide: all"]
    wide_runs = pd.read_parquet(other / "runs.parquet")
    assert compared["health_coins_total"].iloc[1] == pytest.approx(
        wide_runs["health_coins_total"].mean()
    )
    # the figure, drawn the way the command draws it, shows the CSV's cells
    from mesa_dilemmas.dilemmas.port_of_mars.tables import groups_across

    _, runs, _ = load_run(main_run)
    both = groups_across([("main", runs, []), ("wide", wide_runs, [])])
    figures, _ = paper_figures(analyse(runs, []), runs, [], both)
    ax = figures["fig6_groups"].axes[0]
    assert [t.get_text() for t in figures["fig6_groups"].legends[0].get_texts()][:2] == [
        "SVO set -15..60",
        "SVO set -30..60",
    ]
    np.testing.assert_allclose(
        _cell_markers(ax), compared[["gini_points", "health_coins_total"]].to_numpy()
    )


def test_analyse_refuses_another_game_in_one_line(tmp_path, capsys):
    run_dir = tmp_path / "fishery"
    assert (
        main(
            [
                "run",
                "fishery/altruism",
                "--out",
                str(run_dir),
                *QUIET,
                "--set",
                "replications=1",
                "--set",
                "max_steps=3",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["analyse", "port_of_mars", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a fishery run, not port_of_mars" in err[0]
    assert not (run_dir / "analysis").exists()
