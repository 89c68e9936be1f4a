"""What a paper's claim is, and how its verdict is written: the vocabulary of the claims each
game registers (entry point group ``mesa_dilemmas.claims``) and of ``mesa-dilemmas reproduce``.

An :class:`Experiment` is a bundled scenario with the sizes of each mode (``tiny`` for the test
of the report's structure, ``quick`` for reduced sizes, ``full`` for the
scenario as bundled); a :class:`Claim` is one statement of a paper, paraphrased with its section
or figure, and a function that reads the experiment's run directory and returns a
:class:`Verdict`: our number, its uncertainty, the test used and the status.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import pandas as pd

Mode = Literal["tiny", "quick", "full"]
#: reproduced: the paper's direction, significant at its alpha over the paper's range;
#: not reproduced: significant the other way, or a null where the paper reports an effect
#: (with the test's power at the paper's effect size); inconclusive: underpowered (the power
#: and the replications that would be needed); by construction: the rule players were written
#: or tuned to show it (never counted as reproduced); not testable: the claim cannot fail at
#: this point (a ceiling, a tie at a cap); not run: not run here.
Status = Literal[
    "reproduced",
    "not reproduced",
    "inconclusive",
    "by construction",
    "not testable",
    "not run",
]


@dataclass(frozen=True)
class Experiment:
    """A bundled scenario and its sizes per mode (``--set`` overrides; full = as bundled)."""

    key: str
    scenario: str
    tiny: Sequence[str]
    quick: Sequence[str]
    full: Sequence[str] = ()

    def overrides(self, mode: Mode) -> list[str]:
        return list({"tiny": self.tiny, "quick": self.quick, "full": self.full}[mode])


@dataclass(frozen=True)
class Verdict:
    """Our number, with its uncertainty, how it was tested, and what that means for the claim."""

    ours: str
    test: str
    status: Status
    uncertainty: str = ""
    #: the claim's effect standardised (an effect over its standard error), signed so that > 0
    #: is the paper's direction; what ``mesa-dilemmas calibrate`` maximises for a claim target
    #: and the robustness check reads (None: the judge gives no such number, or the claim
    #: cannot fail here: "not testable")
    z: float | None = None
    #: the verdict the judge reached before the report applied ``Claim.by_construction``
    judged: Status | None = None


@dataclass(frozen=True)
class Claim:
    paper: str  # "003"
    where: str  # "Sec. 4.1, Fig. 2"
    statement: str  # the paper's claim, paraphrased
    experiment: str  # Experiment.key
    judge: Callable[[Path], Verdict]
    figures: Sequence[str] = ()
    #: the finding this claim belongs to, for a game's extra section (e.g. its robustness)
    finding: str = ""
    #: why the claim may not reproduce, with the evidence; printed when it is not reproduced
    note: str = ""
    #: the parameters or rules of the players that encode this finding (written or tuned to
    #: show it): non-empty makes the verdict "by construction", never "reproduced"
    by_construction: Sequence[str] = ()

    @property
    def key(self) -> str:
        """The claim's name in targets files and tables: its judge's name without ``judge_``."""
        return self.judge.__name__.removeprefix("judge_")


@dataclass(frozen=True)
class LLMClaim:
    """A claim about LLM players that ``reproduce`` does not run (it would call a model): the
    report lists it as "not run here" with the bundled scenario that tests it and what one run
    of that scenario would cost on the paper's model (``mesa-dilemmas estimate``)."""

    paper: str
    where: str
    statement: str
    scenario: str
    #: the model the estimate prices, as ``provider:model``
    model: str
    #: ``--set`` overrides that put ``{model}`` in the scenario's LLM seats
    overrides: Sequence[str] = ("params.llm={model}",)
    #: every model the paper states this claim for (``provider:model``; default: ``model``);
    #: the report prices one run on each
    models: Sequence[str] = ()
    #: the contrasts of the scenario's grid this claim compares, named as
    #: :attr:`mesa_dilemmas.scenarios.power.Contrast.name` (``"meeting=False vs True"``): what
    #: ``estimate --power`` sizes and ``run --until`` decides; empty: every grid contrast
    contrasts: Sequence[str] = ()

    @property
    def priced(self) -> list[str]:
        return list(self.models or (self.model,))

    def estimate_overrides(self, model: str | None = None) -> list[str]:
        return [o.format(model=model or self.model) for o in self.overrides]


