"""Clustered unit-vector sets with true labels: scaling data with no encoder cost."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VectorSet:
    """Base vectors, held-out query vectors from the same clusters, and the true cluster of each."""

    vectors: np.ndarray
    labels: np.ndarray
    queries: np.ndarray
    query_labels: np.ndarray


def clustered_unit_vectors(
    n: int, dim: int = 384, clusters: int = 100, *, spread: float = 0.8, queries: int = 0, seed: int = 0
) -> VectorSet:
    """`n` unit vectors (and `queries` more) scattered around `clusters` random unit centres.

    A point is centre + spread · N(0, I/dim), normalised: in many dimensions its cosine to its own centre is
    close to 1 / √(1 + spread²), to another point of its cluster close to 1 / (1 + spread²), and close to 0
    across clusters, so a larger spread leaves fewer of a cluster's points above a fixed join threshold.
    """
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(0, clusters, n + queries)
    points = centres[labels] + spread * rng.standard_normal((n + queries, dim)) / np.sqrt(dim)
    points = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
    return VectorSet(points[:n], labels[:n], points[n:], labels[n:])


def exact_top_k(vectors: np.ndarray, queries: np.ndarray, k: int, *, block: int = 256) -> np.ndarray:
    """Row numbers of the exact k nearest vectors (by cosine/inner product) of each query."""
    result = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), block):
        scores = queries[start : start + block] @ vectors.T
        best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1, kind="stable")
        result[start : start + block] = np.take_along_axis(best, order, axis=1)
    return result
