"""Figures of the fishery validation (paper 003, Figs. 2, 3 and 12), from a run directory."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mesa_dilemmas.scenarios.config import Scenario
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
        ("compliance", r"compliance (share with $h \leq G$)"),
        ("effort_compliance", r"effort compliance ($e \leq G\,/\,(\alpha K)$)"),
        ("stock", r"lake stock $R(t)$"),
        ("mean_effort", "mean effort"),
    ]
    panels = [
        (col, label) for col, label in panels if col in steps
    ]  # runs recorded before a reporter existed
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8))
    betas = (
        sorted(steps["penalty"].unique())
        if "penalty" in steps
        else [scenario.params.get("penalty")]
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (col, label) in zip(axes, panels, strict=True):
        for i, beta in enumerate(betas):
            sub_beta = steps[steps["penalty"] == beta] if "penalty" in steps else steps
            for off, style in ((0, "-"), (shock, "--")):
                sub = sub_beta[sub_beta["punishment_off_at"] == off]
                if sub.empty:
                    continue
                stats = _mean_ci(sub[sub["Step"] > 0], col)
                kept = "kept" if off == 0 else f"off at t={off}"
                ax.plot(
                    stats.index, stats["mean"], style, color=colors[i], label=f"β={beta:g}, {kept}"
                )
                ax.fill_between(stats.index, stats["lo"], stats["hi"], color=colors[i], alpha=0.15)
        ax.axvline(shock, color="grey", lw=0.8, ls=":", label=f"punishment off (t = {shock})")
        if col == "stock":  # the lake counts as collapsed at or below R_min
            r_min = float(scenario.params.get("collapse_threshold", _default("collapse_threshold")))
            ax.axhline(
                r_min, color="tab:red", lw=0.8, ls="--", label=f"collapse threshold {r_min:g}"
            )
            ax.legend(handles=ax.get_lines()[-1:], fontsize=8, loc="upper right")
        ax.set_xlabel("step")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle("Punishment shock: cooperation after punishment is removed (mean, 95% CI)")
    fig.tight_layout()
    return [save(fig, run_dir / "punishment_shock")]


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
    fig, ax = plt.subplots(figsize=(7, 4.8))
    image = ax.imshow(table.to_numpy(), origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(table.columns)), [f"{c:g}" for c in table.columns])
    ax.set_yticks(range(len(table.index)), [f"{r:g}" for r in table.index])
    values = table.to_numpy()
    middle = (np.nanmin(values) + np.nanmax(values)) / 2
    for (i, j), value in np.ndenumerate(values):
        sem = sems.to_numpy()[i, j]
        ax.text(
            j,
            i,
            f"{value:.0f}" + (f"\n±{sem:.0f}" if np.isfinite(sem) else ""),
            ha="center",
            va="center",
            fontsize=7,
            color="black" if value > middle else "white",
        )
    ax.set_xlabel("punishment strength β")
    ax.set_ylabel(r"growth rate $r$")
    n = int(runs.groupby(["growth_rate", "penalty"]).size().min())
    ax.set_title(f"Mean survival time ± s.e.m. ({n} runs per cell)")
    fig.colorbar(
        image, ax=ax, label=f"survival time (steps; runs stop at the {scenario.max_steps}-step cap)"
    )
    fig.tight_layout()
    return [save(fig, run_dir / "beta_growth_survival")]


def altruism_bars(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    """Survival time (mean ± s.e.m.) by altruism ratio, harsh vs rich environment."""
    stats = runs.groupby(["growth_rate", "altruism_ratio"])["survival_time"].agg(
        ["mean", "sem", "count"]
    )
    rates = sorted(runs["growth_rate"].unique())
    ratios = sorted(runs["altruism_ratio"].unique())
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    width = 0.8 / len(ratios)
    names = {0.0: "all selfish", 0.5: "mixed", 1.0: "all altruistic"}
    for k, ratio in enumerate(ratios):
        means = [stats.loc[(r, ratio), "mean"] for r in rates]
        sems = [stats.loc[(r, ratio), "sem"] for r in rates]
        xs = np.arange(len(rates)) + (k - (len(ratios) - 1) / 2) * width
        ax.bar(
            xs,
            means,
            width,
            yerr=sems,
            capsize=3,
            label=names.get(float(ratio), f"ratio {ratio:g}"),
        )
    labels = {0.2: "harsh (r=0.2)", 0.6: "rich (r=0.6)"}
    ax.set_xticks(range(len(rates)), [labels.get(float(r), f"r={r:g}") for r in rates])
    ax.axhline(
        scenario.max_steps,
        color="grey",
        lw=0.8,
        ls="--",
        label=f"{scenario.max_steps}-step cap (run length)",
    )
    ax.set_ylabel("survival time in steps (mean ± s.e.m.)")
    ax.set_title(f"Altruism and environment ({int(stats['count'].min())} runs per bar)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return [save(fig, run_dir / "altruism_survival")]
