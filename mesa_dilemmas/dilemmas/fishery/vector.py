"""The fishery's vectorised engine: every run of a batch chunk advances together as numpy arrays
(runs x villagers), for rule-based populations.  :class:`~.model.FisheryModel` stays the readable
reference; this engine reproduces it **exactly** on the same random streams.

Equivalence: exact, not distributional.  Each run keeps its own generators, seeded as the Mesa
model seeds them (``numpy.random.default_rng(seed)`` for ``model.rng`` and
``random.Random(seed)`` for ``model.random``; the batch gives replication i of every cell the
same seed -- common random numbers, ``scenarios/batch.py``), and makes the same draws in the same
order:

* initial strategies: :func:`~.villagers.draw_strategy` seat by seat (after the typed
  population's ``rng.permutation``), the very function the model calls;
* ``model.rng`` calls are made per run, in the model's order and with the model's sizes
  (``integers(0, L-1, size=L)`` for the punish peers; ``random(L)`` and ``integers`` for the
  learners; the Gaussian mutation of all of a round's copies as one ``normal(size=3 k)``, which
  numpy's Generator makes identical to k calls of size 3);
* ``model.random.random()`` draws (inspect, punish, copy-or-keep) are a stream per run that the
  model consumes in seat order; the engine buffers each run's stream and consumes it in the
  same order -- looping over seat positions, vectorised across runs -- so a villager that stops
  after its first draw (no inspection) consumes one value and the next villager the next.

Every state variable and every step reporter is then equal bit for bit (sums are taken along
the villager axis in the same order as the model's 1-D sums; the logit uses ``math.exp``),
except ``norm_similarity`` / ``norm_alignment``, which are computed batched (stacked eigvalsh and
einsum instead of per-run BLAS calls) and agree to ~1e-12; they never feed back into the
dynamics.  ``tests/test_fishery_vector.py`` checks equality over grid cells that switch every
supported option.

Supported (:func:`unsupported` says why not otherwise, and the batch falls back to the Mesa
model): rule villagers only (no ``players`` population, no ``llm_agents``), numeric proposals
(``proposal_form = "number"``; text norms vote by plurality over sentences).  Everything else --
typed populations, both punisher profiles, the punishment shock, doubling regrowth, fines per
punisher, sanction learning, personal caps, the ablations, deaths with ``stop_at_collapse =
false`` -- runs here.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.fishery.model import FisheryModel
from mesa_dilemmas.dilemmas.fishery.norms import cap_sentence
from mesa_dilemmas.dilemmas.fishery.villagers import draw_strategy

#: the model's step reporters, in its DataCollector's order
REPORTERS = (
    "stock",
    "total_harvest",
    "efficiency_t",
    "efficiency",
    "compliance",
    "effort_compliance",
    "govsim_efficiency",
    "cap_unparsed",
    "mean_effort",
    "group_norm",
    "wealth_gini",
    "n_alive",
    "deaths",
    "punishments",
    "collapsed",
    "survival_time",
    "norm_similarity",
    "norm_alignment",
    "shared_policy",
    "llm_decisions_per_villager",
)

DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(FisheryModel.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty
}


def unsupported(params: dict[str, Any]) -> str | None:
    """Why a run with these model arguments cannot use this engine (None: it can)."""
    p = {**DEFAULTS, **params}
    players = p.get("players")
    if players:
        return "a [population] (players) is given: the engine runs rule villagers only"
    if p.get("llm_agents", 0):
        return "llm_agents > 0: LLM villagers run in the Mesa model"
    if p.get("proposal_form") != "number":
        return "proposal_form = 'text': text norms run in the Mesa model"
    return None


class _Stream:
    """Each run's ``random.Random(seed)`` stream, buffered: row j's next value is ``u[j, ptr[j]]``.

    The values are made by numpy's MT19937 put in the state Python's generator is seeded to
    (the same Mersenne Twister), two 32-bit words per float as CPython's ``random()`` does:
    ``(a >> 5) * 2**26 + (b >> 6)) / 2**53``; blocks of them, not one call per value."""

    def __init__(self, seeds: Sequence[int], width: int) -> None:
        self.gens = []
        for seed in seeds:
            key = random.Random(seed).getstate()[1]
            mt = np.random.MT19937()
            state = mt.state
            state["state"] = {"key": np.asarray(key[:624], dtype=np.uint32), "pos": key[624]}
            mt.state = state
            self.gens.append(mt)
        self.width = width
        self.u = np.empty((len(seeds), width))
        self.ptr = np.full(len(seeds), width)

    def ensure(self, need: int) -> None:
        low = np.flatnonzero(self.width - self.ptr < need)
        if not len(low):
            return
        rest = self.width - self.ptr[low]
        fresh = np.empty((len(low), self.width))
        for row, j in enumerate(low):
            k = self.width - rest[row]
            raw = self.gens[j].random_raw(2 * k)
            fresh[row, : rest[row]] = self.u[j, self.ptr[j] :]
            a, b = raw[0::2] >> np.uint64(5), raw[1::2] >> np.uint64(6)
            fresh[row, rest[row] :] = (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)
        self.u[low] = fresh
        self.ptr[low] = 0

    def take(self, rows: np.ndarray) -> np.ndarray:
        out = self.u[rows, self.ptr[rows]]
        self.ptr[rows] += 1
        return out

    def keep(self, mask: np.ndarray) -> None:
        self.gens = [g for g, k in zip(self.gens, mask, strict=True) if k]
        self.u, self.ptr = self.u[mask], self.ptr[mask]


#: tests set this to run every bounded draw through the word-by-word path
_ALWAYS_SLOW = False


class _Numpy:
    """The ``model.rng`` draws of the rounds, made from each run's PCG64 raw 64-bit outputs
    exactly as numpy's Generator makes them, so that a round costs one ``random_raw`` call per
    run instead of a Python-level ``integers`` / ``random`` call each:

    * ``random(L)``: ``(raw >> 11) * 2**-53`` per value;
    * ``integers(0, L-1, size=L)``: Lemire's bounded draw on 32-bit words, ``m = w * (L-1)``,
      value ``m >> 32``, rejecting ``m mod 2**32 < 2**32 mod (L-1)``; the words come from the bit
      generator's ``next_uint32``: the low half of a raw output first, the high half kept in
      the generator's one-word buffer (``has_uint32``) for the next word (``range == 0``, i.e.
      ``L == 2``, draws nothing).  A rejection (probability < 1e-9 per value) takes the exact
      slow path, word by word.

    ``normal`` is left to the generator itself (it uses full 64-bit outputs, never the word
    buffer, so the buffer kept here stays right)."""

    def __init__(self, gens: list[np.random.Generator]) -> None:
        self.gens = gens
        states = [g.bit_generator.state for g in gens]
        self.has32 = np.array([int(st["has_uint32"]) for st in states], dtype=np.int64)
        self.buf32 = np.array([int(st["uinteger"]) for st in states], dtype=np.uint64)

    def keep(self, mask: np.ndarray) -> None:
        self.gens = [g for g, k in zip(self.gens, mask, strict=True) if k]
        self.has32, self.buf32 = self.has32[mask], self.buf32[mask]

    def draw(
        self, rows: np.ndarray, L: np.ndarray, doubles: bool
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """For each row: ``random(L)`` (when ``doubles``) then ``integers(0, L-1, size=L)``,
        padded to (len(rows), max L)."""
        width = int(L.max())
        has = self.has32[rows]
        n32 = np.where(L > 2, L, 0)
        nraw32 = np.maximum(0, (n32 - has + 1) // 2)
        nd = L if doubles else np.zeros_like(L)
        total = nd + nraw32
        raw = np.zeros((len(rows), int(total.max()) if len(rows) else 0), dtype=np.uint64)
        gens = self.gens
        for i, j in enumerate(rows.tolist()):
            k = int(total[i])
            if k:
                raw[i, :k] = gens[j].bit_generator.random_raw(k)
        u = None
        if doubles:
            u = (raw[:, :width] >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        # the 32-bit words after the doubles: [buffered word] + low/high halves
        cols = np.arange(2 * max(1, int(nraw32.max())))
        src = nd[:, None] + cols[None, :] // 2
        src = np.minimum(src, raw.shape[1] - 1) if raw.shape[1] else np.zeros_like(src)
        word = (
            raw[np.arange(len(rows))[:, None], src]
            if raw.shape[1]
            else np.zeros(src.shape, np.uint64)
        )
        word = np.where(cols[None, :] % 2 == 0, word & np.uint64(0xFFFFFFFF), word >> np.uint64(32))
        seq = np.concatenate([self.buf32[rows][:, None], word], axis=1)
        start = 1 - has
        idx = start[:, None] + np.arange(width)[None, :]
        idx = np.minimum(idx, seq.shape[1] - 1)
        w = seq[np.arange(len(rows))[:, None], idx]
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
        new_buf = seq[np.arange(len(rows)), last]
        self.has32[rows] = np.where(n32 > 0, spare.astype(np.int64), has)
        self.buf32[rows] = np.where((n32 > 0) & spare, new_buf, self.buf32[rows])
        for i in np.flatnonzero(rejected):  # redo the row word by word (exact, rare)
            picks[i] = 0
            j = int(rows[i])
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
                    r = int(self.gens[j].bit_generator.random_raw())
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


def _col(values: list[Any], dtype: Any = float) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


def _norm_structure(x: np.ndarray, alive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numeric_norm_structure (norm_structure.py) for every run at once: x is (R, n, 3)."""
    rows = x.shape[0]
    sim = np.full(rows, np.nan)
    order = np.full(rows, np.nan)
    full = alive.all(axis=1)
    if full.any() and x.shape[1] >= 2:
        s, o = _structure_full(x[full])
        sim[full], order[full] = s, o
    from mesa_dilemmas.dilemmas.fishery.norm_structure import numeric_norm_structure

    for j in np.flatnonzero(~full):  # after deaths (stop_at_collapse = false): one by one
        living = x[j][alive[j]]
        if len(living) >= 2:
            r = numeric_norm_structure(living)
            sim[j], order[j] = r.similarity, r.alignment
    return sim, order


