"""``mesa-dilemmas analyse variants RUN_DIR``: would the finding survive another wording?

A run whose scenario sweeps the prompt wording (``[grid] llm.prompt_variant = [0, 1, 2, 3, 4]``,
see docs/prompt_variants.md) holds each condition under several frozen wordings of the same
prompts.  This analysis reads the finished run directory (``config.toml`` and ``runs.parquet``)
and reports, for one outcome column of the runs table:

* **a variance decomposition**: a type-II ANOVA (statsmodels ``ols`` + ``anova_lm``) of the
  outcome on the factors that vary in the run -- the model, the prompt variant, the persona
  (the group labels or persona tables of the players), the seed (replication i of every cell
  shares its seed) and any other grid axis of the scenario -- each with its share of the
  variance, eta squared = SS_factor / SS_total (the rest is the residual's);
* **the outcome per variant**: its mean with a t-based 95% confidence interval;
* **holds in x of k variants**: the scenario's contrasts -- as ``estimate --power`` reads them,
  the grid's: every level of a non-wording factor (a grid axis, the model, the persona) against
  its first level -- tested within each variant alone (Welch's t-test); a contrast *holds* in a
  variant when it is significant there (p < alpha) with the sign of its effect over all
  variants pooled.  A run with no such factor has no contrast: the per-variant means are then
  the whole report.

The factors are read back from each run's row: the ``players`` column a prompt-variant sweep
writes (each LLM group's ``llm_options``), the game's model column (its shorthand ``llm``, when
it has one), ``seed``; the scenario's fixed ``[llm] prompt_variant`` otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: the factors of a wording design, in the order the ANOVA lists them
FACTORS = ("model", "prompt_variant", "persona", "seed")
#: run columns that are bookkeeping, never a factor
_NOT_FACTORS = {"RunId", "iteration", "players", "steps_run"}


@dataclass
class VariantReport:
    """What the analysis found (``text`` is what the command prints)."""

    outcome: str
    factors: list[str]
    anova: pd.DataFrame
    per_variant: pd.DataFrame
    contrasts: pd.DataFrame
    k: int
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        lines = [
            f"outcome: {self.outcome}; {self.k} prompt variant(s); factors: "
            f"{', '.join(self.factors) or 'none vary'}"
        ]
        if len(self.anova):
            lines += [
                "",
                "== ANOVA (type II) and each factor's share of the variance",
                _fmt(self.anova),
            ]
        lines += ["", "== the outcome per prompt variant (mean, 95% CI)", _fmt(self.per_variant)]
        if len(self.contrasts):
            lines += ["", "== contrasts within each variant", _fmt(self.contrasts)]
        else:
            lines += [
                "",
                "no contrast: no factor besides the wording and the seed varies in the run",
            ]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _fmt(frame: pd.DataFrame) -> str:
    return frame.to_string(float_format=lambda v: f"{v:.4g}")


# -- reading a run ------------------------------------------------------------------------------


def read_run(run_dir: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """A run directory's resolved scenario (``config.toml``) and runs table."""
    run_dir = Path(run_dir)
    config = run_dir / "config.toml"
    if not config.is_file():
        raise ValueError(f"{run_dir}: not a run directory (no config.toml)")
    runs_file = run_dir / "runs.parquet"
    if not runs_file.is_file():
        raise ValueError(f"{run_dir}: no runs.parquet (is the run finished?)")
    return tomllib.loads(config.read_text()), pd.read_parquet(runs_file)


def _players(value: Any, default: Any) -> dict[str, Any] | None:
    if isinstance(value, str) and value.strip().startswith("{"):
        return json.loads(value)
    if isinstance(value, dict):
        return value
    return default if isinstance(default, dict) else None


