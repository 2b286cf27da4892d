"""Helpers shared by the vector baselines (`similarities` and `top_k` are the engine's own, re-exported,
so exact and clustered baselines scan vectors exactly as fast as the engine does)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document
from reference.index import similarities, top_k

__all__ = ["similarities", "stack_unit", "top_k"]


def stack_unit(docs: Sequence[Document]) -> np.ndarray:
    """The documents' vectors as one float32 matrix of unit rows."""
    matrix = np.stack([d.vector for d in docs]).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
