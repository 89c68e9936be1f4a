"""Figures of LLM societies in the fishery (paper 003): survival with Tukey letters (Figs. 5-6),
efficiency over time (Figs. 15-16), norm structure (Fig. 14), ablations (Fig. 7)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mesa_dilemmas.dilemmas.fishery.llm_societies import analyse, prepare
from mesa_dilemmas.scenarios.config import Scenario
from mesa_dilemmas.viz.saving import save

PRIOR_ORDER = ["altruistic", "mixed", "selfish"]
CONDITION_ORDER = ["Full", "OSL", "OGD", "Neither"]


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    return save(fig, path)


def _bars(
    ax: plt.Axes,
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
        ax.bar(xs, stats["mean"], width, yerr=stats["sem"].fillna(0), capsize=3, label=hue)
    for g in groups:
        sub = frame[frame[group_col] == g].groupby(hue_col)["survival_time"].agg(["mean", "sem"])
        tops.append(float((sub["mean"] + sub["sem"].fillna(0)).max()))
    ax.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
    ax.set_ylabel("survival time (mean ± s.e.m.)")
    return tops


def _step_cap(ax: plt.Axes, scenario: Scenario) -> None:
    """The run length as a labelled line: survival time cannot exceed it."""
    cap = getattr(scenario, "max_steps", None)
    if cap:
        ax.axhline(cap, color="grey", lw=0.8, ls="--", label=f"{cap}-step cap")


def survival_by_model(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    frame = frame[frame["condition"] == "Full"]
    analysis = analyse(runs, steps, scenario.params)
    envs = list(dict.fromkeys(frame["environment"]))
    fig, axes = plt.subplots(1, len(envs), figsize=(5.5 * len(envs), 4.2), squeeze=False)
    for ax, env in zip(axes[0], envs, strict=True):
        sub = frame[frame["environment"] == env]
        models = list(dict.fromkeys(sub["model"]))
        tops = _bars(ax, sub, models, "model", "prior", PRIOR_ORDER)
        letters = analysis.tukey[env].letters if env in analysis.tukey else {}
        for x, (model, top) in enumerate(zip(models, tops, strict=True)):
            if model in letters:
                ax.text(x, top + 1, letters[model], ha="center", va="bottom", fontweight="bold")
        ax.set_title(
            f"{env} environment (n = {int(sub.groupby(['model', 'prior']).size().min())} per bar)"
        )
        _step_cap(ax, scenario)
        ax.legend(title="initial norms", fontsize=8)
    return [_save(fig, run_dir / "llm_survival")]


def efficiency_over_time(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    merged = steps[steps["Step"] > 0].merge(
        frame[["RunId", "model", "environment", "prior", "condition"]], on="RunId"
    )
    merged = merged[merged["condition"] == "Full"]
    envs = list(dict.fromkeys(frame["environment"]))
    fig, axes = plt.subplots(1, len(envs), figsize=(5.5 * len(envs), 4), squeeze=False)
    for ax, env in zip(axes[0], envs, strict=True):
        for model, sub in merged[merged["environment"] == env].groupby("model", sort=False):
            stats = sub.groupby("Step")["efficiency_t"].agg(["mean", "sem"])
            ax.plot(stats.index, stats["mean"], label=model)
            ax.fill_between(
                stats.index,
                stats["mean"] - stats["sem"].fillna(0),
                stats["mean"] + stats["sem"].fillna(0),
                alpha=0.2,
            )
        ax.axhline(1.0, color="grey", lw=0.8, ls="--", label=r"$\eta = 1$: the optimal harvest")
        ax.set_xlabel("step")
        ax.set_ylabel(r"efficiency $\eta(t)$ = total harvest / $H_{\mathrm{opt}}$ (mean ± s.e.m.)")
        ax.set_title(f"{env} environment")
        ax.legend(fontsize=8)
    return [_save(fig, run_dir / "llm_efficiency")]


def norm_structure(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    frame = frame[frame["condition"] == "Full"].dropna(subset=["norm_similarity", "norm_alignment"])
    fig, ax = plt.subplots(figsize=(6, 4.6))
    markers = {"altruistic": "o", "mixed": "s", "selfish": "^"}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (model, sub) in enumerate(frame.groupby("model", sort=False)):
        for prior, part in sub.groupby("prior"):
            ax.scatter(
                part["norm_similarity"],
                part["norm_alignment"],
                color=colors[i % len(colors)],
                marker=markers.get(prior, "x"),
                alpha=0.7,
                label=f"{model}, {prior}",
            )
    ax.set_xlabel("individual similarity (mean pairwise cosine)")
    ax.set_ylabel("alignment (mean cosine with the mean norm)")
    ax.set_title("Final norms: alignment against individual similarity (TF-IDF)")
    ax.legend(fontsize=7)
    return [_save(fig, run_dir / "llm_norm_structure")]


def ablation_bars(
    run_dir: Path, runs: pd.DataFrame, steps: pd.DataFrame, scenario: Scenario
) -> list[Path]:
    frame = prepare(runs, scenario.params)
    envs = list(dict.fromkeys(frame["environment"]))
    fig, axes = plt.subplots(1, len(envs), figsize=(5.5 * len(envs), 4.2), squeeze=False)
    for ax, env in zip(axes[0], envs, strict=True):
        sub = frame[frame["environment"] == env]
        conditions = [c for c in CONDITION_ORDER if c in set(sub["condition"])]
        _bars(ax, sub, conditions, "condition", "prior", PRIOR_ORDER)
        ax.set_title(f"{env} environment: ablations")
        _step_cap(ax, scenario)
        ax.legend(title="initial norms", fontsize=8)
    return [_save(fig, run_dir / "llm_ablation")]


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
