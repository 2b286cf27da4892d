"""Helpers shared by the vector baselines (`similarities` and `top_k` are the engine's own, re-exported,
so exact and clustered baselines scan vectors exactly as fast as the engine does)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document, vector_of
from reference.index import similarities, top_k

__all__ = ["similarities", "stack_unit", "top_k", "vector_of"]


def stack_unit(docs: Sequence[Document]) -> np.ndarray:
    """The documents' vectors as one float32 matrix of unit rows."""
    matrix = np.stack([vector_of(d) for d in docs]).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit
