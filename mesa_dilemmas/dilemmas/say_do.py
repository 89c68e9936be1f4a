"""Say vs do for live agents, shared by the games: statements a player made in a run (a pledge,
a proposed limit), each marked kept, broken or unparsed by the game's own rule, summarised per
seat, per run and by seat kind (LLM or rule) with Wilson 95% intervals of the keep rate.

A game's own module (beside its model) turns a finished run directory
into one row per statement with at least the columns of :data:`STATEMENT_COLUMNS`; this module
only counts.  ``status`` is one of ``kept``, ``broken``, ``unparsed`` (a statement about the
matter with no amount the rule can read: counted, never dropped) and ``unjudged`` (an amount,
but nothing to compare it with: the game ended or the player left before the action that
would keep it); ``other`` is a statement about something else (counted, nothing to keep).  The
keep rate is kept / (kept + broken).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

#: what a game's statement table holds at least
STATEMENT_COLUMNS = ("run", "round", "seat", "seat_kind", "source", "text", "amount", "status")
STATUSES = ("kept", "broken", "unparsed", "unjudged", "other")


def load_run(run_dir: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """A finished run directory's config (the raw ``config.toml`` table: game, params, grid,
    max_steps), runs and steps (ValueError when it is not a run directory)."""
    import tomllib

    config = run_dir / "config.toml"
    if not config.exists():
        raise ValueError(f"{run_dir}: not a run directory (no config.toml)")
    scenario = tomllib.loads(config.read_text())
    runs = pd.read_parquet(run_dir / "runs.parquet")
    steps_file = run_dir / "steps.parquet"
    steps = pd.read_parquet(steps_file) if steps_file.exists() else pd.DataFrame()
    return scenario, runs, steps


def run_params(scenario: dict[str, Any], row: pd.Series) -> dict[str, Any]:
    """One run's model arguments: the scenario's params with the run's grid values."""
    import json

    params = dict(scenario.get("params", {}))
    for key in scenario.get("grid", {}):
        value = row[key]
        if isinstance(value, str) and value[:1] in "[{":
            value = json.loads(value)
        params[key] = value.item() if hasattr(value, "item") else value
    return params


def llm_decisions(run_dir: Path) -> pd.DataFrame | None:
    """The run's LLM decision record (None: the run asked no language model)."""
    import sqlite3

    parquet = run_dir / "llm_decisions.parquet"
    if parquet.exists():
        return pd.read_parquet(parquet)
    db = run_dir / "llm_calls.sqlite"
    if db.exists():
        with sqlite3.connect(db) as con:
            return pd.read_sql_query("SELECT * FROM decisions", con)
    return None


def replay_model(scenario: dict[str, Any], row: pd.Series) -> Any:
    """A fresh model of one run, from its config and seed (to replay a rule-only run)."""
    from mesa_dilemmas.dilemmas.base import model_factory
    from mesa_dilemmas.dilemmas.registry import game_model

    factory = model_factory(game_model(scenario["game"]))
    return factory(rng=int(row["seed"]), **run_params(scenario, row))


def wilson(kept: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``kept`` out of ``n`` (NaN for n = 0)."""
    if n == 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(kept, n, alpha=1 - level, method="wilson")
    return float(low), float(high)


def summarise(statements: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Counts per group of ``by``: statements, each status, keep rate and its Wilson 95% CI."""
    rows = []
    if statements.empty:
        return pd.DataFrame(
            columns=[*by, "statements", *STATUSES, "keep_rate", "ci_low", "ci_high"]
        )
    for key, part in statements.groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        counts = {s: int((part["status"] == s).sum()) for s in STATUSES}
        judged = counts["kept"] + counts["broken"]
        low, high = wilson(counts["kept"], judged)
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "statements": len(part),
                **counts,
                "keep_rate": counts["kept"] / judged if judged else math.nan,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame, title: str) -> str:
    """A summary table as Markdown (keep rate and CI as percentages)."""
    if table.empty:
        return f"{title}\n\n(no statements)\n"
    keys = [
        c
        for c in table.columns
        if c not in ("statements", *STATUSES, "keep_rate", "ci_low", "ci_high")
    ]
    head = [*keys, "statements", *STATUSES, "keep rate", "95% CI (Wilson)"]
    lines = [title, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        rate = "" if math.isnan(r["keep_rate"]) else f"{r['keep_rate']:.0%}"
        ci = "" if math.isnan(r["ci_low"]) else f"[{r['ci_low']:.0%}, {r['ci_high']:.0%}]"
        cells = [str(r[k]) for k in keys] + [str(r["statements"])]
        cells += [str(r[s]) for s in STATUSES] + [rate, ci]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(statements: pd.DataFrame, out: Path, name: str, rule: str) -> list[Path]:
    """``<name>_statements.csv`` (one row per statement), ``<name>_by_seat.csv``,
    ``<name>_by_run.csv``, ``<name>_by_kind.csv``, ``<name>_by_label.csv`` (when statements
    carry a persona ``label``) and ``<name>.md`` (``rule``: how statements
    are read and judged, printed above the tables) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    tables = {
        "by_kind": summarise(statements, ["seat_kind"]),
        "by_run": summarise(statements, ["run", "seat_kind"]),
        "by_seat": summarise(statements, ["run", "seat", "seat_kind"]),
    }
    if "label" in statements.columns:  # a persona label (an SVO angle, a group, ...)
        tables["by_label"] = summarise(statements, ["seat_kind", "label"])
    paths = [out / f"{name}_statements.csv"]
    statements.to_csv(paths[0], index=False)
    for key, table in tables.items():
        path = out / f"{name}_{key}.csv"
        table.to_csv(path, index=False)
        paths.append(path)
    md = out / f"{name}.md"
    md.write_text(
        "\n".join(
            [
                f"# Say vs do: {name}",
                "",
                rule,
                "",
                markdown(tables["by_kind"], "## By seat kind"),
                *(
                    [markdown(tables["by_label"], "## By persona label")]
                    if "by_label" in tables
                    else []
                ),
                markdown(tables["by_seat"], "## By seat"),
            ]
        )
    )
    paths.append(md)
    return paths


def command(args: Any, module: Any) -> int:
    """``mesa-dilemmas analyse pledges|stated RUN_DIR``: a game's statements (``module``:
    ``statements(run_dir)``, ``NAME``, ``RULE``) written and the seat-kind table printed."""
    import sys

    run_dir = Path(args.run_dir)
    try:
        table = module.statements(run_dir)
    except (ValueError, OSError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if table.empty:
        table = pd.DataFrame(columns=list(STATEMENT_COLUMNS))
    out = Path(args.out) if args.out else run_dir / "analysis"
    paths = write(table, out, module.NAME, module.RULE)
    print(markdown(summarise(table, ["seat_kind"]), f"{module.NAME}: {run_dir}"), end="")
    for path in paths:
        print(path)
    return 0