def _groups(players: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not players:
        return []
    roles = players.get("roles") or {}
    return [*players.get("groups", []), *(roles.values() if isinstance(roles, dict) else [])]


def factor_frame(config: dict[str, Any], runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with the wording design's factors as columns: ``model``, ``prompt_variant``,
    ``persona``, ``seed`` (read back from each run's players table, its model column and the
    scenario's ``[llm]`` table)."""
    params = config.get("params", {})
    base_variant = int(config.get("llm", {}).get("prompt_variant", 0))
    out = runs.copy()
    models, variants, personas = [], [], []
    for row in runs.to_dict("records"):
        players = _players(row.get("players"), params.get("players"))
        llm_groups = [g for g in _groups(players) if g.get("llm")]
        if "llm" in row and isinstance(row["llm"], str) and row["llm"]:
            model = row["llm"]  # a game's model shorthand (``llm``)
        elif llm_groups:
            model = "+".join(sorted({str(g["llm"]) for g in llm_groups}))
        else:
            model = str(params.get("llm", ""))
        found = sorted(
            {int(g.get("llm_options", {}).get("prompt_variant", base_variant)) for g in llm_groups}
        ) or [base_variant]
        variant: Any = found[0] if len(found) == 1 else "mixed:" + "+".join(map(str, found))
        labelled = [
            str(g.get("label") or json.dumps(g.get("persona"), sort_keys=True))
            for g in _groups(players)
            if g.get("label") or g.get("persona")
        ]
        models.append(model)
        variants.append(variant)
        personas.append("+".join(labelled))
    out["model"], out["prompt_variant"], out["persona"] = models, variants, personas
    if "seed" not in out.columns:
        out["seed"] = 0
    return out


def varying_factors(config: dict[str, Any], frame: pd.DataFrame) -> list[str]:
    """The wording design's factors that take two or more values in the run, then any other
    grid axis of the scenario that does."""
    grid = [k for k in config.get("grid", {}) if k not in _NOT_FACTORS and k in frame.columns]
    names = [*FACTORS, *(k for k in grid if k not in FACTORS)]
    return [f for f in names if frame[f].astype(str).nunique() > 1]


# -- the statistics ------------------------------------------------------------------------------


def variance_table(frame: pd.DataFrame, outcome: str, factors: list[str]) -> pd.DataFrame:
    """Type-II ANOVA of ``outcome`` on the main effects of ``factors`` (each a categorical),
    with eta squared = SS / SS_total per row (Residual included)."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    if not factors:
        return pd.DataFrame(columns=["df", "sum_sq", "F", "p", "eta_sq"])
    data = pd.DataFrame({f"f{i}": frame[f].astype(str) for i, f in enumerate(factors)})
    data["y"] = pd.to_numeric(frame[outcome], errors="coerce").to_numpy(float)
    data = data.dropna()
    n_params = 1 + sum(data[f"f{i}"].nunique() - 1 for i in range(len(factors)))
    if len(data) <= n_params:
        raise ValueError(
            f"{len(data)} runs for {n_params} parameters leave no residual: add replications"
        )
    formula = "y ~ " + " + ".join(f"C(f{i})" for i in range(len(factors)))
    with warnings.catch_warnings():  # an unbalanced or degenerate design warns; F and p say it
        warnings.simplefilter("ignore")
        table = anova_lm(smf.ols(formula, data=data).fit(), typ=2)
    table = table.rename(index={f"C(f{i})": f for i, f in enumerate(factors)})
    total = float(((data["y"] - data["y"].mean()) ** 2).sum())
    table["eta_sq"] = table["sum_sq"] / total if total > 0 else math.nan
    return table.rename(columns={"PR(>F)": "p"})[["df", "sum_sq", "F", "p", "eta_sq"]]


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its t-based confidence interval (nan bounds for fewer than two values)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    if len(v) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return mean, mean - half, mean + half


def per_variant(frame: pd.DataFrame, outcome: str) -> pd.DataFrame:
    rows = []
    for variant, part in frame.groupby(frame["prompt_variant"].astype(str), sort=True):
        values = pd.to_numeric(part[outcome], errors="coerce").to_numpy(float)
        mean, low, high = mean_ci(values)
        rows.append(
            {
                "prompt_variant": variant,
                "n": len(part),
                "mean": mean,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return pd.DataFrame(rows).set_index("prompt_variant")


def contrasts_by_variant(
    frame: pd.DataFrame, outcome: str, factors: list[str], alpha: float = 0.05
) -> pd.DataFrame:
    """Every level of each non-wording factor (not the variant, not the seed) against its first
    level, within each variant (Welch's t-test) and pooled; ``holds``: significant within the
    variant with the pooled effect's sign; the last column counts the variants it holds in."""
    from mesa_dilemmas.analysis.stats import welch_t

    axes = [f for f in factors if f not in ("prompt_variant", "seed")]
    variants = sorted(frame["prompt_variant"].astype(str).unique())
    y = pd.to_numeric(frame[outcome], errors="coerce")
    rows = []
    for axis in axes:
        column = frame[axis].astype(str)
        levels = list(dict.fromkeys(column))  # in the order the run has them (the grid's)
        for level in levels[1:]:
            pooled = y[column == level].mean() - y[column == levels[0]].mean()
            held = 0
            row: dict[str, Any] = {
                "contrast": f"{axis}={level} vs {levels[0]}",
                "pooled_effect": pooled,
            }
            for v in variants:
                here = frame["prompt_variant"].astype(str) == v
                a = y[here & (column == level)].dropna().to_numpy(float)
                b = y[here & (column == levels[0])].dropna().to_numpy(float)
                if len(a) >= 2 and len(b) >= 2 and np.ptp(np.concatenate([a, b])) > 0:
                    p = welch_t(a, b).p
                else:
                    p = math.nan
                effect = a.mean() - b.mean() if len(a) and len(b) else math.nan
                holds = bool(p < alpha and np.sign(effect) == np.sign(pooled) and pooled != 0)
                held += holds
                row[f"v{v}_effect"] = effect
                row[f"v{v}_p"] = p
            row["holds_in"] = f"{held} of {len(variants)} variants"
            rows.append(row)
    return pd.DataFrame(rows).set_index("contrast") if rows else pd.DataFrame()


def analyse(
    config: dict[str, Any], runs: pd.DataFrame, outcome: str, alpha: float = 0.05
) -> VariantReport:
    """The variance decomposition, per-variant means and contrasts of one outcome."""
    if outcome not in runs.columns:
        numeric = [c for c in runs.columns if pd.api.types.is_numeric_dtype(runs[c])]
        raise ValueError(
            f"--outcome: no column {outcome!r} in the runs table; numeric columns: "
            + ", ".join(c for c in numeric if c not in _NOT_FACTORS)
        )
    if not pd.api.types.is_numeric_dtype(pd.to_numeric(runs[outcome], errors="coerce")):
        raise ValueError(f"--outcome: column {outcome!r} is not numeric")
    frame = factor_frame(config, runs)
    factors = varying_factors(config, frame)
    notes = []
    try:
        anova = variance_table(frame, outcome, factors)
    except ValueError as exc:  # e.g. more parameters than runs
        anova = pd.DataFrame(columns=["df", "sum_sq", "F", "p", "eta_sq"])
        notes.append(f"no ANOVA: {exc}")
    k = frame["prompt_variant"].astype(str).nunique()
    if k < 2:
        notes.append("the run has one wording: sweep llm.prompt_variant to compare wordings")
    return VariantReport(
        outcome=outcome,
        factors=factors,
        anova=anova,
        per_variant=per_variant(frame, outcome),
        contrasts=contrasts_by_variant(frame, outcome, factors, alpha),
        k=k,
        notes=notes,
    )


def default_outcome(run_dir: Path, runs: pd.DataFrame) -> str:
    """The run's first summarised metric (``summary.json``), else its first numeric column."""
    summary = Path(run_dir) / "summary.json"
    if summary.is_file():
        overall = json.loads(summary.read_text()).get("overall", {})
        for name in overall:
            if name in runs.columns:
                return name
    numeric = [
        c
        for c in runs.columns
        if c not in _NOT_FACTORS and c != "seed" and pd.api.types.is_numeric_dtype(runs[c])
    ]
    if not numeric:
        raise ValueError(f"{run_dir}: the runs table has no numeric column to analyse")
    return numeric[0]


def write(report: VariantReport, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "variants.txt", out / "variants_anova.csv", out / "variants_means.csv"]
    paths[0].write_text(report.text + "\n")
    report.anova.to_csv(paths[1])
    report.per_variant.to_csv(paths[2])
    if len(report.contrasts):
        paths.append(out / "variants_contrasts.csv")
        report.contrasts.to_csv(paths[-1])
    return paths


# -- the command ----------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """``analyse variants RUN_DIR [--outcome COLUMN]`` (entry point group
    ``mesa_dilemmas.analyses``)."""
    p = subparsers.add_parser(
        "variants",
        help="prompt wording as a factor: ANOVA and shares of variance over model, prompt "
        "variant, persona and seed; the outcome per variant; contrasts held in x of k variants",
    )
    p.add_argument("run_dir", help="a finished run directory (runs.parquet, config.toml)")
    p.add_argument(
        "--outcome",
        help="a numeric column of runs.parquet (default: the run's first summarised metric)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of a contrast")
    p.add_argument("--out", help="where to write the tables (default RUN_DIR/analysis)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    try:
        config, runs = read_run(run_dir)
        outcome = args.outcome or default_outcome(run_dir, runs)
        if not 0 < args.alpha < 1:
            raise ValueError(f"--alpha: must be between 0 and 1 (got {args.alpha})")
        report = analyse(config, runs, outcome, alpha=args.alpha)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.text)
    for path in write(report, Path(args.out) if args.out else run_dir / "analysis"):
        print(path)
    return 0
