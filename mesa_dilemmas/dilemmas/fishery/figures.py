"""Figures of the fishery validation (paper 003, Figs. 2, 3 and 12), from a run directory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mesa_dilemmas.scenarios.config import Scenario
from mesa_dilemmas.viz.print_size import (
    FONT_PT,
    SMALL_PT,
    explained_by,
    figure,
    is_column,
    legend_below,
    printable,
    title,
    width,
    wrap,
)
from mesa_dilemmas.viz.saving import save


def _mean_ci(steps: pd.DataFrame, column: str) -> pd.DataFrame:
    g = steps.groupby("Step")[column]
    out = pd.DataFrame({"mean": g.mean(), "sem": g.sem(), "n": g.count()})
    out["lo"] = out["mean"] - 1.96 * out["sem"].fillna(0)
    out["hi"] = out["mean"] + 1.96 * out["sem"].fillna(0)
    return out


def _default(name: str) -> object:
    """The fishery's default for parameter ``name`` (from its parameter schema)."""
    from mesa_dilemmas.dilemmas.base import params_model
    from mesa_dilemmas.dilemmas.fishery.model import FisheryModel

    return params_model(FisheryModel).model_fields[name].default


@printable
def punishment_shock(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    """Harvest- and effort-based compliance, stock and effort over time, punishment kept (solid) vs
    switched off (dashed) per beta."""
    shock = max(
        int(v)
        for v in scenario.grid.get(
            "punishment_off_at", [scenario.params.get("punishment_off_at", 0)]
        )
    )
    panels = [
        ("compliance", "compliance\n" + r"(share, $h \leq G$)"),
        ("effort_compliance", "effort compliance\n" + r"(share, $e \leq G/\alpha K$)"),
        ("stock", "lake stock $R(t)$\n(fish)"),
        ("mean_effort", "mean effort $e$\n(0-1)"),
    ]
    panels = [
        (col, label) for col, label in panels if col in steps
    ]  # runs recorded before a reporter existed
    fig, axes = figure(len(panels), aspect=0.9, min_panel_width=1.65, extra_height=0.9)
    betas = (
        sorted(steps["penalty"].unique())
        if "penalty" in steps
        else [scenario.params.get("penalty")]
    )
    colors = [f"C{i}" for i in range(10)]
    handles: dict[str, object] = {}
    for ax, (col, label) in zip(axes, panels, strict=True):
        for i, beta in enumerate(betas):
            sub_beta = steps[steps["penalty"] == beta] if "penalty" in steps else steps
            for off, style in ((0, "-"), (shock, "--")):
                sub = sub_beta[sub_beta["punishment_off_at"] == off]
                if sub.empty:
                    continue
                stats = _mean_ci(sub[sub["Step"] > 0], col)
                kept = "kept" if off == 0 else f"off at t = {off}"
                name = f"β = {beta:g}, punishment {kept}"
                (line,) = ax.plot(
                    stats.index, stats["mean"], style, color=colors[i % 10], label=name
                )
                band = ax.fill_between(
                    stats.index,
                    stats["lo"],
                    stats["hi"],
                    color=colors[i % 10],
                    alpha=0.15,
                    lw=0,
                    label=name,
                )
                handles.setdefault(name, (line, band))
        shock_name = f"punishment switched off (t = {shock})"
        handles.setdefault(
            shock_name, ax.axvline(shock, color="grey", lw=0.8, ls=":", label=shock_name)
        )
        if col == "stock":  # the lake counts as collapsed at or below R_min
            r_min = float(scenario.params.get("collapse_threshold", _default("collapse_threshold")))
            name = f"collapse threshold $R_{{min}}$ = {r_min:g}"
            handles[name] = ax.axhline(r_min, color="tab:red", lw=0.8, ls="--", label=name)
        ax.set_xlabel("round $t$")
        ax.set_ylabel(label)
    legend_below(fig, list(handles.values()), list(handles))
    title(
        fig,
        "Punishment shock: the lake after punishment stops (lines: mean; bands: 95% CI)",
    )
    return [save(fig, run_dir / "punishment_shock")]


@printable
def survival_heatmap(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    """Mean survival time over punishment strength (x) and growth rate (y)."""
    table = runs.pivot_table(
        index="growth_rate", columns="penalty", values="survival_time", aggfunc="mean"
    )
    sems = runs.pivot_table(
        index="growth_rate", columns="penalty", values="survival_time", aggfunc="sem"
    ).reindex_like(table)
    fig, (ax,) = figure(1, aspect=0.75, extra_height=0.3)
    image = ax.imshow(table.to_numpy(), origin="lower", aspect="auto", cmap="viridis")
    explained_by(image, "colorbar")
    ax.set_xticks(range(len(table.columns)), [f"{c:g}" for c in table.columns])
    ax.set_yticks(range(len(table.index)), [f"{r:g}" for r in table.index])
    values = table.to_numpy()
    middle = (np.nanmin(values) + np.nanmax(values)) / 2
    # the cells' numbers when a cell is wide enough for them (about 0.3 in)
    roomy = width() / max(1, len(table.columns)) >= 0.3
    for (i, j), value in np.ndenumerate(values):
        if not roomy:
            break
        sem = sems.to_numpy()[i, j]
        ax.text(
            j,
            i,
            f"{value:.0f}" + (f"\n±{sem:.0f}" if np.isfinite(sem) else ""),
            ha="center",
            va="center",
            fontsize=SMALL_PT,
            color="black" if value > middle else "white",
        )
    ax.set_xlabel("punishment strength β (fine per offence)")
    ax.set_ylabel(r"growth rate $r$ (per round)")
    n = int(runs.groupby(["growth_rate", "penalty"]).size().min())
    ax.set_title(
        wrap(
            f"Mean survival time, rounds ({'cells: mean ± s.e.m.; ' if roomy else ''}"
            f"{n} runs per cell)",
            width() - 1.0,
        )
    )
    bar = fig.colorbar(image, ax=ax)
    bar.set_label(wrap(f"survival time (rounds; capped at {scenario.max_steps})", 2.6, FONT_PT))
    bar.ax.tick_params(labelsize=SMALL_PT)
    return [save(fig, run_dir / "beta_growth_survival")]


@printable
def altruism_bars(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    """Survival time (mean ± s.e.m.) by altruism ratio, harsh vs rich environment."""
    stats = runs.groupby(["growth_rate", "altruism_ratio"])["survival_time"].agg(
        ["mean", "sem", "count"]
    )
    rates = sorted(runs["growth_rate"].unique())
    ratios = sorted(runs["altruism_ratio"].unique())
    fig, (ax,) = figure(1, aspect=0.62 if is_column() else 0.45, extra_height=0.45)
    width_ = 0.8 / len(ratios)
    names = {0.0: "all selfish", 0.5: "mixed", 1.0: "all altruistic"}
    for k, ratio in enumerate(ratios):
        means = [stats.loc[(r, ratio), "mean"] for r in rates]
        sems = [stats.loc[(r, ratio), "sem"] for r in rates]
        xs = np.arange(len(rates)) + (k - (len(ratios) - 1) / 2) * width_
        ax.bar(
            xs,
            means,
            width_,
            yerr=sems,
            label=names.get(float(ratio), f"altruism ratio {ratio:g}"),
        )
    labels = {0.2: "harsh lake (r = 0.2)", 0.6: "rich lake (r = 0.6)"}
    ax.set_xticks(range(len(rates)), [labels.get(float(r), f"r = {r:g}") for r in rates])
    ax.set_xlabel("environment (growth rate r, per round)")
    ax.axhline(
        scenario.max_steps,
        color="grey",
        lw=0.8,
        ls="--",
        label=f"{scenario.max_steps}-step cap (run length)",
    )
    ax.set_ylabel("survival time (rounds)")
    ax.set_title(
        wrap(
            f"Survival by the villagers' altruism (mean ± s.e.m., {int(stats['count'].min())} "
            "runs per bar)",
            width() - 0.5,
        )
    )
    handles, texts = ax.get_legend_handles_labels()
    legend_below(fig, handles, texts)
    return [save(fig, run_dir / "altruism_survival")]
