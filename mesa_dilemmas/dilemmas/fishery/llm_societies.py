"""Analyses of LLM societies in the fishery (paper 003, Sec. 4.2): per environment, a two-way
ANOVA of survival time on model x altruism ratio with Tukey HSD letters over models; Welch
t-tests of each ablation against the full framework; the group norms adopted over time."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_dilemmas.analysis.stats import TukeyResult, tukey_hsd, two_way_anova, welch_t

ABLATIONS = {
    (True, True): "Full",
    (True, False): "OSL",
    (False, True): "OGD",
    (False, False): "Neither",
}
PRIORS = {1.0: "altruistic", 0.5: "mixed", 0.0: "selfish"}
ENVIRONMENTS = {0.2: "harsh", 0.6: "rich"}


def model_label(spec: Any) -> str:
    return str(spec)


def condition(row: pd.Series) -> str:
    return ABLATIONS[
        (bool(row.get("social_learning", True)), bool(row.get("group_decision", True)))
    ]


def prepare(runs: pd.DataFrame, defaults: dict[str, Any]) -> pd.DataFrame:
    """Fill fixed parameters from the config into the run table and add readable labels."""
    frame = runs.copy()
    for key in ("llm", "growth_rate", "altruism_ratio", "social_learning", "group_decision"):
        if key not in frame.columns:
            frame[key] = defaults.get(key)
    frame["model"] = frame["llm"].map(model_label)
    frame["prior"] = frame["altruism_ratio"].map(lambda r: PRIORS.get(float(r), f"ratio {r:g}"))
    frame["environment"] = frame["growth_rate"].map(
        lambda r: ENVIRONMENTS.get(float(r), f"r={r:g}")
    )
    frame["condition"] = frame.apply(condition, axis=1)
    return frame


@dataclass
class Analysis:
    anova: dict[str, pd.DataFrame] = field(default_factory=dict)
    tukey: dict[str, TukeyResult] = field(default_factory=dict)
    welch: pd.DataFrame | None = None
    norms: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


def analyse(
    runs: pd.DataFrame, steps: pd.DataFrame, defaults: dict[str, Any], every: int = 10
) -> Analysis:
    frame = prepare(runs, defaults)
    out = Analysis()
    full = frame[frame["condition"] == "Full"]
    for env, sub in full.groupby("environment", sort=False):
        n_models, n_priors = sub["model"].nunique(), sub["prior"].nunique()
        if len(sub) < 3 or (n_models < 2 and n_priors < 2):
            out.notes.append(f"{env}: one model and one prior only; no ANOVA")
            continue
        if sub.groupby(["model", "prior"])["survival_time"].count().min() < 2:
            out.notes.append(f"{env}: fewer than two runs in a cell; the ANOVA has no error term")
            continue
        a, b = ("model", "prior") if n_models > 1 else ("prior", "model")
        out.anova[env] = two_way_anova(sub, "survival_time", a, b)
        if n_models > 1:
            out.tukey[env] = tukey_hsd(sub, "survival_time", "model")
    if frame["condition"].nunique() > 1 and (frame["condition"] == "Full").any():
        rows = []
        base = frame[frame["condition"] == "Full"]["survival_time"]
        for cond in ("OSL", "OGD", "Neither"):
            other = frame[frame["condition"] == cond]["survival_time"]
            if len(other) > 1 and len(base) > 1:
                res = welch_t(other, base)
                rows.append(
                    {
                        "comparison": f"{cond} vs Full",
                        "prior": "all",
                        "mean": res.mean_a,
                        "mean_full": res.mean_b,
                        "t": res.t,
                        "df": res.df,
                        "p": res.p,
                    }
                )
            for prior, part in frame[frame["condition"] == cond].groupby("prior"):
                ref = frame[(frame["condition"] == "Full") & (frame["prior"] == prior)][
                    "survival_time"
                ]
                if len(part) > 1 and len(ref) > 1:
                    res = welch_t(part["survival_time"], ref)
                    rows.append(
                        {
                            "comparison": f"{cond} vs Full",
                            "prior": prior,
                            "mean": res.mean_a,
                            "mean_full": res.mean_b,
                            "t": res.t,
                            "df": res.df,
                            "p": res.p,
                        }
                    )
        out.welch = pd.DataFrame(rows)
    out.norms = norm_timeline(steps, frame, every)
    return out


def norm_timeline(steps: pd.DataFrame, frame: pd.DataFrame, every: int = 10) -> pd.DataFrame | None:
    """The shared policy at steps 0, every, 2*every, ... of the first replication of each cell (Table 4)."""
    if steps is None or "shared_policy" not in steps.columns:
        return None
    first = (
        frame.sort_values("iteration")
        .groupby(["model", "environment", "prior", "condition"])
        .head(1)
    )
    rows = []
    for run in first.itertuples():
        seq = steps[steps["RunId"] == run.RunId].set_index("Step")["shared_policy"]
        for step in range(0, int(seq.index.max()) + 1, every):
            if step in seq.index:
                rows.append(
                    {
                        "model": run.model,
                        "environment": run.environment,
                        "prior": run.prior,
                        "condition": run.condition,
                        "step": step,
                        "shared_policy": seq.loc[step],
                    }
                )
    return pd.DataFrame(rows)


def write(analysis: Analysis, out_dir: Path) -> list[Path]:
    """Write CSV / Markdown tables and a JSON digest; return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    digest: dict[str, Any] = {"notes": analysis.notes, "anova": {}, "tukey_letters": {}}
    lines = ["# LLM societies: statistics", ""]
    for env, table in analysis.anova.items():
        path = out_dir / f"anova_{env}.csv"
        table.to_csv(path)
        paths.append(path)
        digest["anova"][env] = json.loads(
            table.reset_index(names="effect").to_json(orient="records")
        )
        lines += [
            f"## Two-way ANOVA of survival time ({env} environment)",
            "",
            table.round(4).to_markdown(),
            "",
        ]
    for env, tukey in analysis.tukey.items():
        path = out_dir / f"tukey_{env}.csv"
        tukey.table.to_csv(path, index=False)
        paths.append(path)
        digest["tukey_letters"][env] = tukey.letters
        letters = ", ".join(f"{k}: {v}" for k, v in tukey.letters.items())
        lines += [
            f"## Tukey HSD over models ({env})",
            "",
            tukey.table.to_markdown(index=False),
            "",
            f"Compact letters (shared letter = not different at 0.05): {letters}",
            "",
        ]
    if analysis.welch is not None and not analysis.welch.empty:
        path = out_dir / "welch_ablations.csv"
        analysis.welch.to_csv(path, index=False)
        paths.append(path)
        digest["welch"] = json.loads(analysis.welch.to_json(orient="records"))
        lines += [
            "## Ablations: Welch t-tests against Full",
            "",
            analysis.welch.round(4).to_markdown(index=False),
            "",
        ]
    if analysis.norms is not None and not analysis.norms.empty:
        path = out_dir / "group_norms.csv"
        analysis.norms.to_csv(path, index=False)
        paths.append(path)
        lines += [
            "## Group norms adopted over time (Table 4)",
            "",
            analysis.norms.to_markdown(index=False),
            "",
        ]
    if analysis.notes:
        lines += ["## Notes", "", *[f"- {n}" for n in analysis.notes], ""]
    report = out_dir / "analysis.md"
    report.write_text("\n".join(lines))
    digest_path = out_dir / "analysis.json"
    digest_path.write_text(json.dumps(digest, indent=2) + "\n")
    return [report, digest_path, *paths]
