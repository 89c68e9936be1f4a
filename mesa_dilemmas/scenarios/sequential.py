"""Sequential stopping: add replications in batches until every contrast is decided.

``mesa-dilemmas run SCENARIO --until decided[,max=40,batch=4,alpha=0.05,spending=obf]`` runs the
scenario's grid ``batch`` replications per cell at a time and, after each batch (a *look*),
tests every contrast the scenario's claims (or its grid) name
(:func:`mesa_dilemmas.scenarios.power.contrasts_for`) against a **group-sequential boundary**:
a contrast is decided (an effect, at level ``alpha``) the first time its ``|z|`` crosses the
look's boundary; the run stops when every contrast is decided or ``max`` replications per cell
have run.  Without a boundary, testing after every batch at 1.96 would reject a true null far
more often than 5% of the time; the boundaries keep the type-I error of each contrast at
``alpha`` however many looks are taken.

**The boundaries** come from a Lan-DeMets *alpha-spending function* ``a(t)``: the cumulative
type-I error allowed by information fraction ``t = n_k / max`` (Lan and DeMets 1983).  Two are
offered, as in the group-sequential literature (Jennison and Turnbull 2000, ch. 7):

* ``obf`` (default), the O'Brien-Fleming-type ``a(t) = 4 - 4 Phi(z_{1-alpha/4} / sqrt(t))``
  (each side spends ``alpha/2`` by ``2 - 2 Phi(z_{1-alpha/4} / sqrt(t))``, as in DeMets and Lan):
  almost nothing is spent early (a look at a fifth of the runs stops only at ``|z| > 4.9``), so
  the final look is tested at nearly the fixed design's 1.96 and the maximum size is barely
  larger than the fixed design's -- the conservative choice when an early stop on a handful of
  LLM runs would be hard to defend;
* ``pocock``, the Pocock-type ``a(t) = alpha log(1 + (e - 1) t)``: about the same boundary at
  every look, so large effects stop sooner (fewer runs on average) at the price of a larger
  maximum and a stricter final test.

A boundary ``c_k`` solves ``P(|Z_j| < c_j for j < k, |Z_k| >= c_k) = a(t_k) - a(t_{k-1})`` under
the null, where ``Z_1 .. Z_K`` are the look statistics of a Brownian motion in information
(``corr(Z_i, Z_j) = sqrt(t_i / t_j)``).  ``statsmodels`` has no alpha-spending boundaries;
on PyPI, ``gsdesign`` 0.1 ships only the numerical-integration primitives and
``sequential-analysis`` 0.4 (first released this year) has them inside a library of much wider
scope.  Rather than a young dependency for some 60 lines of numerics, they are computed here by
the recursive numerical integration of Armitage, McPherson and Rowe (1969) as Jennison and
Turnbull (ch. 19) give it: the density of the score ``S_k = Z_k sqrt(t_k)`` on the continuation
region, carried from look to look on a Simpson grid.
``tests/test_sequential.py`` checks the boundaries against published tables and the total
crossing probability against scipy's multivariate normal (Genz's algorithm), an independent
computation.

**The statistic** of a contrast at a look is its test's two-sided p-value turned into a normal
score, ``z = sign Phi^-1(1 - p/2)`` (the sign: the direction of the test's own statistic):
Welch's t (means), the pooled two-proportion z (a 0/1 outcome), Mann-Whitney (a survival time
censored at the round cap; :func:`mesa_dilemmas.scenarios.power.contrast_z`).  ``outcome=`` or
the first look's runs choose the test and ``sequential.json`` keeps the choice; small early
looks are not treated as if their t were normal.  ``benchmarks/bench_sequential.py`` measures
the type-I error over thousands of null studies drawn from rule-player runs and the runs saved
against the fixed design of equal power.

**The run directory** (``--out DIR``) holds ``sequential.json`` (the design: spec, boundaries,
contrasts, the seed of each batch), ``looks.json`` (every look: number, runs per cell, each
contrast's statistic, boundary and decision, rewritten atomically after each look),
``batches/NN/`` (each batch a complete run directory of the runner: ``config.toml``,
``runs.parquet``, ``manifest.json``), and at the end ``runs.parquet`` (every batch's runs, with
a ``batch`` column) and ``sequential.md`` (the design and the stopping point).  Batch ``b`` runs
the scenario with ``replications = batch`` and the seed ``SeedSequence((seed, SEED_KEY, b))``:
common random numbers across the grid within a batch, independent batches.  ``--resume DIR``
continues the same design: finished batches are read back, a batch the kill interrupted is
resumed by the runner (its finished chunks are kept), and a different spec or scenario is
refused.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy import optimize, stats

Spending = Literal["obf", "pocock"]

#: the part of every batch seed that says "a sequential run's batch" (SeedSequence entropy)
SEED_KEY = 0x5E0
#: Simpson grid points per unit of the score's standard deviation (Jennison-Turnbull use 32)
GRID_PER_SD = 32


# -- spending functions and boundaries -------------------------------------------------------


def spent(t: float | np.ndarray, alpha: float, spending: Spending) -> np.ndarray:
    """Cumulative two-sided type-I error spent by information fraction ``t`` (Lan-DeMets)."""
    t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if spending == "obf":
        with np.errstate(divide="ignore"):
            z = stats.norm.isf(alpha / 4) / np.sqrt(np.where(t > 0, t, np.nan))
        return np.where(t > 0, 4 * stats.norm.sf(np.nan_to_num(z, nan=np.inf)), 0.0)
    if spending == "pocock":
        return alpha * np.log1p((math.e - 1) * t)
    raise ValueError(f"spending: expected 'obf' or 'pocock', got {spending!r}")


def _simpson(lo: float, hi: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Points and Simpson weights over [lo, hi] (an odd number of points)."""
    m = max(3, int(math.ceil((hi - lo) / sd * GRID_PER_SD)))
    m += 1 - m % 2
    x = np.linspace(lo, hi, m)
    w = np.ones(m)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return x, w * (hi - lo) / (3 * (m - 1))


