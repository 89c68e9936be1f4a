"""Power before paying: how many replications a scenario's contrasts need, and what they cost.

``mesa-dilemmas estimate SCENARIO --power 0.8 --effect D`` (a standardised effect: Cohen's d for
a mean, Cohen's h for a share) or ``--effect-from RUN`` (a pilot or an earlier run's directory)
or ``--effect-from rule`` (the scenario played by rule players at reduced size: free) turns the
outcome's variance into **replications per grid cell** for each contrast, and prices that design
beside the scenario's fixed one with the LLM estimate (:mod:`mesa_dilemmas.scenarios.size`):
per-replication calls, tokens and dollars times replications.

**Contrasts.** The claims a game registers for LLM players (``LLM_CLAIMS`` of its
``mesa_dilemmas.claims`` module) name the scenario that tests them; a claim that also names
the contrasts it tests (an attribute ``contrasts``: names such as ``"altruism_ratio=0.0 vs 1.0
at growth_rate=0.6"``) gives those.  The bundled claims name none yet, so the contrasts are the
scenario's grid: every level of an axis against that axis's first level, with the other axes
held at each of their levels.  Which claims the scenario carries is printed beside them.  A
scenario without a grid has one condition and no contrast (its claims are about a level, not a
difference): it is said so, not sized.

**The outcome** is the game's first run metric (``RUN_METRICS[0]``: a survival time, a
0/1 survival, ...) or ``--metric``; its kind decides the test:

* ``proportion`` (every value 0 or 1): the pooled two-proportion z-test; Cohen's
  ``h = 2 asin sqrt(p1) - 2 asin sqrt(p2)``, replications from statsmodels' ``NormalIndPower``;
* ``survival`` (whole rounds, some runs lasting to the round cap ``max_steps``): Mann-Whitney,
  which with every censored run censored at the same cap is the Gehan-Wilcoxon test of two
  survival curves (ties at the cap); replications by simulation -- both arms resampled from the
  pilot's runs, the test applied to each of ``SIMULATIONS`` draws (a seeded generator), the
  smallest n with the power found by bisection;
* ``mean`` (anything else): Welch's t-test; Cohen's d over the pooled standard deviation,
  replications from statsmodels' ``TTestIndPower``.

A given ``--effect`` is read as d (or, with ``--outcome proportion``, as h); for a survival
outcome without a pilot it is sized by the t-test and divided by Mann-Whitney's asymptotic
relative efficiency, ``3 / pi``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from mesa_dilemmas.scenarios.config import ConfigError, Scenario

Kind = Literal["mean", "proportion", "survival"]
KINDS: tuple[str, ...] = ("mean", "proportion", "survival")

#: simulated studies per candidate n (survival outcomes)
SIMULATIONS = 400
#: the largest replications per cell a design may ask for
MAX_REPLICATIONS = 100_000
#: the rule stand-in's replications per cell (``--effect-from rule``)
STANDIN_REPLICATIONS = 40
#: Mann-Whitney's asymptotic relative efficiency against the t-test (normal outcomes)
MW_ARE = 3 / math.pi


@dataclass(frozen=True)
class Contrast:
    """One grid cell (``other``) against another (``reference``), differing on one axis."""

    axis: str
    reference: dict[str, Any]
    other: dict[str, Any]

    @property
    def name(self) -> str:
        held = {k: v for k, v in self.other.items() if k != self.axis}
        where = ", ".join(f"{k}={_show(v)}" for k, v in held.items())
        return (
            f"{self.axis}={_show(self.other[self.axis])} vs {_show(self.reference[self.axis])}"
            + (f" at {where}" if where else "")
        )


def _show(value: Any) -> str:
    return value if isinstance(value, str) else repr(value).replace(" ", "")


def _llm_claims(name: str) -> list[Any]:
    """The LLM claims (``LLM_CLAIMS`` of every registered claims module) that name the
    bundled scenario ``name``."""
    from mesa_dilemmas.dilemmas.registry import CLAIMS, extensions

    out = []
    for entry in extensions(CLAIMS).values():
        try:
            module = entry.load()
        except Exception:  # noqa: BLE001 - a broken plug-in's claims are not this command's
            continue
        out += [
            c for c in getattr(module, "LLM_CLAIMS", ()) if getattr(c, "scenario", None) == name
        ]
    return out


def declared_claims(name: str) -> list[str]:
    """The statements of the LLM claims registered for the bundled scenario ``name``."""
    return [f"{c.paper} {c.where}: {c.statement}" for c in _llm_claims(name)]


def grid_contrasts(scenario: Scenario) -> list[Contrast]:
    """Every level of a grid axis against the axis's first level, the other axes (those with
    two levels or more) held at each of their levels."""
    axes = {k: v for k, v in scenario.grid.items() if len(v) > 1}
    out: list[Contrast] = []
    for axis, levels in axes.items():
        others = {k: v for k, v in axes.items() if k != axis}  # single levels are fixed
        for held in itertools.product(*others.values()):
            base = dict(zip(others, held, strict=True))
            for level in levels[1:]:
                out.append(Contrast(axis, {**base, axis: levels[0]}, {**base, axis: level}))
    return out


def contrasts_for(scenario: Scenario) -> tuple[list[Contrast], str]:
    """The scenario's contrasts and where they come from (a sentence).

    A claim may name the contrasts it tests (an attribute ``contrasts``: names in the form of
    :attr:`Contrast.name`, ``"altruism_ratio=0.0 vs 1.0 at growth_rate=0.6"``): the grid's
    contrasts it names are taken.  Otherwise every grid contrast is (:func:`grid_contrasts`)."""
    claims = _llm_claims(scenario.name)
    grid = grid_contrasts(scenario)
    named = {n for c in claims for n in (getattr(c, "contrasts", None) or ())}
    chosen = [c for c in grid if c.name in named]
    if chosen:
        return chosen, f"the {len(chosen)} contrast(s) its declared claims name"
    said = f"{len(claims)} declared claim(s) name this scenario but no contrast of its grid; "
    if not grid:
        why = "the scenario has one condition (no grid axis with two levels)"
        return [], (said + why) if claims else why
    why = "the grid's conditions: each level of an axis vs its first level"
    return grid, (said + why) if claims else f"no declared claims; {why}"


# -- outcomes and tests ---------------------------------------------------------------------


def outcome_kind(values: Sequence[float] | pd.Series, cap: int | None = None) -> Kind:
    """What kind of outcome ``values`` are (see the module's docstring)."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(dtype=float)
    if len(v) and np.isin(v, (0.0, 1.0)).all():
        return "proportion"
    whole = len(v) and np.allclose(v, np.round(v))
    if whole and cap is not None and (v >= cap).any() and v.max() <= cap:
        return "survival"
    return "mean"


def contrast_arms(
    runs: pd.DataFrame, contrast: Contrast, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """The metric's values in the contrast's two cells: (other, reference)."""

    def cell(point: dict[str, Any]) -> np.ndarray:
        mask = np.ones(len(runs), dtype=bool)
        for key, value in point.items():
            if key not in runs:
                continue
            column = runs[key]
            if isinstance(value, float | int) and not isinstance(value, bool):
                mask &= np.isclose(pd.to_numeric(column, errors="coerce"), value)
            else:
                mask &= (column.astype(str) == str(value)).to_numpy()
        return pd.to_numeric(runs.loc[mask, metric], errors="coerce").dropna().to_numpy(float)

    return cell(contrast.other), cell(contrast.reference)


def contrast_z(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """The signed normal score of each row's two-sided test of ``a`` against ``b`` (rows:
    studies; columns: runs), vectorised so that thousands of simulated studies are tested at
    once: ``z = sign Phi^-1(1 - p/2)``, the sign the direction of the test's own statistic (a
    pooled two-proportion z is returned as it is).  Rows whose runs are all equal give 0."""
    a, b = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
    n_a, n_b = a.shape[1], b.shape[1]
    if n_a < 2 or n_b < 2:
        return np.full(a.shape[0], np.nan)
    flat = np.ptp(np.concatenate([a, b], axis=1), axis=1) == 0
    with np.errstate(all="ignore"):
        if kind == "proportion":
            pooled = (a.sum(1) + b.sum(1)) / (n_a + n_b)
            se = np.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
            z = np.where(se > 0, (a.mean(1) - b.mean(1)) / se, 0.0)
            return np.where(flat, 0.0, z)
        if kind == "survival":
            test = stats.mannwhitneyu(a, b, axis=1, alternative="two-sided", method="asymptotic")
            sign = np.sign(test.statistic - n_a * n_b / 2)
        else:
            test = stats.ttest_ind(a, b, axis=1, equal_var=False)
            sign = np.sign(a.mean(1) - b.mean(1))
            # two constants that differ: certain (Welch's t is undefined there)
            certain = (a.var(1) == 0) & (b.var(1) == 0) & ~flat
        z = sign * stats.norm.isf(np.clip(np.nan_to_num(test.pvalue, nan=1.0), 1e-300, 1) / 2)
    if kind != "survival":
        z = np.where(certain, 40.0 * sign, z)
    return np.where(flat, 0.0, z)


def contrast_test(a: np.ndarray, b: np.ndarray, kind: str) -> tuple[float, float]:
    """(signed normal score of the two-sided p-value, mean difference ``a - b``) of one
    contrast (:func:`contrast_z` on one study)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan
    return float(contrast_z(a, b, kind)[0]), float(a.mean() - b.mean())


def cohen_d(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return math.nan
    pooled = math.sqrt(
        ((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2)
    )
    diff = float(a.mean() - b.mean())
    if pooled == 0:
        return 0.0 if diff == 0 else math.copysign(math.inf, diff)
    return diff / pooled


def cohen_h(a: np.ndarray, b: np.ndarray) -> float:
    from statsmodels.stats.proportion import proportion_effectsize

    return float(proportion_effectsize(float(np.mean(a)), float(np.mean(b))))


# -- replications ---------------------------------------------------------------------------


def _solved(fn: Any) -> int | None:
    try:
        value = float(fn())
    except Exception:  # noqa: BLE001 - statsmodels' root finder fails for tiny effects
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    n = max(2, math.ceil(value - 1e-9))
    return n if n <= MAX_REPLICATIONS else None


def n_for_effect(effect: float, kind: str, power: float, alpha: float) -> int | None:
    """Replications per arm for a two-sided test at ``alpha`` with ``power`` at a standardised
    ``effect`` (d; h for a proportion); None when the effect is zero or needs too many."""
    from statsmodels.stats.power import NormalIndPower, TTestIndPower

    effect = abs(float(effect))
    if not math.isfinite(effect):
        return 2 if effect == math.inf else None
    if effect == 0:
        return None
    if kind == "proportion":
        return _solved(lambda: NormalIndPower().solve_power(effect, power=power, alpha=alpha))
    n = _solved(lambda: TTestIndPower().solve_power(effect, power=power, alpha=alpha))
    if n is not None and kind == "survival":  # a rank test on normal-like outcomes
        n = min(MAX_REPLICATIONS, max(2, math.ceil(n / MW_ARE)))
    return n


def simulated_power(
    a: np.ndarray,
    b: np.ndarray,
    n: int,
    alpha: float,
    rng: np.random.Generator,
    sims: int = SIMULATIONS,
) -> float:
    """Mann-Whitney's power with ``n`` per arm, both arms resampled from the pilot's runs."""
    xa = rng.choice(np.asarray(a, dtype=float), size=(sims, n))
    xb = rng.choice(np.asarray(b, dtype=float), size=(sims, n))
    tied = np.ptp(np.concatenate([xa, xb], axis=1), axis=1) == 0
    with np.errstate(all="ignore"):
        p = stats.mannwhitneyu(xa, xb, axis=1, alternative="two-sided", method="asymptotic").pvalue
    p = np.where(tied, 1.0, p)
    return float(np.mean(p < alpha))


def n_by_simulation(
    a: np.ndarray, b: np.ndarray, power: float, alpha: float, seed: int = 0, sims: int = SIMULATIONS
) -> int | None:
    """The smallest n per arm whose simulated power reaches ``power`` (bisection; every
    candidate n draws from the same seeded stream, so the answer is reproducible)."""
    if np.ptp(np.concatenate([a, b])) == 0 or len(a) < 2 or len(b) < 2:
        return None

    def enough(n: int) -> bool:
        return simulated_power(a, b, n, alpha, np.random.default_rng(seed), sims) >= power

    hi = 4
    while not enough(hi):
        hi *= 2
        if hi > 4096:
            return None
    lo = max(2, hi // 2)
    if enough(lo):
        lo = 2 if enough(2) else lo
        if lo == 2:
            return 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass
class ContrastSize:
    contrast: Contrast
    kind: str
    #: the standardised effect (d or h) it is sized at, and where it comes from
    effect: float
    source: str
    n: int | None
    means: tuple[float, float] | None = None


def size_from_effect(
    contrasts: list[Contrast], effect: float, kind: str, power: float, alpha: float
) -> list[ContrastSize]:
    n = n_for_effect(effect, kind, power, alpha)
    label = "h" if kind == "proportion" else "d"
    return [ContrastSize(c, kind, effect, f"{label} = {effect:g} given", n) for c in contrasts]


def size_from_runs(
    contrasts: list[Contrast],
    runs: pd.DataFrame,
    metric: str,
    cap: int | None,
    power: float,
    alpha: float,
    kind: str | None = None,
    where: str = "pilot",
    seed: int = 0,
) -> list[ContrastSize]:
    """Each contrast's effect in ``runs`` and the replications it needs."""
    if metric not in runs:
        have = ", ".join(c for c in runs.columns if c not in ("RunId", "iteration", "seed"))
        raise ConfigError(f"--metric: {metric!r} is not a column of the {where} runs; have: {have}")
    kind = kind or outcome_kind(runs[metric], cap)
    out = []
    for c in contrasts:
        if c.axis not in runs:  # e.g. the model an LLM seat calls, which a rule stand-in lacks
            why = f"{where}: does not vary {c.axis}"
            out.append(ContrastSize(c, kind, math.nan, why, None))
            continue
        a, b = contrast_arms(runs, c, metric)
        if len(a) < 2 or len(b) < 2:
            out.append(
                ContrastSize(c, kind, math.nan, f"{where}: fewer than 2 runs in a cell", None)
            )
            continue
        means = (float(a.mean()), float(b.mean()))
        if kind == "proportion":
            effect = cohen_h(a, b)
            n = n_for_effect(effect, kind, power, alpha)
            label = "h"
        elif kind == "survival":
            effect = cohen_d(a, b)
            n = n_by_simulation(a, b, power, alpha, seed=seed)
            label = "d"
        else:
            effect = cohen_d(a, b)
            n = n_for_effect(effect, kind, power, alpha)
            label = "d"
        out.append(
            ContrastSize(c, kind, effect, f"{label} = {effect:+.2f} in the {where}", n, means)
        )
    return out


# -- the pilot ------------------------------------------------------------------------------


def rule_standin(raw: dict[str, Any], model_cls: type) -> dict[str, Any]:
    """The raw scenario with every LLM (and human) seat and role handed to the game's rule
    players: the same grid and rounds, no call to any model."""
    from mesa_dilemmas.agents.population import Population
    from mesa_dilemmas.dilemmas.base import shorthand_names

    params = dict(raw.get("params") or {})
    if raw.get("population") is not None:
        params["players"] = raw["population"]
    grid = dict(raw.get("grid") or {})
    names = set(shorthand_names(model_cls))
    keys = list(grid)
    found: dict[str, Any] | None = None
    for combo in itertools.product(*grid.values()) if keys else [()]:
        point = {**params, **dict(zip(keys, combo, strict=True))}
        pop = model_cls.population_from_params(point)
        keep = [g for g in pop.groups if g.kind not in ("llm", "human")]
        roles = {k: g for k, g in pop.roles.items() if g.kind not in ("llm", "human")}
        table = Population(groups=keep, placement=pop.placement, roles=roles).model_dump(
            exclude_defaults=True
        )
        if found is not None and table != found:
            raise ConfigError(
                "--effect-from rule: the scenario seats different players in different cells; "
                "give a pilot run directory instead"
            )
        found = table
    out = {k: v for k, v in raw.items() if k not in ("population", "llm")}
    out["params"] = {k: v for k, v in params.items() if k not in names and k != "players"}
    if found:
        out["params"]["players"] = found
    out["grid"] = {  # shorthands, populations and LLM settings: none of them plays here
        k: v
        for k, v in grid.items()
        if k not in names
        and k != "players"
        and not k.startswith("llm.")
        and not isinstance(v, dict)
    }
    return out


def run_rule_standin(
    name_or_path: str,
    overrides: list[str],
    replications: int = STANDIN_REPLICATIONS,
    processes: int = 1,
) -> pd.DataFrame:
    """The scenario played by rule players, ``replications`` per cell, in a temporary
    directory; its runs table."""
    import tempfile
    from pathlib import Path

    from mesa_dilemmas.dilemmas import game_model
    from mesa_dilemmas.scenarios.batch import BatchExperiment, BatchOptions
    from mesa_dilemmas.scenarios.config import apply_overrides, load_raw, validate
    from mesa_dilemmas.scenarios.execution import ExecutionSettings
    from mesa_dilemmas.scenarios.execution import use as run_on
    from mesa_dilemmas.scenarios.experiment import RunContext

    raw = apply_overrides(load_raw(name_or_path), overrides)
    if raw.get("experiment", "batch") not in ("batch", "batch:BatchExperiment"):
        raise ConfigError("--effect-from rule: only batch scenarios have a rule stand-in")
    raw = rule_standin(raw, game_model(raw["game"]))
    raw["replications"] = replications
    raw.pop("options", None)
    raw.pop("execution", None)
    scenario, _ = validate(raw)
    with tempfile.TemporaryDirectory(prefix="mesa-dilemmas-standin-") as tmp:
        ctx = RunContext(out_dir=Path(tmp), processes=processes, progress=False)
        with run_on(ExecutionSettings(), processes, None):
            results = BatchExperiment().run(scenario, BatchOptions(), ctx)
        return results.runs.copy()


def pilot_runs(
    source: str, name_or_path: str, overrides: list[str], processes: int = 1
) -> tuple[pd.DataFrame, str]:
    """The runs an effect is read from: ``rule`` (the stand-in) or a run directory."""
    from pathlib import Path

    if source == "rule":
        runs = run_rule_standin(name_or_path, overrides, processes=processes)
        return runs, f"rule stand-in ({STANDIN_REPLICATIONS} runs per cell, no LLM)"
    path = Path(source)
    table = path / "runs.parquet"
    if not table.is_file():
        raise ConfigError(
            f"--effect-from {source}: not a run directory (no runs.parquet); or 'rule'"
        )
    runs = pd.read_parquet(table)
    return runs, f"pilot {path} ({len(runs)} runs)"


# -- the design's price ---------------------------------------------------------------------


@dataclass
class DesignRow:
    label: str
    replications: float


def format_design_table(
    rows: list[DesignRow], cells: int, fixed_replications: int, estimate: Any | None
) -> str:
    """Replications, runs, calls, tokens and dollars of each design, from the fixed design's
    estimate scaled per replication (``estimate``: an ``LLMEstimate``, or None)."""
    head = ["design", "repl/cell", "runs", "calls", "tokens in", "tokens out", "list $", "batch $"]
    body = []
    for r in rows:
        scale = r.replications / fixed_replications
        reps = (
            f"{r.replications:,.1f}"
            if r.replications != int(r.replications)
            else f"{int(r.replications):,}"
        )
        line = [r.label, reps, f"{r.replications * cells:,.0f}"]
        if estimate is None:
            line += ["-"] * 5
        else:
            calls = sum(x.tally.calls for x in estimate.rows) * scale
            t_in = sum(x.tally.tokens_in for x in estimate.rows) * scale
            t_out = sum(x.tally.tokens_out for x in estimate.rows) * scale
            priced = [x for x in estimate.rows if x.list_usd is not None]
            usd = f"${sum(x.list_usd for x in priced) * scale:,.2f}" if priced else "unpriced"
            batch = (
                f"${sum(x.batch_usd or 0 for x in priced) * scale:,.2f}" if priced else "unpriced"
            )
            line += [f"{calls:,.0f}", f"{t_in:,.0f}", f"{t_out:,.0f}", usd, batch]
        body.append(line)
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(x, widths, strict=True))
        )
        for x in [head, *body]
    )


def format_sizes(sizes: list[ContrastSize], power: float, alpha: float) -> str:
    lines = [f"replications per cell for {power:.0%} power at two-sided alpha = {alpha:g}:"]
    for s in sizes:
        if s.n is not None:
            need = f"{s.n:,}"
        elif math.isfinite(s.effect) or "does not vary" not in s.source:
            need = "cannot be sized (no effect)"
        else:
            need = "cannot be sized"
        means = "" if s.means is None else f"; means {s.means[0]:.3g} vs {s.means[1]:.3g}"
        lines.append(f"  {s.contrast.name}: {need}  ({s.kind}, {s.source}{means})")
    return "\n".join(lines)


def needed(sizes: list[ContrastSize]) -> int | None:
    """The replications per cell every sized contrast needs (the largest)."""
    ns = [s.n for s in sizes if s.n is not None]
    return max(ns) if ns else None