@dataclass
class Section:
    """A game's extra part of the report (``SECTIONS`` of its claims module): markdown lines,
    the wall time it took, and whether an earlier invocation computed it (``--resume``)."""

    name: str
    lines: list[str]
    wall: float = 0.0
    reused: bool = False


#: a game's extra section: fn(claims, mode, out, processes, progress, report) -> Section or None
SectionFn = Callable[..., "Section | None"]


def read_runs(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "runs.parquet")


def read_steps(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "steps.parquet")


# -- small statistics helpers the claims share ------------------------------------------------


def fmt(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def p_text(p: float) -> str:
    return "p n/a" if not math.isfinite(p) else (f"p = {p:.2g}" if p >= 1e-4 else "p < 1e-4")


def welch_z(a: Sequence[float], b: Sequence[float]) -> float:
    """(mean a - mean b) over its Welch standard error; 0 when both are constant and equal,
    +-10 when they are constant and differ."""
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return math.nan
    diff = float(a.mean() - b.mean())
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return diff / se if se > 0 else math.copysign(10.0, diff) if diff else 0.0


def paired_z(d: Sequence[float]) -> float:
    """Mean paired difference over its standard error (0 / +-10 for constant differences)."""
    import numpy as np

    d = np.asarray(d, dtype=float)
    if len(d) < 2:
        return math.nan
    diff = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(len(d))
    return diff / se if se > 0 else math.copysign(10.0, diff) if diff else 0.0


#: the significance level of every judge (the papers' own, where they state one: 0.05)
ALPHA = 0.05
#: a test with at least this power at the paper's effect size that finds no effect counts as
#: evidence against the paper (a null that "not reproduced" may rest on); below it, inconclusive
POWER = 0.8
#: where a paper states an effect without a number (its figure only), the effect size the power
#: is computed at: Cohen's conventional medium effects, stated beside every such verdict
MEDIUM_D = 0.5  # a standardised mean difference
MEDIUM_R = 0.3  # a correlation


@dataclass(frozen=True)
class Power:
    """A test's power to see the paper's effect, and the replications that would give it
    :data:`POWER` (per arm, or per cell, as ``unit`` says)."""

    power: float
    needed: float | None
    #: the effect size it is computed at, and where that comes from
    at: str
    unit: str = "replications"

    def text(self) -> str:
        need = (
            ""
            if self.needed is None or not math.isfinite(self.needed)
            else f"; {POWER:.0%} power needs about {math.ceil(self.needed):,} {self.unit}"
        )
        return f"power {self.power:.2f} at {self.at}{need}"


def _clip(x: float) -> float:
    return float(min(max(x, 0.0), 1.0)) if math.isfinite(x) else math.nan


def _solve(fn: Callable[[], float]) -> float | None:
    try:
        value = float(fn())
    except Exception:  # noqa: BLE001 - statsmodels' root finder can fail for tiny effects
        return None
    return value if math.isfinite(value) and value > 0 else None


def power_paired(n: int, d: float = MEDIUM_D, *, at: str = "", alpha: float = ALPHA) -> Power:
    """A paired (one-sample) t-test's power at the standardised effect ``d`` (mean difference
    over the differences' standard deviation); a signed-rank test's is close to it."""
    from statsmodels.stats.power import TTestPower

    tool = TTestPower()
    power = tool.power(effect_size=d, nobs=max(n, 2), alpha=alpha) if n >= 2 else math.nan
    needed = _solve(lambda: tool.solve_power(effect_size=d, power=POWER, alpha=alpha))
    return Power(_clip(power), needed, at or f"d = {d:g}", "pairs")


def power_two_sample(
    n1: int, n2: int, d: float = MEDIUM_D, *, at: str = "", alpha: float = ALPHA
) -> Power:
    """A two-sample t-test's power at the standardised difference ``d`` (a rank test's is
    close to it), and the runs per arm that would give :data:`POWER`."""
    from statsmodels.stats.power import TTestIndPower

    tool = TTestIndPower()
    power = (
        tool.power(effect_size=d, nobs1=n1, ratio=n2 / n1, alpha=alpha)
        if min(n1, n2) >= 2
        else math.nan
    )
    needed = _solve(lambda: tool.solve_power(effect_size=d, power=POWER, alpha=alpha, ratio=1.0))
    return Power(_clip(power), needed, at or f"d = {d:g}", "runs per arm")


def power_correlation(
    n: int, r: float = MEDIUM_R, *, cells: int = 1, at: str = "", alpha: float = ALPHA
) -> Power:
    """The power of a correlation test over ``n`` observations (each of ``cells`` combined by
    Stouffer's method) at the true correlation ``r``, through Fisher's transform."""
    from statsmodels.stats.power import NormalIndPower

    tool = NormalIndPower()
    effect = math.atanh(r) * math.sqrt(cells)
    power = tool.power(effect_size=effect, nobs1=n - 3, alpha=alpha, ratio=0) if n > 3 else math.nan
    needed = _solve(lambda: tool.solve_power(effect_size=effect, power=POWER, alpha=alpha, ratio=0))
    unit = "observations" + (" per cell" if cells > 1 else "")
    return Power(_clip(power), None if needed is None else needed + 3, at or f"r = {r:g}", unit)


def power_binomial(n: int, share: float, *, at: str = "", alpha: float = ALPHA) -> Power:
    """The exact power of a two-sided binomial test against 1/2 over ``n`` runs, in the
    paper's direction, when the true share is ``share`` (a discrete test: computed from its
    rejection region, not a normal approximation), and the runs that would give :data:`POWER`."""
    from scipy.stats import binom

    share = min(share, 0.999)

    def exact(m: int) -> float:
        if m < 1:
            return math.nan
        # the smallest count above half that the two-sided test rejects at alpha
        for k in range(m // 2 + 1, m + 1):
            if min(1.0, 2 * float(binom.sf(k - 1, m, 0.5))) < alpha:
                return float(binom.sf(k - 1, m, share))
        return 0.0

    needed = next((m for m in range(1, 5001) if exact(m) >= POWER), None)
    return Power(_clip(exact(n)), needed, at or f"a share of {share:.0%}", "runs")


def decide(effect: float, p: float, power: Power | None = None, *, alpha: float = ALPHA) -> Status:
    """The verdict of a test of an effect the paper reports (``effect`` signed so that > 0 is
    the paper's direction, ``p`` two-sided): reproduced when significant in the paper's
    direction; not reproduced when significant the other way, or when it is a null and the
    test had :data:`POWER` at the paper's effect size; inconclusive otherwise."""
    if math.isfinite(p) and p < alpha and math.isfinite(effect) and effect != 0:
        return "reproduced" if effect > 0 else "not reproduced"
    if power is not None and math.isfinite(power.power) and power.power >= POWER:
        return "not reproduced"
    return "inconclusive"


def decide_flat(
    slope: float, p_trend: float, p_equivalent: float, *, alpha: float = ALPHA
) -> Status:
    """The verdict of a claim that an effect is absent (a model the paper calls flat):
    reproduced when an equivalence test (two one-sided tests) shows the effect inside the
    stated margin; not reproduced when the trend is significant; inconclusive otherwise."""
    if math.isfinite(p_equivalent) and p_equivalent < alpha:
        return "reproduced"
    if math.isfinite(p_trend) and p_trend < alpha and slope != 0:
        return "not reproduced"
    return "inconclusive"


def combine_statuses(statuses: Sequence[Status]) -> Status:
    """One verdict from the verdicts of the parts of a claim the paper states over a range
    (every group size, say): reproduced when every part is; not reproduced when any part is;
    otherwise inconclusive (or not testable when no part could fail)."""
    judged = [s for s in statuses if s not in ("not testable", "not run")]
    if not judged:
        return "not testable" if "not testable" in statuses else "not run"
    if all(s == "reproduced" for s in judged):
        return "reproduced"
    if any(s == "not reproduced" for s in judged):
        return "not reproduced"
    return "inconclusive"


def apply_construction(claim: Claim, verdict: Verdict) -> Verdict:
    """A claim whose players were written or tuned to show it (``Claim.by_construction``) is
    "by construction" whatever its judge found (kept in ``Verdict.judged``); never reproduced."""
    if not claim.by_construction or verdict.status == "not run":
        return verdict
    return replace(verdict, status="by construction", judged=verdict.status)


def direction(
    effect: float,
    p: float,
    *,
    alpha: float = ALPHA,
    expected_sign: int = 1,
    power: Power | None = None,
) -> Status:
    """:func:`decide` for an effect whose paper's direction is ``expected_sign``."""
    if not math.isfinite(effect):
        return "inconclusive"
    return decide(effect if expected_sign > 0 else -effect, p, power, alpha=alpha)