@dataclass
class _Walk:
    """The sub-density of the score on the continuation region after the last look."""

    drift: float
    t: float = 0.0
    x: np.ndarray | None = None  # grid points (score scale)
    f: np.ndarray | None = None  # density times Simpson weight at each point

    def cross(self, t: float, c: float) -> float:
        """P(not stopped before, |Z| >= c at information t)."""
        b = c * math.sqrt(t)
        dt = t - self.t
        mean = self.drift * dt
        if self.x is None:
            return float(
                stats.norm.sf(b, mean, math.sqrt(t)) + stats.norm.cdf(-b, mean, math.sqrt(t))
            )
        sd = math.sqrt(dt)
        up = stats.norm.sf(b, self.x + mean, sd)
        down = stats.norm.cdf(-b, self.x + mean, sd)
        return float(np.sum(self.f * (up + down)))

    def advance(self, t: float, c: float) -> None:
        """Carry the density to the continuation region ``|Z| < c`` at information ``t``."""
        b = c * math.sqrt(t)
        dt = t - self.t
        mean = self.drift * dt
        sd = math.sqrt(dt)
        x, w = _simpson(-b, b, math.sqrt(min(dt, t)))
        if self.x is None:
            f = stats.norm.pdf(x, mean, math.sqrt(t)) * w
        else:
            kernel = stats.norm.pdf(x[:, None], self.x[None, :] + mean, sd)
            f = (kernel @ self.f) * w
        self.t, self.x, self.f = t, x, f


