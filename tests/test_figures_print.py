"""Every figure reads as a paper prints it: at one column (3.5 in) and the full width (7 in).

Each registered figure (entry-point group ``mesa_dilemmas.figures``), the strategy PCA of
``analyse strategies`` and Port of Mars' paper figures of ``analyse port_of_mars`` are drawn
from small real runs of the bundled scenarios (the LLM-society figures from the fabricated
society table of ``test_norm_stats``: an LLM run needs a model) at both widths, and
:func:`print_problems` checks what a reader of the printed page meets:

* the figure prints at the width it was drawn for (nothing sticks out past it), so every
  text's size is its printed size, and none is smaller than 7 pt;
* no two texts of the layout (titles, axis labels, tick labels, legend entries) overlap;
* every mark -- line, collection (scatter, band, error bars), bar or patch, image -- is named
  by a legend entry of its label, or says what names it instead
  (``mesa_dilemmas.viz.print_size.explained_by``: a text on the plot, the colour bar, its tick
  labels, the title), or is the one series of a panel whose tick labels name its bars;
* every panel has x and y labels (exempt: a colour bar, which needs its own label, and a
  panel that is a table, with its axes switched off);
* the figure has a title: a figure title, or the title of its one panel.

``test_the_checker_*`` draw deliberately broken figures and check each rule fails them.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer, Container
from matplotlib.figure import Figure
from matplotlib.text import Text
from test_norm_stats import _society_runs

from mesa_dilemmas.cli import main
from mesa_dilemmas.dilemmas.registry import FIGURES, extensions
from mesa_dilemmas.scenarios.config import Scenario
from mesa_dilemmas.viz.figures import load_run
from mesa_dilemmas.viz.print_size import (
    COLUMN_WIDTH,
    EXPLAINED,
    FULL_WIDTH,
    MIN_FONT_PT,
    explained_by,
    print_width,
)
from mesa_dilemmas.viz.saving import DPI, keep_figures

WIDTHS = (COLUMN_WIDTH, FULL_WIDTH)
#: a figure may print this much wider than drawn (rounding of the tight bounding box), inches
SLACK = 0.05
#: and no taller than a page's text block
MAX_HEIGHT = 9.5


# --------------------------------------------------------------------------- the checker


def _norm(text: str) -> str:
    return " ".join(text.split())


def _texts(fig: Figure) -> list[Text]:
    """Every visible, non-empty text the figure draws (in a visible panel, if in one)."""
    out = []
    for t in fig.findobj(Text):
        if not (t.get_visible() and t.get_text().strip()):
            continue
        if t.axes is None or t.axes.get_visible():
            out.append(t)
    return out


def _legend_labels(fig: Figure) -> set[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return {_norm(t.get_text()) for leg in legends for t in leg.get_texts()}


def _has_data(artist) -> bool:
    if hasattr(artist, "get_xydata"):  # a line
        return len(artist.get_xydata()) > 0
    if hasattr(artist, "get_offsets") and hasattr(artist, "get_paths"):
        return len(artist.get_paths()) > 0 or len(artist.get_offsets()) > 0
    return True


def _is_colorbar(ax) -> bool:
    return hasattr(ax, "_colorbar")


def _tick_texts(ax) -> list[str]:
    return [t.get_text() for t in _drawn_tick_labels(ax) if t.get_text().strip()]


def _drawn_tick_labels(ax) -> list[Text]:
    """The tick labels drawn (inside the view), not every located tick's."""
    out = []
    for axis in (ax.xaxis, ax.yaxis):
        for tick in axis._update_ticks():
            out += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    return out


