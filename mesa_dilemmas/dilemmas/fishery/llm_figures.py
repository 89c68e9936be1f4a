"""Figures of LLM societies in the fishery (paper 003): survival with Tukey letters (Figs. 5-6),
efficiency over time (Figs. 15-16), norm structure (Fig. 14), ablations (Fig. 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_dilemmas.dilemmas.fishery.llm_societies import analyse, prepare
from mesa_dilemmas.scenarios.config import Scenario
from mesa_dilemmas.viz.print_size import (
    figure,
    is_column,
    legend_below,
    legend_space,
    printable,
    title,
    width,
    wrap,
)
from mesa_dilemmas.viz.saving import save

PRIOR_ORDER = ["altruistic", "mixed", "selfish"]
CONDITION_ORDER = ["Full", "OSL", "OGD", "Neither"]


def _bars(
    ax: Any,
    frame: pd.DataFrame,
    groups: list[str],
    group_col: str,
    hue_col: str,
    hue_order: list[str],
) -> list[float]:
    """Mean ± s.e.m. bars of survival time; returns the top of each group (for letters)."""
    hues = [h for h in hue_order if h in set(frame[hue_col])]
    width = 0.8 / max(1, len(hues))
    tops = []
    for k, hue in enumerate(hues):
        stats = (
            frame[frame[hue_col] == hue].groupby(group_col)["survival_time"].agg(["mean", "sem"])
        )
        stats = stats.reindex(groups)
        xs = np.arange(len(groups)) + (k - (len(hues) - 1) / 2) * width
        ax.bar(xs, stats["mean"], width, yerr=stats["sem"].fillna(0), color=f"C{k}", label=hue)
    for g in groups:
        sub = frame[frame[group_col] == g].groupby(hue_col)["survival_time"].agg(["mean", "sem"])
        tops.append(float((sub["mean"] + sub["sem"].fillna(0)).max()))
    ax.set_xticks(range(len(groups)), groups, rotation=25, ha="right", rotation_mode="anchor")
    ax.set_ylabel("survival time (rounds;\nmean ± s.e.m.)")
    return tops


def _step_cap(ax: Any, scenario: Scenario) -> None:
    """The run length as a labelled line: survival time cannot exceed it."""
    cap = getattr(scenario, "max_steps", None)
    if cap:
        ax.axhline(cap, color="grey", lw=0.8, ls="--", label=f"{cap}-step cap (run length)")


def _legend(fig: Any, axes: list[Any], title: str | None = None) -> None:
    """One legend under the panels with every label the panels drew."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    legend_below(fig, list(entries.values()), list(entries), title=title)


