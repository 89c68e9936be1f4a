"""The fishery's vectorised engine: every run of a batch chunk advances together as numpy arrays
(runs x villagers), for rule-based populations.  :class:`~.model.FisheryModel` stays the readable
reference; this engine reproduces it **exactly** on the same random streams.

Equivalence: exact, not distributional.  Each run keeps its own generators, seeded as the Mesa
model seeds them (``numpy.random.default_rng(seed)`` for ``model.rng`` and
``random.Random(seed)`` for ``model.random``; the batch gives replication i of every cell the
same seed -- common random numbers, ``scenarios/batch.py``), and makes the same draws in the same
order:

* initial strategies: :func:`~.villagers.draw_strategy` seat by seat is four scalar
  ``rng.uniform(low, high)`` per villager, ``low + (high - low) * next_double``; the engine
  makes them from one ``random_raw(4 n)`` per run (after the typed population's
  ``rng.permutation``, called as the model calls it);
* the rounds' ``model.rng`` draws are made from each run's buffered PCG64 outputs exactly as
  numpy's Generator makes them (:class:`_Numpy`), in the model's order and with the model's
  sizes: ``integers(0, L-1, size=L)`` for the punish peers; ``random(L)`` and ``integers`` for
  the learners; the Gaussian mutation of a round's k copies as ``normal(size=3 k)`` (identical
  to k calls of size 3), through numpy's ziggurat (read off the Generator, :func:`_ziggurat`)
  or, for the ~1.5% of values off its fast path, the run's Generator itself.  A run calls its
  generator only to refill its buffer, not once per draw;
* ``model.random.random()`` draws (inspect, punish, copy-or-keep) are a stream per run that the
  model consumes in seat order; the engine buffers each run's ``random.Random(seed)`` stream and
  consumes it in the same order -- walking the seat positions, vectorised across runs -- so a
  villager that stops after its first draw (no inspection) consumes one value and the next
  villager the next.

Every state variable and every step reporter is then equal bit for bit (sums are taken along
the villager axis in the same order as the model's 1-D sums; the logit is ``math.exp``'s,
:func:`_copies`), except ``norm_similarity`` / ``norm_alignment``, which are computed batched
(stacked eigvalsh and einsum instead of per-run BLAS calls) and agree to ~1e-12; they never
feed back into the dynamics.  ``tests/test_fishery_vector.py`` checks equality over grid cells
that switch every supported option, and the buffered draws against the Generator's own.

Speed: the engine's per-round cost is array operations over all runs of a chunk plus a Python
loop over seat positions (punish) and over chains of same-round copies (learn); nothing loops
over runs except the buffer refills, the ~9% of runs per round whose normals leave the
ziggurat's fast path, and the runs with deaths (``stop_at_collapse = false``).  A finished run
is dropped from the state arrays; the random buffers keep their rows and are reached through an
index map.

What it runs is an allow-list (:data:`SUPPORTED`, :data:`INERT`, :data:`ONLY`;
:func:`unsupported` says why not otherwise, and the batch falls back to the Mesa model): rule
villagers only (no ``players`` population, no ``llm_agents``), numeric proposals
(``proposal_form = "number"``; text norms vote by plurality over sentences).  Everything else --
typed populations, both punisher profiles, the punishment shock, doubling regrowth, fines per
punisher, sanction learning, personal caps, the ablations, deaths with ``stop_at_collapse =
false`` -- runs here.  A parameter (``params_model(FisheryModel)``: the model's
``Parameters`` and ``Shorthands``) the engine does not declare sends the run to the Mesa model,
and ``tests/test_fishery_vector_properties.py`` fails until it is declared; the same test draws
every declared parameter at once (hypothesis) and requires identical rows.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from itertools import repeat, starmap
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.base import params_model
from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.dilemmas.fishery.norms import cap_sentence
from mesa_dilemmas.dilemmas.fishery.villagers import TYPE_RANGES

#: the model's step reporters, in its DataCollector's order (declared once, on the model)
REPORTERS = tuple(FisheryModel.STEP_REPORTERS)

#: every scenario parameter's default: the model's ``Parameters`` and its ``Shorthands``
DEFAULTS = {
    name: field.default
    for name, field in params_model(FisheryModel).model_fields.items()
    if not field.is_required()
}


#: the parameters (``params_model(FisheryModel)``: the model's ``Parameters`` and its
#: scenario ``Shorthands``) this engine runs, at every value the model accepts (the equality
#: test draws each of them: ``tests/test_fishery_vector_properties.py``)
SUPPORTED = frozenset(
    {
        "n_agents",
        "capacity",
        "growth_rate",
        "initial_stock",
        "catchability",
        "consumption",
        "initial_wealth",
        "collapse_threshold",
        "penalty",
        "punish_cost",
        "punishment",
        "punishment_off_at",
        "regrowth",
        "population",
        "altruism_ratio",
        "punisher_profile",
        "monitoring_min",
        "monitoring_max",
        "selection_strength",
        "mutation_sd",
        "norm_mutation_sd",
        "payoff_ema",
        "revision_rate",
        "respect_personal_cap",
        "sanction_learning",
        "fine_per_punisher",
        "efficiency_horizon",
        "social_learning",
        "group_decision",
        "stop_at_collapse",
    }
)
#: parameters that shape only what LLM villagers read: with rule villagers alone they change
#: nothing, so the engine accepts and ignores them (the equality test draws them too)
INERT = frozenset({"llm", "peers_sampled", "universalization_hint"})
#: parameters the engine runs only where a test holds (why not, otherwise); any other value
#: runs in the Mesa model
ONLY: dict[str, tuple[Callable[[Any], bool], str]] = {
    "players": (
        lambda v: not v,
        "a [population] (players) is given: the engine runs rule villagers only",
    ),
    "llm_agents": (lambda v: v == 0, "llm_agents > 0: LLM villagers run in the Mesa model"),
    "proposal_form": (
        lambda v: v == "number",
        "proposal_form = 'text': text norms run in the Mesa model",
    ),
}
#: arguments that are not model parameters (each run's seed)
_NOT_PARAMETERS = frozenset({"rng"})


def unsupported(params: dict[str, Any]) -> str | None:
    """Why a run with these model arguments cannot use this engine (None: it can).

    An allow-list: a parameter the engine does not declare (:data:`SUPPORTED`, :data:`INERT`,
    :data:`ONLY`) sends the run to the Mesa model, so a parameter added to the model is never
    silently ignored by a sweep."""
    p = {**DEFAULTS, **params}
    for name, value in p.items():
        if name in ONLY:
            holds, why = ONLY[name]
            if not holds(value):
                return why
        elif name not in SUPPORTED and name not in INERT and name not in _NOT_PARAMETERS:
            return f"{name}: not a parameter the vectorised engine declares (vector.SUPPORTED)"
    return None


class _Stream:
    """Each run's ``random.Random(seed)`` stream, buffered: buffer row b's next value is
    ``u[b, ptr[b]]``.  The values come from the run's own ``random.Random(seed)`` (the generator
    the model's ``model.random`` is), refilled ``width`` values at a time.  Rows passed in are
    rows of the engine's (shrinking) arrays; ``map`` takes them to buffer rows."""

    def __init__(self, seeds: Sequence[int], width: int) -> None:
        self.gens = [random.Random(seed).random for seed in seeds]
        self.width = width
        self.u = np.empty((len(seeds), width))
        self.ptr = np.full(len(seeds), width)
        self.map = np.arange(len(seeds))

    def ensure(self, need: int) -> None:
        """At least ``need`` unused values in every running row."""
        width, u, ptr, gens = self.width, self.u, self.ptr, self.gens
        low = self.map[width - ptr[self.map] < need]
        for j in low.tolist():
            rest = width - int(ptr[j])
            if rest:
                u[j, :rest] = u[j, width - rest :]
            k = width - rest
            u[j, rest:] = np.fromiter(starmap(gens[j], repeat((), k)), float, count=k)
        ptr[low] = 0

    def window(self, rows: np.ndarray, count: int) -> np.ndarray:
        """The next ``count`` values of each of ``rows`` (without consuming them)."""
        b = self.map[rows]
        return self.u[b[:, None], self.ptr[b][:, None] + np.arange(count)[None, :]]

    def skip(self, rows: np.ndarray, counts: np.ndarray) -> None:
        """Consume ``counts`` values of each of ``rows``."""
        self.ptr[self.map[rows]] += counts

    def take_many(self, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``counts[i]`` values for each running row i, concatenated in row order (``rows``
        lists row i ``counts[i]`` times, sorted)."""
        b = self.map[rows]
        rank = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
        out = self.u[b, self.ptr[b] + rank]
        self.ptr[self.map] += counts
        return out

    def keep(self, mask: np.ndarray) -> None:
        self.map = self.map[mask]


#: tests set this to run every bounded draw through the word-by-word path
_ALWAYS_SLOW = False


#: the PCG64 multiplier (numpy's PCG_DEFAULT_MULTIPLIER_128), for the ziggurat probes
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_M128 = (1 << 128) - 1
_ZIGGURAT: tuple[np.ndarray, np.ndarray] | None = None


def _ziggurat() -> tuple[np.ndarray, np.ndarray]:
    """numpy's ziggurat for ``standard_normal`` as (ki, wi), read off the Generator itself.

    A draw takes one 64-bit output r: idx = r & 0xff, sign = bit 8, rabs = the 52 bits above;
    x = rabs * wi[idx] (negated with the sign), returned at once when rabs < ki[idx], else the
    slow path draws more.  A PCG64 put in a state whose next output is a chosen r shows wi[idx]
    (rabs = 1 returns exactly wi[idx]) and, by whether one output or more was consumed, whether
    rabs < ki[idx].  Here ki[idx] need only be a lower bound of numpy's (a draw at or above it
    takes the engine's slow path, the Generator itself): ceil(2**52 wi[idx-1] / wi[idx]) - 4,
    a few units under numpy's, checked by one probe, else numpy's own found by bisection.  An
    index whose rabs = 1 is not accepted (numpy's ki[1] = 0) gets ki = 0: its draws always take
    the slow path."""
    global _ZIGGURAT
    if _ZIGGURAT is not None:
        return _ZIGGURAT
    bits = np.random.PCG64(0)
    gen = np.random.Generator(bits)
    state = bits.state
    inverse = pow(_PCG_MULT, -1, 1 << 128)

    def probe(r: int) -> tuple[float, bool]:
        state["state"] = {"state": ((r - 1) * inverse) & _M128, "inc": 1}
        state["has_uint32"], state["uinteger"] = 0, 0
        bits.state = state
        x = float(gen.standard_normal())
        return x, bits.state["state"]["state"] == r  # one output consumed: the fast path

    def accepted(idx: int, rabs: int) -> bool:
        return probe(idx | (rabs << 9))[1]

    wi = np.zeros(256)
    ki = np.zeros(256, dtype=np.uint64)
    for idx in range(256):
        x, ok = probe(idx | (1 << 9))
        if ok:
            wi[idx] = x
    for idx in range(256):
        if wi[idx] == 0.0:
            continue
        top = (1 << 52) - 1
        if idx > 0 and wi[idx - 1] > 0:
            # a bound a little under the estimate: a draw between it and the true ki takes the
            # slow path, which is exact too (a chance of about 2**-50)
            guess = math.ceil(wi[idx - 1] / wi[idx] * 2.0**52) - 4
            if 1 < guess <= top and accepted(idx, guess - 1):
                ki[idx] = guess
                continue
        lo, hi = 1, top  # lo accepted, hi not (or the top: a bound all the same)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if accepted(idx, mid):
                lo = mid
            else:
                hi = mid
        ki[idx] = hi
    _ZIGGURAT = (ki, wi)
    return _ZIGGURAT


class _Numpy:
    """The ``model.rng`` draws of the rounds, made from each run's PCG64 raw 64-bit outputs
    exactly as numpy's Generator makes them.  The outputs are buffered per run (``raw[b,
    ptr[b]]`` is buffer row b's next; the generator itself stands at the buffer's end), so a
    round's draws are array operations across runs, and a run calls its generator only to refill
    its buffer:

    * ``random(L)``: ``(raw >> 11) * 2**-53`` per value;
    * ``integers(0, L-1, size=L)``: Lemire's bounded draw on 32-bit words, ``m = w * (L-1)``,
      value ``m >> 32``, rejecting ``m mod 2**32 < 2**32 mod (L-1)``; the words come from the bit
      generator's ``next_uint32``: the low half of a raw output first, the high half kept in
      the generator's one-word buffer (``has_uint32``, kept here per run) for the next word
      (``range == 0``, i.e. ``L == 2``, draws nothing).  A rejection (probability < 1e-9 per
      value) takes the exact slow path, word by word;
    * ``normal(0, 1, size=3 k)``: numpy's ziggurat fast path (:func:`_ziggurat`), one output per
      value.  A run whose draws leave the fast path (about 1.5% of values) has its generator
      moved back to the buffer's position (``advance`` by minus the unused outputs) and draws
      its normals from the generator itself; its buffer is then emptied.  ``normal`` never
      touches the 32-bit word buffer.

    Rows passed in are rows of the engine's (shrinking) arrays; ``map`` takes them to buffer
    rows, so a finished run costs nothing to drop."""

    def __init__(self, gens: list[np.random.Generator], width: int) -> None:
        self.gens = gens
        self.bits = [g.bit_generator for g in gens]
        states = [b.state for b in self.bits]
        self.has32 = np.array([int(st["has_uint32"]) for st in states], dtype=np.int64)
        self.buf32 = np.array([int(st["uinteger"]) for st in states], dtype=np.uint64)
        self.width = width
        self.raw = np.zeros((len(gens), width), dtype=np.uint64)
        self.ptr = np.full(len(gens), width)
        self.map = np.arange(len(gens))

    def keep(self, mask: np.ndarray) -> None:
        self.map = self.map[mask]

    def _ensure(self, b: np.ndarray, need: np.ndarray) -> None:
        """At least ``need`` unused outputs in buffer rows ``b`` (need <= width)."""
        width, raw, ptr, bits = self.width, self.raw, self.ptr, self.bits
        for j in b[width - ptr[b] < need].tolist():
            rest = width - int(ptr[j])
            if rest:
                raw[j, :rest] = raw[j, width - rest :]
            raw[j, rest:] = bits[j].random_raw(width - rest)
            ptr[j] = 0

    def _take(self, b: np.ndarray, count: np.ndarray) -> np.ndarray:
        """The next ``count`` outputs of buffer rows ``b``, padded to (len(b), max count)."""
        self._ensure(b, count)
        cols = np.arange(int(count.max()) if len(b) else 0)
        idx = np.minimum(self.ptr[b][:, None] + cols[None, :], self.width - 1)
        out = self.raw[b[:, None], idx]
        self.ptr[b] += count
        return out

    def _next_raw(self, j: int) -> int:
        self._ensure(np.array([j]), np.array([1]))
        r = int(self.raw[j, self.ptr[j]])
        self.ptr[j] += 1
        return r

    def draw(
        self, rows: np.ndarray, L: np.ndarray, doubles: bool
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """For each row: ``random(L)`` (when ``doubles``) then ``integers(0, L-1, size=L)``,
        padded to (len(rows), max L)."""
        b = self.map[rows]
        width = int(L.max())
        has = self.has32[b]
        n32 = np.where(L > 2, L, 0)
        nraw32 = np.maximum(0, (n32 - has + 1) // 2)
        nd = L if doubles else np.zeros_like(L)
        total = nd + nraw32
        raw = self._take(b, total)
        if not raw.shape[1]:
            raw = np.zeros((len(b), 1), dtype=np.uint64)
        u = None
        if doubles:
            u = (raw[:, :width] >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        # the 32-bit words after the doubles: [buffered word] + low/high halves
        cols = np.arange(2 * max(1, int(nraw32.max())))
        src = np.minimum(nd[:, None] + cols[None, :] // 2, raw.shape[1] - 1)
        word = raw[np.arange(len(b))[:, None], src]
        word = np.where(cols[None, :] % 2 == 0, word & np.uint64(0xFFFFFFFF), word >> np.uint64(32))
        seq = np.concatenate([self.buf32[b][:, None], word], axis=1)
        start = 1 - has
        idx = np.minimum(start[:, None] + np.arange(width)[None, :], seq.shape[1] - 1)
        w = seq[np.arange(len(b))[:, None], idx]
        excl = np.maximum(L - 1, 1).astype(np.uint64)
        m = w * excl[:, None]
        valid = np.arange(width)[None, :] < n32[:, None]
        left = m & np.uint64(0xFFFFFFFF)
        threshold = (np.uint64(2**32) - excl) % excl
        rejected = (valid & (left < threshold[:, None])).any(axis=1) | _ALWAYS_SLOW
        picks = np.where(valid, (m >> np.uint64(32)).astype(np.int64), 0)
        end = start + n32
        avail = 1 + 2 * nraw32
        spare = end < avail
        last = np.minimum(end, seq.shape[1] - 1)
        new_buf = seq[np.arange(len(b)), last]
        self.has32[b] = np.where(n32 > 0, spare.astype(np.int64), has)
        self.buf32[b] = np.where((n32 > 0) & spare, new_buf, self.buf32[b])
        for i in np.flatnonzero(rejected):  # redo the row word by word (exact, rare)
            picks[i] = 0
            j = int(b[i])
            words = [int(x) for x in seq[i, start[i] : avail[i]]]
            self.has32[j] = 0
            out = []
            excl_i = int(L[i]) - 1
            thr = (2**32 - excl_i) % excl_i
            pos = 0
            while len(out) < int(n32[i]):
                if pos < len(words):
                    x = words[pos]
                    pos += 1
                else:
                    r = self._next_raw(j)
                    words.append(r >> 32)  # the high half is buffered: the next word
                    x = r & 0xFFFFFFFF
                    pos = len(words) - 1
                mm = x * excl_i
                if (mm & 0xFFFFFFFF) < thr:
                    continue
                out.append(mm >> 32)
            picks[i, : len(out)] = out
            if pos < len(words):
                self.has32[j], self.buf32[j] = 1, np.uint64(words[pos])
        return u, picks

    def normals(self, rows: np.ndarray, count: np.ndarray) -> np.ndarray:
        """``normal(0.0, 1.0, size=count)`` for each row, concatenated in row order."""
        ki, wi = _ziggurat()
        b = self.map[rows]
        r = self._take(b, count)
        valid = np.arange(r.shape[1])[None, :] < count[:, None]
        index = (r & np.uint64(0xFF)).astype(np.intp)
        rabs = (r >> np.uint64(9)) & np.uint64(0x000FFFFFFFFFFFFF)
        x = rabs.astype(np.float64) * wi[index]
        x = 0.0 + 1.0 * np.where((r >> np.uint64(8)) & np.uint64(1), -x, x)  # loc + scale * z
        slow = ((rabs >= ki[index]) & valid).any(axis=1) | _ALWAYS_SLOW
        for i in np.flatnonzero(slow).tolist():
            j = int(b[i])
            self.ptr[j] -= int(count[i])  # back to this row's first normal
            self.bits[j].advance((1 << 128) - (self.width - int(self.ptr[j])))
            x[i, : count[i]] = self.gens[j].normal(0.0, 1.0, size=int(count[i]))
            self.ptr[j] = self.width  # the generator is where the buffer would resume
        return x[valid]


def _strategy_bounds(
    disposition: str, punisher_profile: str, monitoring: tuple[float, float]
) -> np.ndarray:
    """(low, high) of draw_strategy's four uniforms (e, m, p, g), as a (2, 4) array."""
    ranges = TYPE_RANGES[disposition]
    punish = ranges["punish"]
    if punisher_profile == "text" and disposition in ("altruistic", "selfish"):
        other = "selfish" if disposition == "altruistic" else "altruistic"
        punish = TYPE_RANGES[other]["punish"]
    pairs = (ranges["effort"], monitoring, punish, ranges["norm"])
    return np.array([[float(a) for a, _ in pairs], [float(b) for _, b in pairs]])