def boundaries(fractions: Sequence[float], alpha: float, spending: Spending) -> list[float]:
    """Two-sided ``|z|`` boundaries at the information fractions of the looks (the last is 1)."""
    ts = [float(t) for t in fractions]
    if not ts or any(b <= a for a, b in zip([0.0, *ts], ts, strict=False)) or ts[-1] > 1 + 1e-12:
        raise ValueError(f"looks: information fractions must rise to at most 1 (got {ts})")
    cumulative = spent(np.array(ts), alpha, spending)
    walk = _Walk(0.0)
    out: list[float] = []
    previous = 0.0
    for t, total in zip(ts, cumulative, strict=True):
        target = float(total - previous)
        previous = float(total)
        if target <= 1e-15:
            c = 40.0  # nothing to spend at this look: never stops here
        else:
            c = float(
                optimize.brentq(lambda c, t=t, a=target: walk.cross(t, c) - a, 0.1, 40.0, xtol=1e-9)
            )
        out.append(c)
        walk.advance(t, c)
    return out


@dataclass(frozen=True)
class Operating:
    """What a design does at a drift: power, the expected fraction of ``max`` used, and the
    probability of stopping at each look."""

    power: float
    expected_fraction: float
    stop: list[float]


def operating(fractions: Sequence[float], bounds: Sequence[float], drift: float) -> Operating:
    """Crossing probabilities at ``drift`` (the mean of ``Z`` at the full size: ``d sqrt(n/2)``
    for a two-sample contrast of ``n`` per arm)."""
    walk = _Walk(drift)
    stop = []
    for t, c in zip(fractions, bounds, strict=True):
        stop.append(walk.cross(t, c))
        walk.advance(t, c)
    power = float(sum(stop))
    used = sum(p * t for p, t in zip(stop, fractions, strict=True)) + (1 - power) * fractions[-1]
    return Operating(power, float(used), stop)


def drift_for_power(fractions: Sequence[float], bounds: Sequence[float], power: float) -> float:
    """The drift at which the design has ``power``."""
    return float(
        optimize.brentq(
            lambda d: operating(fractions, bounds, d).power - power, 0.0, 20.0, xtol=1e-7
        )
    )


def fixed_drift(alpha: float, power: float) -> float:
    """The drift at which a single two-sided test at ``alpha`` has ``power``."""
    return float(stats.norm.isf(alpha / 2) + stats.norm.isf(1 - power))


# -- the design and its looks ---------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """``--until decided[,max=N,batch=B,alpha=A,spending=obf|pocock,metric=NAME,outcome=KIND]``."""

    max: int
    batch: int
    alpha: float = 0.05
    spending: Spending = "obf"
    metric: str | None = None
    #: the outcome's kind (``mean``, ``proportion``, ``survival``); None: read off the first
    #: look's runs and kept in ``sequential.json`` for every later look and a resume
    outcome: str | None = None

    def looks(self) -> list[int]:
        """Replications per cell at each look (the last look at ``max``)."""
        sizes = list(range(self.batch, self.max, self.batch))
        return [*sizes, self.max]

    def fractions(self) -> list[float]:
        return [n / self.max for n in self.looks()]

    def bounds(self) -> list[float]:
        return boundaries(self.fractions(), self.alpha, self.spending)

    def text(self) -> str:
        return (
            f"decided,max={self.max},batch={self.batch},alpha={self.alpha:g},"
            f"spending={self.spending}"
            + (f",metric={self.metric}" if self.metric else "")
            + (f",outcome={self.outcome}" if self.outcome else "")
        )


SPEC_KEYS = ("max", "batch", "alpha", "spending", "metric", "outcome")


