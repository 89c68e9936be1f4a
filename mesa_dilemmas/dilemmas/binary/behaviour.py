"""Behavioural analysis of strategies (paper 002, Sec. 4.2): feature vectors, PCA, MPD, Cohen's d, PR.

Feature vector.  A strategy's behaviour is summarised by its cooperation rate
after every distinct *opponent history* of a 4-player, 5-round game.  With
permutation invariance over opponents, an opponent history of t rounds is a
multiset of 3 individual C/D sequences of length t, so there are
``C(2**t + 2, 3)`` of them: 1, 4, 20, 120 and 816 for t = 0..4, **961** in all.
For each one the strategy plays rounds 1..t against opponents scripted to that
history (its own earlier moves are its own; payoffs and stock follow the real
rules) and we record whether it cooperates in round t + 1, averaged over 50
rollouts.

Rollouts are only repeated where they can differ: a rollout in which the
strategy never touched its generator is deterministic, so it is played once
(strategies are forbidden global random state, and the analysis checks it).
A deterministic strategy costs 4,629 calls instead of 231,450.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Sequence
from functools import cache
from itertools import combinations_with_replacement, product
from typing import Any

import numpy as np

from mesa_dilemmas.dilemmas.binary.game import play_batch
from mesa_dilemmas.dilemmas.binary.rules import BinaryGame, default_game, make_game
from mesa_dilemmas.dilemmas.binary.strategies.loader import StrategyEntry

FEATURE_PLAYERS = 4
FEATURE_ROUNDS = 5
#: matches per engine call when repeating rollouts (bounds memory)
CHUNK = 8192
#: paper labels and specs of the reference strategies projected onto the PCA
REFERENCE_SPECS = (
    "all_c",
    "all_d",
    "rnd(0.5)",
    "cc(1)",
    "cc(2)",
    "cc(3)",
    "cd(1)",
    "cd(2)",
    "cd(3)",
)


@cache
def opponent_histories(
    n_players: int = FEATURE_PLAYERS, rounds: int = FEATURE_ROUNDS
) -> tuple[np.ndarray, ...]:
    """For t = 0..rounds-1, an array (H_t, n_players - 1, t) of every distinct opponent history.

    Opponents are interchangeable: a history is a sorted multiset of their
    C/D sequences (True = C).  ``sum(H_t)`` is 961 for 4 players and 5 rounds.
    """
    out = []
    k = n_players - 1
    for t in range(rounds):
        sequences = list(product((False, True), repeat=t))
        combos = list(combinations_with_replacement(range(len(sequences)), k))
        arr = np.zeros((len(combos), k, t), dtype=bool)
        for h, combo in enumerate(combos):
            for j, s in enumerate(combo):
                arr[h, j] = sequences[s]
        out.append(arr)
    return tuple(out)


def feature_dimension(n_players: int = FEATURE_PLAYERS, rounds: int = FEATURE_ROUNDS) -> int:
    """Number of distinct opponent histories: sum over t of C(2**t + n - 2, n - 1)."""
    return sum(math.comb(2**t + n_players - 2, n_players - 1) for t in range(rounds))


def feature_labels(n_players: int = FEATURE_PLAYERS, rounds: int = FEATURE_ROUNDS) -> list[str]:
    """Readable names of the dimensions: ``"r3:CC|CD|DD"`` (round 3, opponents' sequences)."""
    labels = []
    for t, arr in enumerate(opponent_histories(n_players, rounds)):
        for h in arr:
            seqs = ["".join("C" if a else "D" for a in row) or "-" for row in h]
            labels.append(f"r{t + 1}:" + "|".join(seqs))
    return labels


class GlobalRandomStateError(RuntimeError):
    """A strategy changed Python's or numpy's global random state."""


def _entropy(seed: int, key: str) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed, zlib.crc32(key.encode())])


def feature_vector(
    entry: StrategyEntry,
    game: BinaryGame | str | None = None,
    rollouts: int = 50,
    seed: int = 0,
    game_params: dict[str, Any] | None = None,
    flags: list[str] | None = None,
) -> np.ndarray:
    """The 961-dimensional cooperation-rate vector of one strategy (see the module docstring).

    ``game``: rules, or a C/D game's name (None: the first registered, :func:`default_game`).
    Sandboxed strategies that misbehave play the default action and are flagged;
    with ``flags`` given, the reasons are appended to it (the vector is then not
    the strategy's own behaviour)."""
    if game is None:
        game = default_game()
    if isinstance(game, str):
        game = make_game(game, FEATURE_PLAYERS, FEATURE_ROUNDS, **(game_params or {}))
    n, horizon = game.n_players, game.n_rounds
    histories = opponent_histories(n, horizon)
    key = f"{entry.set_name}/{entry.name}/{entry.spec or ''}"
    seeds = _entropy(seed, key).generate_state(
        sum(len(h) for h in histories) * rollouts * 2, np.uint64
    )
    seeds = (seeds >> np.uint64(1)).astype(np.int64)  # 63-bit entropies
    used = 0
    parts = []
    py_state, np_state = random.getstate(), np.random.get_state()[1].copy()
    for t, opp in enumerate(histories):
        count = len(opp)
        scripted = np.zeros((count, n, horizon), dtype=np.int8)
        scripted[:, 1:, :t] = opp
        lineup = [entry] + [None] * (n - 1)
        first = play_batch(
            game,
            [lineup] * count,
            seeds[used : used + count],
            scripted=scripted,
            rounds=t + 1,
            keep_history=True,
        )
        used += count
        if flags is not None:
            flags.extend(f.reason for f in first.flags)
        assert first.store is not None and first.used_rng is not None
        coop = first.store.actions[:, 0, t].astype(float)
        random_rows = np.flatnonzero(first.used_rng[:, 0])
        if rollouts > 1 and len(random_rows):
            reps = np.repeat(random_rows, rollouts - 1)
            sums = np.zeros(count)
            for lo in range(0, len(reps), CHUNK):
                chunk = reps[lo : lo + CHUNK]
                again = play_batch(
                    game,
                    [lineup] * len(chunk),
                    seeds[used : used + len(chunk)],
                    scripted=scripted[chunk],
                    rounds=t + 1,
                    keep_history=True,
                )
                used += len(chunk)
                if flags is not None:
                    flags.extend(f.reason for f in again.flags)
                assert again.store is not None
                sums += np.bincount(chunk, weights=again.store.actions[:, 0, t], minlength=count)
            coop[random_rows] = (coop[random_rows] + sums[random_rows]) / rollouts
        parts.append(coop)
    if random.getstate() != py_state or not np.array_equal(np.random.get_state()[1], np_state):
        raise GlobalRandomStateError(
            f"strategy {entry.name!r} changed the global random state; use self.rng instead"
        )
    return np.concatenate(parts)


def feature_matrix(
    entries: Sequence[StrategyEntry],
    game: str | None = None,
    rollouts: int = 50,
    seed: int = 0,
    game_params: dict[str, Any] | None = None,
    offenders: dict[int, str] | None = None,
) -> np.ndarray:
    """(strategies, 961) feature vectors; each strategy seeded by its own name, so order-free.

    ``game``: a C/D game's name (None: the first registered, :func:`default_game`).

    Without ``offenders`` the first strategy that raises (or changes the global
    random state) ends the call.  With it, every misbehaving strategy -- one that
    raises, or that the sandbox flags -- is listed there (index -> reason) and
    its row is NaN, and the others are still computed."""
    rules = make_game(
        game or default_game(), FEATURE_PLAYERS, FEATURE_ROUNDS, **(game_params or {})
    )
    if not entries:
        return np.zeros((0, feature_dimension()))
    if offenders is None:
        return np.stack([feature_vector(e, rules, rollouts, seed) for e in entries])
    rows = []
    for i, e in enumerate(entries):
        flags: list[str] = []
        try:
            row = feature_vector(e, rules, rollouts, seed, flags=flags)
        except Exception as exc:  # noqa: BLE001 - an offender is listed, not fatal
            offenders[i] = f"{type(exc).__name__}: {exc}"[:500]
            row = np.full(feature_dimension(), np.nan)
        if flags and i not in offenders:
            offenders[i] = flags[0]
            row = np.full(feature_dimension(), np.nan)
        rows.append(row)
    return np.stack(rows)