def _layout_texts(fig: Figure) -> list[Text]:
    """The texts of the layout: titles, axis labels, tick labels, legend entries."""
    out: list[Text] = []
    if fig._suptitle is not None:
        out.append(fig._suptitle)
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        out += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        if ax.axison:
            out += _drawn_tick_labels(ax)
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    for leg in legends:
        out += list(leg.get_texts())
        if leg.get_title().get_text():
            out.append(leg.get_title())
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def print_problems(fig: Figure, width: float, name: str = "figure") -> list[str]:
    """What stops ``fig`` reading well printed ``width`` inches wide (empty: nothing)."""
    problems: list[str] = []
    if fig.canvas is None or not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer)  # inches: what bbox_inches="tight" saves
    if box.width > width + SLACK:
        problems.append(f"{name}: prints {box.width:.2f} in wide, drawn for {width} in")
    if box.height > MAX_HEIGHT:
        problems.append(f"{name}: {box.height:.1f} in tall, taller than a page")
    scale = min(1.0, width / box.width)  # shrunk to the width it prints at
    for t in _texts(fig):
        size = t.get_fontsize() * scale
        if size < MIN_FONT_PT - 1e-6:
            problems.append(f"{name}: text {t.get_text()[:40]!r} prints at {size:.1f} pt")

    texts = _layout_texts(fig)
    boxes = [t.get_window_extent(renderer) for t in texts]
    for (a, ba), (b, bb) in itertools.combinations(zip(texts, boxes, strict=True), 2):
        overlap_w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
        overlap_h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
        if overlap_w > 1.0 and overlap_h > 1.0:  # pixels
            problems.append(f"{name}: text {a.get_text()[:30]!r} overlaps {b.get_text()[:30]!r}")

    for ax in fig.axes:  # a table's text stays inside its cells
        for table in ax.tables:
            for cell in table.get_celld().values():
                text, box = cell.get_text(), cell.get_window_extent(renderer)
                if text.get_text().strip() and text.get_window_extent(renderer).width > box.width:
                    problems.append(
                        f"{name}: table text {text.get_text()[:30]!r} overflows its cell"
                    )

    legend = _legend_labels(fig)
    colorbar_labelled = any(
        _is_colorbar(ax) and (ax.get_ylabel().strip() or ax.get_xlabel().strip()) for ax in fig.axes
    )
    plain = [ax for ax in fig.axes if not _is_colorbar(ax) and ax.get_visible()]
    for ax in fig.axes:
        where = f"{name}, panel {_norm(ax.get_title())[:40]!r}"
        if _is_colorbar(ax):
            if not (ax.get_ylabel().strip() or ax.get_xlabel().strip()):
                problems.append(f"{where}: colour bar without a label")
            continue
        if ax.axison:
            if not ax.get_xlabel().strip():
                problems.append(f"{where}: no x-axis label")
            if not ax.get_ylabel().strip():
                problems.append(f"{where}: no y-axis label")
        owner = {}
        for c in ax.containers:
            for child in c.get_children():
                owner[child] = c
        bar_sets = [c for c in ax.containers if isinstance(c, BarContainer)]
        for artist in [*ax.lines, *ax.collections, *ax.patches, *ax.images]:
            if not artist.get_visible() or not _has_data(artist):
                continue
            source = owner.get(artist, artist)
            if isinstance(source, Container) and not isinstance(source, BarContainer):
                # error bars: named with the bars or line they belong to
                parent = next((b for b in bar_sets if getattr(b, "errorbar", None) is source), None)
                source = parent if parent is not None else source
            label = _norm(str(source.get_label() or ""))
            if label and not label.startswith("_") and label in legend:
                continue
            how = getattr(source, EXPLAINED, None) or getattr(artist, EXPLAINED, None)
            if how == "annotation" and any(t.get_text().strip() for t in ax.texts):
                continue
            if how == "colorbar" and colorbar_labelled:
                continue
            if how == "ticks" and _tick_texts(ax):
                continue
            if how == "caption" and (fig._suptitle is not None or ax.get_title()):
                continue
            if (
                isinstance(source, BarContainer)
                and len(bar_sets) == 1
                and len(_tick_texts(ax)) >= len(source.patches)
            ):
                continue  # the panel's one series, its bars named by the tick labels
            kind = type(artist).__name__
            problems.append(f"{where}: {kind} {label or '(no label)'!r} is in no legend")
    suptitle = fig._suptitle is not None and fig._suptitle.get_text().strip()
    if not suptitle and not (len(plain) == 1 and plain[0].get_title().strip()):
        problems.append(f"{name}: no title (a figure title, or the title of its one panel)")
    return problems


# --------------------------------------------------------------------------- the checker fails


def _broken(width: float = FULL_WIDTH) -> Figure:
    fig = Figure(figsize=(width, 3), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def test_the_checker_fails_small_text_and_a_figure_wider_than_the_page():
    fig = _broken(FULL_WIDTH * 2.6)  # like a 2,744 px figure printed at column width
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], label="a")
    ax.legend(fontsize=8)
    ax.set(xlabel="x (m)", ylabel="y (m)", title="t")
    problems = print_problems(fig, COLUMN_WIDTH)
    assert any("wide, drawn for 3.5 in" in p for p in problems)
    assert any("prints at 1." in p for p in problems)  # 8 pt shrunk 5x