def parse_until(text: str, default_max: int) -> Spec:
    """Parse ``--until``; one line naming the field on a mistake (a ``ValueError``)."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts or parts[0] != "decided":
        raise ValueError(f"--until: expected 'decided[,max=N,batch=B,...]' (got {text!r})")
    fields: dict[str, str] = {}
    for part in parts[1:]:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in SPEC_KEYS:
            raise ValueError(
                f"--until {key or part!r}: unknown key; allowed: {', '.join(SPEC_KEYS)}"
            )
        fields[key] = value.strip()

    def integer(name: str, default: int) -> int:
        raw = fields.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"--until {name}: expected a whole number (got {raw!r})") from None
        if value < 1:
            raise ValueError(f"--until {name}: must be at least 1 (got {value})")
        return value

    top = integer("max", default_max)
    if top < 2:
        raise ValueError(f"--until max: must be at least 2 replications per cell (got {top})")
    batch = integer("batch", max(2, math.ceil(top / 5)))
    if batch > top:
        raise ValueError(f"--until batch: {batch} is more than max={top}")
    if batch < 2 and top > 1:
        raise ValueError("--until batch: at least 2 (a look needs two runs per arm)")
    alpha_raw = fields.get("alpha", "0.05")
    try:
        alpha = float(alpha_raw)
    except ValueError:
        raise ValueError(f"--until alpha: expected a number (got {alpha_raw!r})") from None
    if not 0 < alpha < 0.5:
        raise ValueError(f"--until alpha: must be in (0, 0.5) (got {alpha:g})")
    spending = fields.get("spending", "obf")
    if spending not in ("obf", "pocock"):
        raise ValueError(f"--until spending: expected 'obf' or 'pocock' (got {spending!r})")
    outcome = fields.get("outcome") or None
    if outcome is not None and outcome not in ("mean", "proportion", "survival"):
        raise ValueError(
            f"--until outcome: expected 'mean', 'proportion' or 'survival' (got {outcome!r})"
        )
    return Spec(top, batch, alpha, spending, fields.get("metric") or None, outcome)  # type: ignore[arg-type]


@dataclass
class Look:
    number: int
    n_per_cell: int
    #: per contrast: n per arm, z, boundary, decision ("effect" / "continue" / "no effect")
    contrasts: list[dict[str, Any]] = field(default_factory=list)


def judge_look(
    number: int,
    n: int,
    bound: float,
    last: bool,
    stats_by_contrast: dict[str, tuple[int, int, float, float]],
    decided: dict[str, int],
) -> Look:
    """One look: each contrast's statistic against the boundary; ``decided`` maps a decided
    contrast to the look that decided it (updated in place)."""
    look = Look(number, n)
    for name, (n_a, n_b, z, effect) in stats_by_contrast.items():
        if name in decided:
            decision = "effect (decided earlier)"
        elif math.isfinite(z) and abs(z) >= bound:
            decision = "effect"
            decided[name] = number
        else:
            decision = "no effect at alpha (cap reached)" if last else "continue"
        look.contrasts.append(
            {
                "contrast": name,
                "n_a": n_a,
                "n_b": n_b,
                "effect": None if not math.isfinite(effect) else effect,
                "z": None if not math.isfinite(z) else z,
                "boundary": bound,
                "decision": decision,
            }
        )
    return look


def simulate_study(
    draw: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]],
    spec: Spec,
    kind: str,
    rng: np.random.Generator,
    bounds: Sequence[float] | None = None,
) -> tuple[bool, int]:
    """One simulated sequential study of one contrast: ``draw(rng, k)`` gives ``k`` more
    outcomes of each arm.  Returns (rejected, replications per arm used)."""
    from mesa_dilemmas.scenarios.power import contrast_test

    bounds = list(bounds) if bounds is not None else spec.bounds()
    a_all: list[np.ndarray] = []
    b_all: list[np.ndarray] = []
    have = 0
    for n, c in zip(spec.looks(), bounds, strict=True):
        a, b = draw(rng, n - have)
        a_all.append(a)
        b_all.append(b)
        have = n
        z, _ = contrast_test(np.concatenate(a_all), np.concatenate(b_all), kind)
        if math.isfinite(z) and abs(z) >= c:
            return True, n
    return False, have


@dataclass(frozen=True)
class StudyResults:
    """Simulated sequential studies of one contrast: the share that rejected and the
    replications per arm they used."""

    studies: int
    rejected: int
    mean_n: float

    @property
    def rate(self) -> float:
        return self.rejected / self.studies


def simulate_studies(
    pool_a: np.ndarray,
    pool_b: np.ndarray,
    spec: Spec,
    kind: str,
    studies: int,
    seed: int,
    bounds: Sequence[float] | None = None,
) -> StudyResults:
    """``studies`` sequential studies with both arms resampled from pools of runs (``pool_a``
    against ``pool_b``; the same pool twice: studies of a true null), all advanced together
    look by look.  ``bounds`` replaces the design's boundaries (e.g. 1.96 at every look: naive
    repeated testing)."""
    from mesa_dilemmas.scenarios.power import contrast_z

    pool_a, pool_b = np.asarray(pool_a, dtype=float), np.asarray(pool_b, dtype=float)
    bounds = list(bounds) if bounds is not None else spec.bounds()
    rng = np.random.default_rng(seed)
    top = spec.max
    a = rng.choice(pool_a, size=(studies, top))  # each study's runs, in the order they come
    b = rng.choice(pool_b, size=(studies, top))
    running = np.ones(studies, dtype=bool)
    rejected = np.zeros(studies, dtype=bool)
    used = np.full(studies, top)
    for n, c in zip(spec.looks(), bounds, strict=True):
        idx = np.flatnonzero(running)
        if not len(idx):
            break
        z = contrast_z(a[idx, :n], b[idx, :n], kind)
        hit = idx[np.abs(z) >= c]
        rejected[hit] = True
        used[hit] = n
        running[hit] = False
    return StudyResults(studies, int(rejected.sum()), float(used.mean()))


# -- the driver -------------------------------------------------------------------------------


def batch_seed(seed: int, batch: int) -> int:
    state = np.random.SeedSequence([int(seed), SEED_KEY, int(batch)]).generate_state(1, np.uint32)
    return int(state[0])


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None


def _write_json(path: Path, value: Any) -> None:
    from mesa_dilemmas.files import write_text_atomic

    write_text_atomic(path, json.dumps(value, indent=2, default=str) + "\n")


@dataclass
class SequentialOutcome:
    out_dir: Path
    spec: Spec
    looks: list[Look]
    decided: dict[str, int]
    stopped_at: int
    n_per_cell: int
    runs: int
    wall_time: float
    report: str


def run_until(
    name_or_path: str,
    until: str | None,
    *,
    out_dir: Path | None = None,
    resume: Path | None = None,
    overrides: list[str] | None = None,
    run: Callable[..., Any],
    default_out: Callable[[Any], Path],
    **run_kwargs: Any,
) -> SequentialOutcome:
    """Drive the runner batch by batch until every contrast is decided or ``max``
    replications per cell have run.  ``run`` is ``mesa_dilemmas.scenarios.runner.run_scenario``
    and ``default_out`` its ``default_out_dir`` (passed in: the runner imports the run-size
    checks, which import this module's sizing side, so this module does not import it)."""
    import time

    import pandas as pd

    from mesa_dilemmas.scenarios.config import ConfigError, load_scenario
    from mesa_dilemmas.scenarios.power import (
        contrast_arms,
        contrast_test,
        contrasts_for,
        outcome_kind,
    )

    overrides = list(overrides or [])
    scenario, _ = load_scenario(name_or_path, overrides)
    saved = _read_json(resume / "sequential.json") if resume is not None else None
    if resume is not None and saved is None:
        raise ConfigError(f"--resume {resume}: not a sequential run directory (no sequential.json)")
    try:
        spec = parse_until(until or (saved or {}).get("until", "decided"), scenario.replications)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if scenario.experiment not in ("batch", "batch:BatchExperiment"):
        raise ConfigError(f"--until: only batch scenarios add replications ({scenario.experiment})")
    contrasts, source = contrasts_for(scenario)
    if not contrasts:
        raise ConfigError(f"--until: {scenario.name} has no contrast to decide ({source})")
    from mesa_dilemmas.dilemmas import game_model

    metric = spec.metric or next(iter(getattr(game_model(scenario.game), "RUN_METRICS", ())), None)
    if metric is None:
        raise ConfigError("--until metric: the game names no run metric; give metric=NAME")
    bounds = spec.bounds()
    design = {
        "scenario": name_or_path,
        "overrides": overrides,
        "until": spec.text(),
        "metric": metric,
        "looks": spec.looks(),
        "boundaries": bounds,
        "spent": [float(x) for x in spent(np.array(spec.fractions()), spec.alpha, spec.spending)],
        "contrasts": [c.name for c in contrasts],
        "contrast_source": source,
        "batch_seeds": [batch_seed(scenario.seed, b + 1) for b in range(len(spec.looks()))],
    }
    if resume is not None:
        out = resume
        mine = {k: design[k] for k in ("scenario", "overrides", "until", "metric", "contrasts")}
        theirs = {k: saved.get(k) for k in mine}
        if mine != theirs:
            different = [k for k in mine if mine[k] != theirs[k]]
            raise ConfigError(
                f"--resume {out}: the sequential design differs from the saved one in "
                f"{', '.join(different)}; resume with the same scenario, --set and --until"
            )
    else:
        out = out_dir or default_out(scenario)
        if out.exists() and any(out.iterdir()):
            raise ConfigError(
                f"--out {out}: directory exists and is not empty (use --resume to continue it)"
            )
        out.mkdir(parents=True, exist_ok=True)
        _write_json(out / "sequential.json", design)
    if resume is None:
        print(
            f"sequential design: up to {spec.max} replications per cell in {len(spec.looks())} "
            f"looks ({spec.text()}); each batch is sized and priced before it runs",
            file=sys.stderr,
        )
    started = time.time()
    frames: list[pd.DataFrame] = []
    decided: dict[str, int] = {}
    looks: list[Look] = []
    kind: str | None = None
    stopped_at = 0
    for number, n in enumerate(spec.looks(), start=1):
        have = spec.looks()[number - 2] if number > 1 else 0
        folder = out / "batches" / f"{number:02d}"
        batch_overrides = [
            *overrides,
            f"replications={n - have}",
            f"seed={design['batch_seeds'][number - 1]}",
        ]
        again = folder.is_dir() and (folder / "config.toml").is_file()
        try:
            run(
                name_or_path,
                out_dir=None if again else folder,
                resume=folder if again else None,
                overrides=batch_overrides,
                **run_kwargs,
            )
        except ConfigError:
            if resume is None and number == 1 and not folder.exists():  # refused before it ran
                import shutil

                shutil.rmtree(out, ignore_errors=True)
            raise
        batch_runs = pd.read_parquet(folder / "runs.parquet")
        if metric not in batch_runs:
            raise ConfigError(
                f"--until metric: {metric!r} is not a run metric of {scenario.name}; "
                f"have: {', '.join(c for c in batch_runs.columns if c not in scenario.grid)}"
            )
        batch_runs["batch"] = number
        frames.append(batch_runs)
        runs = pd.concat(frames, ignore_index=True)
        if kind is None:  # one test for every look: the spec's, the saved one, or the first look's
            kind = spec.outcome or (saved or {}).get("kind")
            kind = kind or outcome_kind(runs[metric], scenario.max_steps)
            if design.get("kind") != kind:
                design["kind"] = kind
                _write_json(out / "sequential.json", {**(saved or {}), **design})
        results: dict[str, tuple[int, int, float, float]] = {}
        for c in contrasts:
            a, b = contrast_arms(runs, c, metric)
            z, effect = contrast_test(a, b, kind)
            results[c.name] = (len(a), len(b), z, effect)
        last = number == len(spec.looks())
        look = judge_look(number, n, bounds[number - 1], last, results, decided)
        looks.append(look)
        _write_json(out / "looks.json", [asdict(x) for x in looks])
        stopped_at = number
        if len(decided) == len(contrasts):
            break
    runs = pd.concat(frames, ignore_index=True)
    from mesa_dilemmas.files import to_parquet_atomic

    to_parquet_atomic(runs, out / "runs.parquet")
    wall = time.time() - started
    n_used = spec.looks()[stopped_at - 1]
    report = format_report(scenario.name, spec, design, looks, decided, n_used, kind or "?")
    from mesa_dilemmas.files import write_text_atomic

    write_text_atomic(out / "sequential.md", report + "\n")
    return SequentialOutcome(out, spec, looks, decided, stopped_at, n_used, len(runs), wall, report)


def format_report(
    name: str,
    spec: Spec,
    design: dict[str, Any],
    looks: list[Look],
    decided: dict[str, int],
    n_used: int,
    kind: str,
) -> str:
    """The design, every look and the stopping point, as text (``sequential.md``)."""
    label = {"obf": "Lan-DeMets O'Brien-Fleming-type", "pocock": "Lan-DeMets Pocock-type"}
    lines = [
        f"# {name}: sequential design",
        "",
        f"design: up to {spec.max} replications per cell in looks of {spec.batch} "
        f"({len(spec.looks())} looks), two-sided alpha = {spec.alpha:g} per contrast, "
        f"{label[spec.spending]} alpha spending; outcome {design['metric']} ({kind}); "
        f"contrasts: {design['contrast_source']}",
        "boundaries |z| >= " + ", ".join(f"{c:.3f}" for c in design["boundaries"]),
        "",
        "look  n/cell  contrast  n_a  n_b  z  boundary  decision",
    ]
    for look in looks:
        for c in look.contrasts:
            z = "n/a" if c["z"] is None else f"{c['z']:+.2f}"
            lines.append(
                f"{look.number}  {look.n_per_cell}  {c['contrast']}  {c['n_a']}  {c['n_b']}  "
                f"{z}  {c['boundary']:.3f}  {c['decision']}"
            )
    done = len(decided) == len(design["contrasts"])
    if done and n_used < spec.max:
        end = (
            f"stopped at look {len(looks)} of {len(spec.looks())}: every contrast decided with "
            f"{n_used} of at most {spec.max} replications per cell"
        )
    elif done:
        end = f"every contrast decided by the last look ({n_used} replications per cell)"
    else:
        end = (
            f"ran to the cap: {n_used} replications per cell; decided {len(decided)} of "
            f"{len(design['contrasts'])} contrasts (the rest: no effect at alpha)"
        )
    lines += ["", end]
    return "\n".join(lines)


@dataclass(frozen=True)
class PlannedDesign:
    """A group-sequential design of the same power as a fixed one of ``fixed`` per arm."""

    spending: Spending
    looks: int
    max: int
    expected: float  # replications per cell expected at the effect the fixed design is sized at
    inflation: float


def plan(
    fixed: int, power: float, alpha: float, spending: Spending = "obf", looks: int = 5
) -> PlannedDesign:
    """The maximum size (``fixed`` times the inflation factor) and the expected size at the
    effect of a group-sequential design with ``looks`` equally spaced looks and the power of a
    fixed design of ``fixed`` replications per arm (normal theory)."""
    fractions = [k / looks for k in range(1, looks + 1)]
    bounds = boundaries(fractions, alpha, spending)
    drift = drift_for_power(fractions, bounds, power)
    inflation = (drift / fixed_drift(alpha, power)) ** 2
    top = looks * math.ceil(fixed * inflation / looks)  # equal batches: a multiple of looks
    expected = operating(fractions, bounds, drift).expected_fraction * fixed * inflation
    return PlannedDesign(spending, looks, top, min(expected, top), inflation)
