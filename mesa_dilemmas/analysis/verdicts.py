"""What a paper's claim is, and how its verdict is written: the vocabulary of the claims each
game registers (entry point group ``mesa_dilemmas.claims``) and of ``mesa-dilemmas reproduce``.

An :class:`Experiment` is a bundled scenario with the sizes of each mode (``tiny`` for the test
of the report's structure, ``quick`` for about five minutes on two cores, ``full`` for the
scenario as bundled); a :class:`Claim` is one statement of a paper, paraphrased with its section
or figure, and a function that reads the experiment's run directory and returns a
:class:`Verdict`: our number, its uncertainty, the test used and the status.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
#: "partly" is the older word for a right sign without significance (being replaced).
Status = Literal[
    "reproduced",
    "not reproduced",
    "inconclusive",
    "by construction",
    "not testable",
    "not run",
    "partly",
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
    #: and the robustness check reads (None: the judge gives no such number)
    z: float | None = None


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

    def estimate_overrides(self) -> list[str]:
        return [o.format(model=self.model) for o in self.overrides]


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


def direction(effect: float, p: float, *, alpha: float = 0.05, expected_sign: int = 1) -> Status:
    """Reproduced when the effect has the expected sign and is significant; partly when the
    sign is right but the test is not significant; not reproduced otherwise."""
    if not math.isfinite(effect) or effect == 0:
        return "not reproduced"
    if (effect > 0) != (expected_sign > 0):
        return "not reproduced"
    return "reproduced" if math.isfinite(p) and p < alpha else "partly"