def _copies(u: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``u < imitation_probability`` for every reviser: 1 / (1 + math.exp(x)), 0 when x > 700.

    numpy's exp and ``math.exp`` may differ in the last bit, which moves the probability by
    < 1e-15; the comparisons closer than 1e-12 are therefore made again with ``math.exp``."""
    with np.errstate(over="ignore"):
        p = 1.0 / (1.0 + np.exp(x))
    p[x > 700] = 0.0
    copy = u < p
    for i in np.flatnonzero((np.abs(u - p) <= 1e-12) & (x <= 700)).tolist():
        copy[i] = u[i] < 1.0 / (1.0 + math.exp(float(x[i])))
    return copy


def _col(values: list[Any], dtype: Any = float) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


def _norm_structure(x: np.ndarray, alive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numeric_norm_structure (norm_structure.py) for every run at once: x is (R, n, 3)."""
    rows = x.shape[0]
    sim = np.full(rows, np.nan)
    order = np.full(rows, np.nan)
    full = alive.all(axis=1)
    if x.shape[1] >= 2:
        if full.all():
            sim, order = _structure_full(x)
        elif full.any():
            sim[full], order[full] = _structure_full(x[full])
    from mesa_dilemmas.dilemmas.fishery.norm_structure import numeric_norm_structure

    for j in np.flatnonzero(~full):  # after deaths (stop_at_collapse = false): one by one
        living = x[j][alive[j]]
        if len(living) >= 2:
            r = numeric_norm_structure(living)
            sim[j], order[j] = r.similarity, r.alignment
    return sim, order


def _structure_full(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every villager alive.  (The arithmetic, einsums included, is kept as it is: the values
    are in the scenario fingerprints to the last bit.)"""
    n = x.shape[1]
    centred = x - np.add.reduce(x, axis=1, keepdims=True) / n
    sd = np.sqrt(np.add.reduce(centred * centred, axis=1, keepdims=True) / n)  # x.std's steps
    ok = sd > 1e-12
    z = np.divide(centred, sd, out=np.zeros_like(x), where=ok)
    live = ok[:, 0, :]  # (R, 3) columns with variance (the others standardise to zeros)
    d = live.sum(axis=1)
    sim = np.ones(len(x))
    order = np.ones(len(x))
    norms = np.sqrt(np.add.reduce(z * z, axis=2, keepdims=True))  # np.linalg.norm's steps
    units = np.divide(z, norms, out=np.zeros_like(z), where=norms > 0)
    gram = np.einsum("rik,rjk->rij", units, units)
    trace = np.einsum("rii->r", gram)
    c = (gram.sum(axis=(1, 2)) - trace) / (n * (n - 1))
    s = ((n - 1) * c + 1.0) / n
    nonzero = (norms[..., 0] > 0).sum(axis=1)
    outer = np.einsum("rik,ril->rkl", units, units) / np.maximum(nonzero, 1)[:, None, None]
    lam = np.empty(len(x))
    for k in (2, 3):  # the eigenvalue on the live columns only
        sel = d == k
        if sel.any():
            if k == 3:
                sub = outer[sel]
            else:
                cols = live[sel]
                sub = outer[sel][cols[:, :, None] & cols[:, None, :]].reshape(-1, k, k)
            lam[sel] = np.linalg.eigvalsh(sub)[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        o = (lam - 1.0 / d) / (1.0 - 1.0 / d)
    o = np.where((d == 1) | (nonzero == 0), 1.0, o)
    any_live = d > 0
    sim[any_live] = np.clip(s[any_live], 0.0, 1.0)
    order[any_live] = o[any_live]
    return sim, order


def _gini(w: np.ndarray, alive: np.ndarray) -> np.ndarray:
    from mesa_dilemmas.dilemmas.metrics import gini

    out = np.zeros(len(w))
    full = alive.all(axis=1)
    x = np.sort(np.clip(w[full], 0.0, None), axis=1)
    n = w.shape[1]
    total = x.sum(axis=1)
    index = np.arange(1, n + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = (2.0 * np.sum(index * x, axis=1) / (n * total)) - (n + 1) / n
    out[full] = np.where(total == 0, 0.0, g)
    for j in np.flatnonzero(~full):
        out[j] = gini(w[j][alive[j]])
    return out


def run_vector(
    runs: Sequence[tuple[int, int, dict[str, Any]]], max_steps: int
) -> list[dict[str, Any]]:
    """Run ``(run_id, iteration, kwargs)`` triples (kwargs with ``rng`` = the seed) to
    ``max_steps`` and return, per group of equal ``n_agents``, the columns of Mesa's
    ``batch_run`` rows (RunId, iteration, Step, the kwargs, the reporters): numpy arrays or
    lists that ``pandas.DataFrame`` makes into the columns (and dtypes) of the Mesa rows."""
    groups: dict[int, list[tuple[int, int, dict[str, Any]]]] = {}
    for run in runs:
        n = int({**DEFAULTS, **run[2]}["n_agents"])
        groups.setdefault(n, []).append(run)
    return [_Engine(group, max_steps).run() for group in groups.values()]


class _Engine:
    def __init__(self, runs: Sequence[tuple[int, int, dict[str, Any]]], max_steps: int) -> None:
        self.runs = list(runs)
        self.max_steps = max_steps
        params = [{**DEFAULTS, **kw} for _, _, kw in runs]
        for p in params:
            reason = unsupported(p)
            if reason:
                raise ValueError(f"vector engine: {reason}")
            FisheryModel.validate_params(p)
        seeds = [int(kw["rng"]) for _, _, kw in runs]
        self.n = n = int(params[0]["n_agents"])
        R = len(runs)

        def col(name: str, dtype: Any = float) -> np.ndarray:
            return _col([p[name] for p in params], dtype)

        self.K, self.r = col("capacity"), col("growth_rate")
        self.alpha, self.c = col("catchability"), col("consumption")
        self.rmin, self.beta, self.gamma = (
            col("collapse_threshold"),
            col("penalty"),
            col("punish_cost"),
        )
        self.punishment, self.off_at = col("punishment", bool), col("punishment_off_at", int)
        self.doubling = _col([p["regrowth"] == "doubling" for p in params], bool)
        self.delta, self.sd, self.nsd = (
            col("selection_strength"),
            col("mutation_sd"),
            col("norm_mutation_sd"),
        )
        self.ema, self.rev = col("payoff_ema"), col("revision_rate")
        self.respect, self.sl = col("respect_personal_cap", bool), col("sanction_learning")
        self.fine_per, self.horizon = col("fine_per_punisher", bool), col("efficiency_horizon")
        self.social, self.group = col("social_learning", bool), col("group_decision", bool)
        self.stop = col("stop_at_collapse", bool)
        self.h_opt = np.where(self.doubling, self.K / 2.0, self.r * self.K / 4.0)

        self.gens = [np.random.default_rng(s) for s in seeds]
        self.stream = _Stream(seeds, width=60 * n)
        # initial strategies: draw_strategy seat by seat is four scalar ``rng.uniform(low, high)``
        # per villager (e, m, p, g), i.e. ``low + (high - low) * next_double`` on consecutive
        # 64-bit outputs, after the typed population's ``rng.permutation``
        low = np.empty((R, n, 4))
        high = np.empty((R, n, 4))
        raw = np.empty((R, 4 * n), dtype=np.uint64)
        bounds: dict[tuple[Any, ...], np.ndarray] = {}

        def bounds_of(disposition: str, p: dict[str, Any]) -> np.ndarray:
            monitoring = (float(p["monitoring_min"]), float(p["monitoring_max"]))
            key = (disposition, p["punisher_profile"], *monitoring)
            if key not in bounds:
                bounds[key] = _strategy_bounds(disposition, p["punisher_profile"], monitoring)
            return bounds[key]

        for j, p in enumerate(params):
            rng = self.gens[j]
            if p["population"] == "general":
                low[j], high[j] = bounds_of("general", p)[:, None, :]
            else:  # FisheryModel._dispositions
                n_alt = int(round(p["altruism_ratio"] * n))
                kinds = ["altruistic"] * n_alt + ["selfish"] * (n - n_alt)
                for slot, i in enumerate(rng.permutation(n).tolist()):
                    low[j, slot], high[j, slot] = bounds_of(kinds[i], p)
            raw[j] = rng.bit_generator.random_raw(4 * n)
        u = ((raw >> np.uint64(11)) * (1.0 / 9007199254740992.0)).reshape(R, n, 4)
        drawn = low + (high - low) * u
        self.se = np.ascontiguousarray(drawn[:, :, 0])
        self.monitor = np.ascontiguousarray(drawn[:, :, 1])
        self.punish_p = np.ascontiguousarray(drawn[:, :, 2])
        self.norm = np.ascontiguousarray(drawn[:, :, 3])
        self.effort = self.se.copy()
        self.stock = col("capacity") * col("initial_stock")
        self.wealth = np.repeat(col("initial_wealth")[:, None], n, axis=1)
        self.payoff_avg = np.zeros((R, n))
        self.round_payoff = np.zeros((R, n))
        self.harvest = np.zeros((R, n))
        self.alive = np.ones((R, n), dtype=bool)
        self.punished = np.zeros((R, n), dtype=int)
        self.G = np.median(self.norm, axis=1)

        self.total_harvest = np.zeros(R)
        self.efficiency_now = np.zeros(R)
        self.efficiency_sum = np.zeros(R)
        self.efficiency = np.zeros(R)
        self.compliance = np.ones(R)
        self.effort_compliance = np.ones(R)
        self.stock_after = self.stock.copy()
        self.cumulative = np.zeros(R)
        self.govsim = np.zeros(R)
        self.mean_effort = self.effort.sum(axis=1) / n
        self.gini = np.zeros(R)
        self.n_alive = np.full(R, n)
        self.deaths = np.zeros(R, dtype=int)
        self.punishments = np.zeros(R, dtype=int)
        self.collapsed = np.zeros(R, dtype=bool)
        self.survival = np.zeros(R, dtype=int)
        self.sim, self.align = _norm_structure(self._strategies(), self.alive)
        # after the initial draws: the word buffer as they left it
        self.numpy = _Numpy(self.gens, width=16 * n + 64)
        self.ids = np.arange(R)  # the rows still running, as indices into ``runs``
        self.time = 0
        self.records: list[tuple[int, np.ndarray, dict[str, np.ndarray]]] = []

    # the per-run arrays that shrink as runs stop
    _ROW_STATE = [
        "K",
        "r",
        "alpha",
        "c",
        "rmin",
        "beta",
        "gamma",
        "punishment",
        "off_at",
        "doubling",
        "delta",
        "sd",
        "nsd",
        "ema",
        "rev",
        "respect",
        "sl",
        "fine_per",
        "horizon",
        "social",
        "group",
        "stop",
        "h_opt",
        "se",
        "monitor",
        "punish_p",
        "norm",
        "effort",
        "stock",
        "wealth",
        "payoff_avg",
        "round_payoff",
        "harvest",
        "alive",
        "punished",
        "G",
        "total_harvest",
        "efficiency_now",
        "efficiency_sum",
        "efficiency",
        "compliance",
        "effort_compliance",
        "stock_after",
        "cumulative",
        "govsim",
        "mean_effort",
        "gini",
        "n_alive",
        "deaths",
        "punishments",
        "collapsed",
        "survival",
        "sim",
        "align",
        "ids",
    ]

    def _strategies(self) -> np.ndarray:
        return np.stack([self.se, self.monitor, self.norm], axis=2)

    def _record(self) -> None:
        self.records.append(
            (
                self.time,
                self.ids.copy(),
                {
                    "stock": self.stock.copy(),
                    "total_harvest": self.total_harvest.copy(),
                    "efficiency_t": self.efficiency_now.copy(),
                    "efficiency": self.efficiency.copy(),
                    "compliance": self.compliance.copy(),
                    "effort_compliance": self.effort_compliance.copy(),
                    "govsim_efficiency": self.govsim.copy(),
                    "mean_effort": self.mean_effort.copy(),
                    "group_norm": self.G.copy(),
                    "wealth_gini": self.gini.copy(),
                    "n_alive": self.n_alive.copy(),
                    "deaths": self.deaths.copy(),
                    "punishments": self.punishments.copy(),
                    "collapsed": self.collapsed.copy(),
                    "survival_time": self.survival.copy(),
                    "norm_similarity": self.sim.copy(),
                    "norm_alignment": self.align.copy(),
                },
            )
        )

    def run(self) -> dict[str, Any]:
        self._record()
        # one errstate for the whole run (entering one per round costs more than the round's
        # divisions): an empty lake, a dead run and 0/0 give inf/nan that np.where discards
        with np.errstate(divide="ignore", invalid="ignore"):
            while len(self.ids) and self.time < self.max_steps:
                self.time += 1
                self._step()
                self._record()
                running = ~(self.collapsed & self.stop)
                if not running.all():
                    self._keep(running)
        return self._columns()

    def _keep(self, mask: np.ndarray) -> None:
        for name in self._ROW_STATE:
            setattr(self, name, getattr(self, name)[mask])
        self.stream.keep(mask)
        self.numpy.keep(mask)

    def _columns(self) -> dict[str, Any]:
        """``batch_run``'s rows as columns: numeric reporters as numpy arrays (the dtypes pandas
        gives the model's Python numbers), the rest as lists of the model's Python values."""
        run_idx = np.concatenate([ids for _, ids, _ in self.records])
        steps = np.concatenate([np.full(len(ids), t) for t, ids, _ in self.records])
        order = np.lexsort((steps, run_idx))  # rows run by run, steps in order (batch_run's)
        run_idx, steps = run_idx[order], steps[order]

        def per_run(values: list[Any]) -> Any:
            """A run-level value on each row: an array of the dtype pandas would give the
            values when they are all floats, all bools or all int64-sized ints, else a list."""
            kinds = {type(v) for v in values}
            if kinds == {float}:
                return np.array(values, dtype=np.float64)[run_idx]
            if kinds == {bool}:
                return np.array(values, dtype=bool)[run_idx]
            if kinds == {int} and min(values) >= -(2**63) and max(values) < 2**63:
                return np.array(values, dtype=np.int64)[run_idx]
            column = np.empty(len(values), dtype=object)
            column[:] = values
            return column[run_idx].tolist()

        out: dict[str, Any] = {
            "RunId": per_run([run[0] for run in self.runs]),
            "iteration": per_run([run[1] for run in self.runs]),
            "Step": steps.astype(np.int64),
        }
        keys: list[str] = []
        for _, _, kw in self.runs:
            keys.extend(k for k in kw if k not in keys)
        for k in keys:
            out[k] = per_run([run[2].get(k) for run in self.runs])
        data = {
            name: np.concatenate([rec[name] for _, _, rec in self.records])[order]
            for name in self.records[0][2]
        }
        rows = len(run_idx)
        for name in REPORTERS:
            if name == "cap_unparsed":
                out[name] = np.zeros(rows, dtype=np.int64)
            elif name == "shared_policy":  # one sentence per distinct group norm
                bits, first, inverse = np.unique(
                    data["group_norm"].view(np.int64), return_index=True, return_inverse=True
                )
                sentences = np.empty(len(bits), dtype=object)
                sentences[:] = [cap_sentence(g) for g in data["group_norm"][first].tolist()]
                out[name] = sentences[inverse].tolist()
            elif name == "llm_decisions_per_villager":
                out[name] = np.full(rows, math.nan)
            else:
                column = data[name]
                kind = column.dtype.kind
                out[name] = column.astype(
                    np.float64 if kind == "f" else np.int64 if kind in "iu" else bool
                )
        return out

    # -- one round: the model's phases --------------------------------------------------------
    def _step(self) -> None:
        n, R = self.n, len(self.ids)
        t = self.time
        alive = self.alive
        L = alive.sum(axis=1)
        # living slots first, in seat order (the model's AgentSet order)
        order = np.argsort(~alive, axis=1, kind="stable")
        self.stream.ensure(3 * n)

        # harvest
        se = self.se
        capped = np.minimum(se, self.norm / (self.alpha * self.stock)[:, None])
        use_cap = (self.respect & (self.stock > 0))[:, None]
        efforts = np.where(use_cap, capped, se)
        self.effort = np.where(alive, efforts, self.effort)
        self.harvest = np.where(alive, self.alpha[:, None] * self.effort * self.stock[:, None], 0.0)
        total = self.harvest.sum(axis=1)
        over = total > self.stock
        if over.any():
            self.harvest[over] *= (self.stock[over] / total[over])[:, None]
            total = np.where(over, self.stock, total)
        self.stock = self.stock_after = np.maximum(0.0, self.stock - total)
        self.total_harvest = total
        self.cumulative = self.cumulative + total
        self.round_payoff = np.where(alive, self.harvest - self.c[:, None], 0.0)
        self.punished = np.zeros((R, n), dtype=int)

        # punish
        self.punishments = np.zeros(R, dtype=int)
        active = self.punishment & ~((self.off_at > 0) & (t >= self.off_at)) & (L >= 2)
        act = np.flatnonzero(active)
        if len(act):
            _, drawn = self.numpy.draw(act, L[act], doubles=False)
            la, w = L[act], drawn.shape[1]  # w: the most living villagers of a run
            pos = np.arange(w)[None, :]
            seats = order[act, :w]  # the living villagers in seat order
            peer = np.take_along_axis(seats, drawn + (drawn >= pos), axis=1)  # uniform, not self
            watched = np.take_along_axis(self.harvest[act], peer, axis=1) > self.G[act, None]
            monitor = np.take_along_axis(self.monitor[act], seats, axis=1)
            punish_p = np.take_along_axis(self.punish_p[act], seats, axis=1)
            inside = pos < la[:, None]
            # each living villager draws u1 (inspect?) and, if it inspects a peer over the norm,
            # u2 (punish?): villager i's u1 is value i + (the second draws before it) of the run
            values = self.stream.window(act, 2 * w)
            arange = np.arange(len(act))
            offset = np.zeros(len(act), dtype=np.intp)
            hits = np.zeros((len(act), w), dtype=bool)
            for i in range(w):
                at = offset + i
                go = inside[:, i] & (values[arange, at] < monitor[:, i]) & watched[:, i]
                hits[:, i] = go & (values[arange, np.minimum(at + 1, 2 * w - 1)] < punish_p[:, i])
                offset += go
            self.stream.skip(act, la + offset)
            hr, hi = np.nonzero(hits)
            rows = act[hr]
            self.round_payoff[rows, seats[hr, hi]] -= self.gamma[rows]  # one sanction each
            self.punished += np.bincount(rows * n + peer[hr, hi], minlength=R * n).reshape(R, n)
            self.punishments[act] = hits.sum(axis=1)
            fined = np.where(self.fine_per[:, None], self.punished, self.punished > 0)
            self.round_payoff[act] -= self.beta[act, None] * fined[act]
            learn = act[self.sl[act] != 0]
            if len(learn):
                cut = np.minimum(1.0, self.sl[learn] * self.beta[learn])
                hitm = self.punished[learn] > 0
                factor = np.where(hitm, (1.0 - cut)[:, None], 1.0)
                self.se[learn] = np.where(hitm, self.se[learn] * factor, self.se[learn])

        # settle
        self.wealth = np.where(alive, self.wealth + self.round_payoff, self.wealth)
        w = self.ema[:, None]
        self.payoff_avg = np.where(
            alive, (1 - w) * self.payoff_avg + w * self.round_payoff, self.payoff_avg
        )
        starved = alive & (self.wealth < 0)
        if starved.any():
            self.alive = alive = alive & ~starved
            self.effort[starved] = 0.0
            self.se[starved] = 0.0
            self.deaths = self.deaths + starved.sum(axis=1)
            L = alive.sum(axis=1)
            order = np.argsort(~alive, axis=1, kind="stable")
        s = self.stock
        self.stock = np.where(
            self.doubling,
            np.minimum(self.K, 2.0 * s),
            np.minimum(self.K, s + self.r * s * (1.0 - s / self.K)),
        )

        # learn
        lrn = np.flatnonzero(self.social & (L >= 2))
        if len(lrn):
            revising = np.zeros((R, n), dtype=bool)
            picks = np.zeros((R, n), dtype=int)
            u_rev, drawn = self.numpy.draw(lrn, L[lrn], doubles=True)
            width = drawn.shape[1]
            inside = np.arange(width)[None, :] < L[lrn][:, None]
            revising[lrn, :width] = (u_rev < self.rev[lrn][:, None]) & inside
            picks[lrn, :width] = drawn
            pos = np.arange(n)[None, :]
            model_slot = np.take_along_axis(order, picks + (picks >= pos), axis=1)
            own_slot = order
            # one copy-or-keep draw per revising villager, in seat order
            rr, ii = np.nonzero(revising)  # row-major: each run's revisers in order
            counts = revising.sum(axis=1)
            u = self.stream.take_many(rr, counts)
            own = self.payoff_avg[rr, own_slot[rr, ii]]
            other = self.payoff_avg[rr, model_slot[rr, ii]]
            x = -self.delta[rr] * (other - own)
            copy = _copies(u, x)
            cr, ci = rr[copy], ii[copy]
            if len(cr):
                # each run's copies draw normal(size=3) in seat order: one normal(size=3 k) per
                # run (cr is sorted: np.nonzero is row-major)
                ncopy = np.bincount(cr, minlength=R)
                copiers = np.flatnonzero(ncopy)
                z = self.numpy.normals(copiers, 3 * ncopy[copiers]).reshape(-1, 3)
                me, k = own_slot[cr, ci], model_slot[cr, ci]
                # copies are made in seat order: a copy whose model copied earlier this round
                # starts from the model's new strategy (``src``: that copy), else from the old
                copy_of = np.full((R, n), -1)
                copy_of[cr, me] = np.arange(len(cr))
                src = copy_of[cr, k]
                dep = (src >= 0) & (ci[np.maximum(src, 0)] < ci)
                sd, nsd = self.sd[cr], self.nsd[cr]
                base = np.stack([self.se[cr, k], self.monitor[cr, k], self.norm[cr, k]])
                new = np.empty_like(base)

                def make(sel: Any) -> None:
                    new[0, sel] = np.minimum(
                        1.0, np.maximum(0.0, base[0, sel] + sd[sel] * z[sel, 0])
                    )
                    new[1, sel] = np.minimum(
                        1.0, np.maximum(0.0, base[1, sel] + sd[sel] * z[sel, 1])
                    )
                    new[2, sel] = np.maximum(0.0, base[2, sel] + nsd[sel] * z[sel, 2])

                make(slice(None))
                if dep.any():  # chains of copies, one link per pass
                    level = np.zeros(len(cr), dtype=np.intp)
                    for _ in range(n):
                        deeper = np.where(dep, level[np.maximum(src, 0)] + 1, 0)
                        if np.array_equal(deeper, level):
                            break
                        level = deeper
                    for depth in range(1, int(level.max()) + 1):
                        sel = np.flatnonzero(level == depth)
                        base[:, sel] = new[:, src[sel]]
                        make(sel)
                self.se[cr, me], self.monitor[cr, me], self.norm[cr, me] = new

        # govern (numeric proposals: the median voter)
        gov = self.group & (L > 0)
        if gov.any():
            full = gov & (n == L)
            if full.any():
                self.G[full] = np.median(self.norm[full], axis=1)
            for j in np.flatnonzero(gov & ~full):
                self.G[j] = float(np.median(self.norm[j][alive[j]]))

        # end of round
        n_alive = L
        self.n_alive = n_alive
        self.efficiency_now = np.where(
            self.h_opt > 0, self.total_harvest / np.where(self.h_opt > 0, self.h_opt, 1.0), 0.0
        )
        some = n_alive > 0
        full = n_alive == n
        allowed = self.G / (self.alpha * self.K)
        comp = ((self.harvest <= (self.G + 1e-12)[:, None]) & alive).sum(axis=1)
        ecomp = ((self.effort <= (allowed + 1e-12)[:, None]) & alive).sum(axis=1)
        self.compliance = np.where(some, comp / n_alive, np.nan)
        self.effort_compliance = np.where(some, ecomp / n_alive, self.effort_compliance)
        mean_full = self.effort.sum(axis=1) / n
        mean = np.where(full, mean_full, np.nan)
        for j in np.flatnonzero(some & ~full):
            mean[j] = float(self.effort[j][alive[j]].mean())
        self.mean_effort = mean
        g = _gini(self.wealth, alive)
        self.gini = np.where(some, g, self.gini)
        self.sim, self.align = _norm_structure(self._strategies(), alive)

        open_ = ~self.collapsed
        self.efficiency_sum = np.where(
            open_, self.efficiency_sum + self.efficiency_now, self.efficiency_sum
        )
        self.survival = np.where(open_, t, self.survival)
        self.efficiency = np.where(open_, self.efficiency_sum / t, self.efficiency)
        best = self.h_opt * self.horizon
        gs = np.where(best > 0, 1.0 - np.maximum(0.0, best - self.cumulative) / best, 0.0)
        self.govsim = np.where(open_, gs, self.govsim)
        check = np.where(self.doubling, self.stock_after, self.stock)
        self.collapsed = self.collapsed | (open_ & ((check <= self.rmin) | (n_alive < n)))


__all__ = ["INERT", "ONLY", "REPORTERS", "SUPPORTED", "run_vector", "unsupported"]
