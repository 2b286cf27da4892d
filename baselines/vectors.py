"""NumPy helpers shared by the vector baselines. Baselines never call engine code: an engine change must
never move the systems it is compared against."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document, vector_of

__all__ = ["similarities", "stack_unit", "top_k", "vector_of"]


def similarities(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Inner product of the query with every row (cosine, for unit rows), streaming the rows once."""
    scores: np.ndarray = np.vecdot(matrix, query)
    return scores


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first (ties: the earlier position)."""
    if k < len(scores):
        positions = np.argpartition(-scores, k - 1)[:k]
        return positions[np.lexsort((positions, -scores[positions]))]
    return np.argsort(-scores, kind="stable")


def stack_unit(docs: Sequence[Document]) -> np.ndarray:
    """The documents' vectors as one float32 matrix of unit rows."""
    matrix = np.stack([vector_of(d) for d in docs]).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit
