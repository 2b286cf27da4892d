"""Helpers shared by the vector baselines."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document


def stack_unit(docs: Sequence[Document]) -> np.ndarray:
    """The documents' vectors as one float32 matrix of unit rows."""
    matrix = np.stack([d.vector for d in docs]).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first."""
    if k < len(scores):
        best = np.argpartition(-scores, k - 1)[:k]
        return best[np.argsort(-scores[best], kind="stable")]
    return np.argsort(-scores, kind="stable")