def test_the_checker_fails_marks_without_a_legend_entry():
    fig = _broken()
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], label="mean")
    ax.fill_between([0, 1], [0, 0], [1, 1], alpha=0.2)  # an unexplained band
    ax.scatter([0.5], [0.5], marker="^")  # an unexplained marker
    ax.axhline(0.3)
    ax.legend()
    ax.set(xlabel="x (m)", ylabel="y (m)", title="t")
    problems = print_problems(fig, FULL_WIDTH)
    kinds = " ".join(problems)
    assert len(problems) == 3 and "PathCollection" in kinds and "Line2D" in kinds, problems
    explained_by(ax.lines[1], "annotation")  # a reference line must have a text beside it
    assert len(print_problems(fig, FULL_WIDTH)) == 3
    ax.annotate("floor", (0, 0.3))
    assert len(print_problems(fig, FULL_WIDTH)) == 2


def test_the_checker_fails_missing_axis_labels_titles_and_overlapping_text():
    fig = _broken()
    a, b = fig.subplots(1, 2)
    bars = a.bar([0, 1], [1, 2])
    a.set_xticks([0, 1], ["p", "q"])  # one series, named by its ticks: no legend needed
    a.set_xlabel("kind")
    b.plot([0, 1], [0, 1], label="x")
    b.legend()
    b.set(xlabel="x (s)", ylabel="y (s)")
    problems = print_problems(fig, FULL_WIDTH)
    assert any("no y-axis label" in p for p in problems)
    assert any("no title" in p for p in problems)
    assert not any("is in no legend" in p for p in problems), problems
    assert bars.patches[0].get_label().startswith("_")
    fig.suptitle("two panels")
    a.set_ylabel("count")
    assert print_problems(fig, FULL_WIDTH) == []
    b.set_ylabel("a label long enough to run into the panel beside it " * 2)
    b.yaxis.label.set_rotation(0)
    assert any("overlaps" in p for p in print_problems(fig, FULL_WIDTH))


# --------------------------------------------------------------------------- small real runs


def _run(root: Path, name: str, *sets: str) -> Path:
    out = root / name.replace("/", "_")
    args = ["run", name, "--out", str(out), "--no-progress"]
    for item in sets:
        args += ["--set", item]
    assert main(args) == 0, name
    return out


#: the run each registered figure draws from: scenario and its --set overrides
RUNS = {
    "shock": ("fishery/punishment_shock", "replications=3", "max_steps=25"),
    "sweep": (
        "fishery/beta_growth_sweep",
        "replications=2",
        "max_steps=30",
        "grid.penalty=[2.0, 6.0, 10.0, 14.0, 18.0]",
        "grid.growth_rate=[0.2, 0.4, 0.6, 0.8]",
    ),
    "altruism": ("fishery/altruism", "replications=3", "max_steps=30"),
    "svo": ("port_of_mars/svo_rule_based", "replications=4"),
    "cultural": ("port_of_mars/cultural_groups", "replications=3"),
    "comm": ("port_of_mars/communication", "replications=4"),
    "lead": (
        "port_of_mars/leadership_rule_based",
        "replications=3",
        "grid.leadership=['announce', 'unaware']",
        "grid.leader_seat=[0, 4]",
    ),
    "self_play": (
        "public_goods/self_play",
        "options.group_sizes=[4, 16]",
        "options.samples=10",
        "options.splits=5",
    ),
    "evolution": (
        "common_pool/cultural_evolution",
        "options.population=64",
        "options.survivors=8",
        "options.group_sizes=[4, 16]",
        "options.runs=2",
        "options.max_generations=15",
    ),
}

#: registered figure -> the run it is drawn from ("society": the fabricated LLM table)
FIGURE_RUN = {
    "fishery.punishment_shock": "shock",
    "fishery.survival_heatmap": "sweep",
    "fishery.altruism_bars": "altruism",
    "fishery.survival_by_model": "society",
    "fishery.efficiency_over_time": "society",
    "fishery.norm_structure": "society",
    "fishery.ablation_bars": "society",
    "fishery.norms_table": "society",
    "port_of_mars.svo_points": "svo",
    "port_of_mars.cultural_table": "cultural",
    "port_of_mars.health_trajectories": "comm",
    "binary.self_play": "self_play",
    "binary.cultural_evolution": "evolution",
}


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {key: _run(root, *spec) for key, spec in RUNS.items()}


def _inputs(run_dirs: dict[str, Path], key: str):
    if key == "society":
        runs, steps = _society_runs()
        return runs, steps, Scenario(name="society", game="fishery", max_steps=50)
    scenario, runs, steps = load_run(run_dirs[key])
    return runs, steps, scenario


def _ours() -> set[str]:
    """This package's registered figures (an installed example game registers its own)."""
    return {
        name
        for name, ep in extensions(FIGURES).items()
        if ep.dist is None or ep.dist.name == "mesa-dilemmas"
    }


def test_every_registered_figure_has_a_run_here():
    assert _ours() == set(FIGURE_RUN)