@printable
def survival_by_model(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    frame = frame[frame["condition"] == "Full"]
    analysis = analyse(runs, steps, scenario.params)
    envs = list(dict.fromkeys(frame["environment"]))
    fig, axes = figure(len(envs), aspect=0.8, min_panel_width=2.4, extra_height=0.8)
    for ax, env in zip(axes, envs, strict=True):
        sub = frame[frame["environment"] == env]
        models = list(dict.fromkeys(sub["model"]))
        tops = _bars(ax, sub, models, "model", "prior", PRIOR_ORDER)
        letters = analysis.tukey[env].letters if env in analysis.tukey else {}
        for x, (model, top) in enumerate(zip(models, tops, strict=True)):
            if model in letters:
                ax.text(x, top + 1, letters[model], ha="center", va="bottom", fontweight="bold")
        ax.set_xlabel("model")
        ax.set_title(
            f"{env} environment (n = {int(sub.groupby(['model', 'prior']).size().min())} per bar)"
        )
        _step_cap(ax, scenario)
    _legend(fig, axes, "initial norms")
    title(
        fig,
        "LLM societies: survival by model (letters: Tukey HSD groups; models sharing a "
        "letter do not differ)",
    )
    return [save(fig, run_dir / "llm_survival")]


@printable
def efficiency_over_time(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    merged = steps[steps["Step"] > 0].merge(
        frame[["RunId", "model", "environment", "prior", "condition"]], on="RunId"
    )
    merged = merged[merged["condition"] == "Full"]
    envs = list(dict.fromkeys(frame["environment"]))
    fig, axes = figure(len(envs), aspect=0.75, min_panel_width=2.4, extra_height=0.75)
    handles: dict[str, Any] = {}
    for ax, env in zip(axes, envs, strict=True):
        for k, (model, sub) in enumerate(
            merged[merged["environment"] == env].groupby("model", sort=False)
        ):
            stats = sub.groupby("Step")["efficiency_t"].agg(["mean", "sem"])
            (line,) = ax.plot(stats.index, stats["mean"], color=f"C{k}", label=model)
            band = ax.fill_between(
                stats.index,
                stats["mean"] - stats["sem"].fillna(0),
                stats["mean"] + stats["sem"].fillna(0),
                color=f"C{k}",
                alpha=0.2,
                lw=0,
                label=model,
            )
            handles.setdefault(model, (line, band))
        name = r"$\eta = 1$: the optimal harvest"
        handles[name] = ax.axhline(1.0, color="grey", lw=0.8, ls="--", label=name)
        ax.set_xlabel("round")
        ax.set_ylabel(r"efficiency $\eta(t)$" + "\n" + r"(harvest / $H_{\mathrm{opt}}$)")
        ax.set_title(f"{env} environment")
    legend_below(fig, list(handles.values()), list(handles))
    title(fig, "LLM societies: harvest efficiency by round (lines: mean; bands: ± s.e.m.)")
    return [save(fig, run_dir / "llm_efficiency")]


@printable
def norm_structure(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    frame = frame[frame["condition"] == "Full"].dropna(subset=["norm_similarity", "norm_alignment"])
    entries = [
        f"{model}, {prior}"
        for model, sub in frame.groupby("model", sort=False)
        for prior in sorted(set(sub["prior"]))
    ]
    fig, (ax,) = figure(
        1, aspect=0.75 if is_column() else 0.5, extra_height=0.7 + legend_space(entries, True)
    )
    markers = {"altruistic": "o", "mixed": "s", "selfish": "^"}
    for i, (model, sub) in enumerate(frame.groupby("model", sort=False)):
        for prior, part in sub.groupby("prior"):
            ax.scatter(
                part["norm_similarity"],
                part["norm_alignment"],
                s=14,
                color=f"C{i % 10}",
                marker=markers.get(prior, "x"),
                alpha=0.7,
                label=f"{model}, {prior}",
            )
    ax.set_xlabel("individual similarity\n(mean pairwise cosine, 0-1)")
    ax.set_ylabel("alignment (mean cosine\nwith the mean norm, 0-1)")
    ax.set_title(
        wrap("Final norms of each run: alignment against similarity (TF-IDF)", width() - 0.4)
    )
    _legend(fig, [ax], "model, initial norms")
    return [save(fig, run_dir / "llm_norm_structure")]


@printable
def ablation_bars(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    envs = list(dict.fromkeys(frame["environment"]))
    fig, axes = figure(len(envs), aspect=0.8, min_panel_width=2.4, extra_height=0.8)
    for ax, env in zip(axes, envs, strict=True):
        sub = frame[frame["environment"] == env]
        conditions = [c for c in CONDITION_ORDER if c in set(sub["condition"])]
        _bars(ax, sub, conditions, "condition", "prior", PRIOR_ORDER)
        ax.set_xlabel("channels kept (OSL: social learning only; OGD: group decisions only)")
        ax.xaxis.label.set_text(wrap(ax.get_xlabel(), width() / len(envs) - 0.5))
        ax.set_title(f"{env} environment")
        _step_cap(ax, scenario)
    _legend(fig, axes, "initial norms")
    title(fig, "LLM societies: survival when alignment channels are removed")
    return [save(fig, run_dir / "llm_ablation")]


def norms_table(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    """Table 4: the shared policy adopted at steps 0, 10, 20, ... (Markdown)."""
    table = analyse(runs, steps, scenario.params).norms
    path = run_dir / "group_norms.md"
    path.write_text(
        "# Group norms adopted over time\n\n"
        + (table.to_markdown(index=False) if table is not None else "(no shared policies)")
        + "\n"
    )
    return [path]