def reference_features(
    game: str | None = None,
    rollouts: int = 50,
    seed: int = 0,
    specs: Sequence[str] = REFERENCE_SPECS,
) -> tuple[list[str], np.ndarray]:
    """Labels (A-C, A-D, Rnd(0.5), CC(1..3), CD(1..3)) and feature vectors of the references."""
    entries = [StrategyEntry.reference(s, set_name="reference") for s in specs]
    return [e.label for e in entries], feature_matrix(entries, game, rollouts, seed)


# -- PCA and set statistics ------------------------------------------------------------


def pca(features: np.ndarray, components: int = 2) -> tuple[Any, np.ndarray]:
    """Fit a PCA; PC1 is oriented so that higher cooperation scores higher (A-C right, A-D left)."""
    from sklearn.decomposition import PCA

    k = max(1, min(components, features.shape[0], features.shape[1]))
    model = PCA(n_components=k, random_state=0)
    coords = model.fit_transform(features)
    coop = features.mean(axis=1)
    if coords.shape[0] > 1 and np.corrcoef(coords[:, 0], coop)[0, 1] < 0:
        model.components_[0] *= -1
        coords[:, 0] *= -1
    return model, coords


@cache
def random_distance(dim: int, pairs: int = 20000, seed: int = 0) -> float:
    """Expected Euclidean distance between two uniform random vectors in [0, 1]^dim (Monte Carlo)."""
    rng = np.random.default_rng(seed)
    total = 0.0
    done = 0
    while done < pairs:
        m = min(2000, pairs - done)
        a, b = rng.random((m, dim)), rng.random((m, dim))
        total += float(np.linalg.norm(a - b, axis=1).sum())
        done += m
    return total / pairs


def mean_pairwise_distance(x: np.ndarray) -> float:
    """Mean Euclidean distance over all pairs of rows (0 for fewer than two)."""
    if len(x) < 2:
        return 0.0
    from scipy.spatial.distance import pdist

    return float(pdist(x).mean())


def normalised_mpd(x: np.ndarray, baseline: float | None = None) -> float:
    """MPD divided by the expected distance of uniform random vectors (1 = as diverse as noise)."""
    base = random_distance(x.shape[1]) if baseline is None else baseline
    return mean_pairwise_distance(x) / base


def cohens_d(a: np.ndarray, b: np.ndarray) -> float:
    """Distance between set centroids over the pooled within-set standard deviation.

    Multivariate: the pooled sd is the square root of the pooled total
    variance (trace of the covariance), so d = 1 means the centroids are one
    typical within-set spread apart.
    """
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return float("nan")
    var_a = a.var(axis=0, ddof=1).sum()
    var_b = b.var(axis=0, ddof=1).sum()
    pooled = ((na - 1) * var_a + (nb - 1) * var_b) / (na + nb - 2)
    if pooled <= 0:
        return float("inf") if not np.allclose(a.mean(0), b.mean(0)) else 0.0
    return float(np.linalg.norm(a.mean(axis=0) - b.mean(axis=0)) / math.sqrt(pooled))


def participation_ratio(x: np.ndarray) -> float:
    """(sum of covariance eigenvalues)^2 / sum of squared eigenvalues: effective dimensions."""
    if len(x) < 2:
        return float("nan")
    c = x - x.mean(axis=0)
    gram = c @ c.T / (len(x) - 1)  # same non-zero eigenvalues as the covariance, smaller
    lam = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
    s2 = float((lam**2).sum())
    return float(lam.sum() ** 2 / s2) if s2 > 0 else float("nan")