def _check(figures: list[tuple[str, Figure]], width: float) -> list[str]:
    problems = []
    for name, fig in figures:
        problems += print_problems(fig, width, name)
    return problems


@pytest.mark.parametrize("width", WIDTHS, ids=["column", "full"])
@pytest.mark.parametrize("name", sorted(FIGURE_RUN))
def test_registered_figure_reads_at_print_size(name, width, run_dirs, tmp_path):
    runs, steps, scenario = _inputs(run_dirs, FIGURE_RUN[name])
    figure = extensions(FIGURES)[name].load()
    with print_width(width), keep_figures() as kept:
        paths = figure(tmp_path, runs, steps, scenario)
    assert paths and all(p.exists() for p in paths)
    if name == "fishery.norms_table":  # a Markdown table, not a drawing
        assert not kept and paths[0].suffix == ".md"
        return
    assert kept, f"{name} drew nothing"
    problems = _check([(f"{name}:{p.stem}", fig) for p, fig in kept], width)
    assert not problems, "\n".join(problems)
    for path, _ in kept:  # the saved file is the figure at its print width
        if path.suffix == ".png":
            from matplotlib.image import imread

            px = imread(path).shape[1]
            assert px <= (width + SLACK) * DPI + 1, (path.name, px)


@pytest.fixture(scope="module")
def pca_result():
    from mesa_dilemmas.dilemmas.binary.cli import analyse

    return analyse(
        ["reference_exploitative", "reference_collective"],
        game="common_pool",
        rollouts=3,
        limit=8,
        progress=False,
    )


@pytest.mark.parametrize("width", WIDTHS, ids=["column", "full"])
def test_strategy_pca_reads_at_print_size(width, pca_result, tmp_path):
    from mesa_dilemmas.dilemmas.binary.cli import write_outputs

    with print_width(width), keep_figures() as kept:
        write_outputs(pca_result, tmp_path)
    ((path, fig),) = [(p, f) for p, f in kept if p.stem == "pca"]
    assert not (problems := print_problems(fig, width, "pca")), "\n".join(problems)
    ax = fig.axes[0]
    legend = _legend_labels(fig)
    assert {"reference_exploitative", "reference_collective"} <= legend
    # every set's own dots are drawn above the reference strategies and their names
    sets = {"reference_exploitative", "reference_collective"}
    dots = [c for c in ax.collections if c.get_label() in sets]
    refs = [c for c in ax.collections if c.get_label() == "reference strategy"]
    assert len(dots) == 2 and refs and ax.texts
    below = max(a.get_zorder() for a in [*refs, *ax.texts])
    assert min(d.get_zorder() for d in dots) > below


@pytest.fixture(scope="module")
def port_of_mars_tables(run_dirs):
    """The tables ``analyse port_of_mars`` draws its paper figures from, per run."""
    from mesa_dilemmas.dilemmas.port_of_mars.tables import analyse

    out = {}
    for key in ("comm", "lead"):
        scenario, runs, _ = load_run(run_dirs[key])
        grid = list(scenario.grid)
        out[key] = (analyse(runs, grid), runs, grid)
    return out


@pytest.mark.parametrize("width", WIDTHS, ids=["column", "full"])
def test_port_of_mars_paper_figures_read_at_print_size(width, port_of_mars_tables):
    from mesa_dilemmas.dilemmas.port_of_mars.paper_figures import paper_figures

    drawn: dict[str, Figure] = {}
    for key, (tables, runs, grid) in port_of_mars_tables.items():
        with print_width(width):
            figures, _ = paper_figures(tables, runs, grid)
        drawn.update({f"{key}:{stem}": fig for stem, fig in figures.items()})
    assert {k.split(":")[1] for k in drawn} >= {
        "fig2_by_label",
        "fig3_meeting",
        "fig4_survival_by_leader",
        "fig5_winners_by_leader",
        "fig6_groups",
    }
    problems = _check(list(drawn.items()), width)
    assert not problems, "\n".join(problems)


def test_port_of_mars_scatter_says_it_is_jittered_and_keeps_counts_at_or_above_zero(
    run_dirs, tmp_path
):
    from mesa_dilemmas.dilemmas.port_of_mars.figures import svo_points

    scenario, runs, steps = load_run(run_dirs["svo"])
    with keep_figures() as kept:
        svo_points(tmp_path, runs, steps, scenario)
    fig = next(f for p, f in kept if p.stem == "port_of_mars_svo_B")
    assert "jitter" in fig._suptitle.get_text()
    for ax in fig.axes:
        for c in ax.collections:
            xy = np.asarray(c.get_offsets())
            if len(xy):
                assert (xy >= 0).all(), ax.get_xlabel()