def _structure_full(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = x.shape[1]
    sd = x.std(axis=1, keepdims=True)
    centred = x - x.mean(axis=1, keepdims=True)
    ok = sd > 1e-12
    z = np.divide(centred, sd, out=np.zeros_like(x), where=ok)
    live = np.abs(z).sum(axis=1) > 0  # (R, 3) columns with variance
    d = live.sum(axis=1)
    sim = np.ones(len(x))
    order = np.ones(len(x))
    norms = np.linalg.norm(z, axis=2, keepdims=True)  # dead columns are zero: same norms
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
) -> list[dict[str, list[Any]]]:
    """Run ``(run_id, iteration, kwargs)`` triples (kwargs with ``rng`` = the seed) to
    ``max_steps`` and return, per group of equal ``n_agents``, the columns of Mesa's
    ``batch_run`` rows (RunId, iteration, Step, the kwargs, the reporters)."""
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
        self.se = np.zeros((R, n))
        self.monitor = np.zeros((R, n))
        self.punish_p = np.zeros((R, n))
        self.norm = np.zeros((R, n))
        for j, p in enumerate(params):
            rng = self.gens[j]
            if p["population"] == "general":
                dispositions = ["general"] * n
            else:  # FisheryModel._dispositions
                n_alt = int(round(p["altruism_ratio"] * n))
                kinds = ["altruistic"] * n_alt + ["selfish"] * (n - n_alt)
                dispositions = [kinds[i] for i in rng.permutation(n)]
            for slot in range(n):
                e, m, q, g = draw_strategy(
                    rng,
                    dispositions[slot],
                    p["punisher_profile"],
                    (p["monitoring_min"], p["monitoring_max"]),
                )
                self.se[j, slot], self.monitor[j, slot] = e, m
                self.punish_p[j, slot], self.norm[j, slot] = q, g
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
        self.numpy = _Numpy(self.gens)  # after the initial draws: the word buffer as they left it
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

    def run(self) -> dict[str, list[Any]]:
        self._record()
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
        self.gens = [g for g, k in zip(self.gens, mask, strict=True) if k]
        self.stream.keep(mask)
        self.numpy.keep(mask)

    def _columns(self) -> dict[str, list[Any]]:
        run_idx = np.concatenate([ids for _, ids, _ in self.records])
        steps = np.concatenate([np.full(len(ids), t) for t, ids, _ in self.records])
        order = np.lexsort((steps, run_idx))  # rows run by run, steps in order (batch_run's)
        run_idx, steps = run_idx[order], steps[order]
        out: dict[str, list[Any]] = {
            "RunId": [self.runs[i][0] for i in run_idx],
            "iteration": [self.runs[i][1] for i in run_idx],
            "Step": steps.tolist(),
        }
        keys: list[str] = []
        for _, _, kw in self.runs:
            keys.extend(k for k in kw if k not in keys)
        for k in keys:
            out[k] = [self.runs[i][2].get(k) for i in run_idx]
        data = {
            name: np.concatenate([rec[name] for _, _, rec in self.records])[order]
            for name in self.records[0][2]
        }
        for name in REPORTERS:
            if name == "cap_unparsed":
                out[name] = [0] * len(run_idx)
            elif name == "shared_policy":
                out[name] = [cap_sentence(g) for g in data["group_norm"]]
            elif name == "llm_decisions_per_villager":
                out[name] = [math.nan] * len(run_idx)
            else:
                out[name] = data[name].tolist()
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
        with np.errstate(divide="ignore", invalid="ignore"):
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
            picks = np.zeros((R, n), dtype=int)
            _, drawn = self.numpy.draw(act, L[act], doubles=False)
            picks[act, : drawn.shape[1]] = drawn
            pos = np.arange(n)[None, :]
            peer = np.take_along_axis(order, picks + (picks >= pos), axis=1)
            peer_harvest = np.take_along_axis(self.harvest, peer, axis=1)
            for i in range(n):
                rr = act[L[act] > i]
                if not len(rr):
                    break
                v = order[rr, i]
                u1 = self.stream.take(rr)
                go = (u1 < self.monitor[rr, v]) & (peer_harvest[rr, i] > self.G[rr])
                r2 = rr[go]
                if not len(r2):
                    continue
                u2 = self.stream.take(r2)
                hit = u2 < self.punish_p[r2, v[go]]
                r3 = r2[hit]
                v3 = v[go][hit]
                self.round_payoff[r3, v3] -= self.gamma[r3]
                self.punished[r3, peer[r3, i]] += 1
                self.punishments[r3] += 1
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
            rank = np.arange(len(rr)) - np.repeat(np.cumsum(counts) - counts, counts)
            u = self.stream.u[rr, self.stream.ptr[rr] + rank]
            self.stream.ptr += counts
            own = self.payoff_avg[rr, own_slot[rr, ii]]
            other = self.payoff_avg[rr, model_slot[rr, ii]]
            x = -self.delta[rr] * (other - own)
            prob = np.fromiter(
                (0.0 if v > 700 else 1.0 / (1.0 + math.exp(v)) for v in x.tolist()),
                float,
                count=len(x),
            )
            copy = u < prob
            cr, ci = rr[copy], ii[copy]
            if len(cr):
                ncopy = np.bincount(cr, minlength=R)
                noise = np.zeros((R, n, 3))
                for j in np.flatnonzero(ncopy):
                    z = self.gens[j].normal(0.0, 1.0, size=3 * ncopy[j]).reshape(-1, 3)
                    noise[j, ci[cr == j]] = z
                copying = np.zeros((R, n), dtype=bool)
                copying[cr, ci] = True
                for i in range(n):  # in seat order: a copy sees earlier copies of this round
                    r4 = np.flatnonzero(copying[:, i])
                    if not len(r4):
                        continue
                    me, k = own_slot[r4, i], model_slot[r4, i]
                    z = noise[r4, i]
                    self.se[r4, me] = np.minimum(
                        1.0, np.maximum(0.0, self.se[r4, k] + self.sd[r4] * z[:, 0])
                    )
                    self.monitor[r4, me] = np.minimum(
                        1.0, np.maximum(0.0, self.monitor[r4, k] + self.sd[r4] * z[:, 1])
                    )
                    self.norm[r4, me] = np.maximum(0.0, self.norm[r4, k] + self.nsd[r4] * z[:, 2])

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
        with np.errstate(invalid="ignore", divide="ignore"):
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
        with np.errstate(invalid="ignore", divide="ignore"):
            gs = np.where(best > 0, 1.0 - np.maximum(0.0, best - self.cumulative) / best, 0.0)
        self.govsim = np.where(open_, gs, self.govsim)
        check = np.where(self.doubling, self.stock_after, self.stock)
        self.collapsed = self.collapsed | (open_ & ((check <= self.rmin) | (n_alive < n)))


__all__ = ["REPORTERS", "run_vector", "unsupported"]
