"""How the kernels are compiled, and the primitives they share (a dot product, a min-heap's replacement)."""

from __future__ import annotations

import numpy as np
from numba import njit

compiled = njit(cache=True, fastmath=True, nogil=True)
"""The default: cached, the GIL released, and `fastmath`, which lets the compiler vectorise the dot products (so a
score may differ from NumPy's in the last float32 bits)."""
inlined = njit(cache=True, fastmath=True, nogil=True, inline="always")
"""For helpers: inlined where they are called, so that a caller's constant (`probe_for`'s dimension) reaches them."""
strict = njit(cache=True, nogil=True)
"""For kernels that rank or start from -inf: no fastmath, so that ties and infinities compare as NumPy's do."""
brief = njit(cache=True, fastmath=True)
brief_strict = njit(cache=True)
"""For kernels of well under a microsecond that a search calls from Python: they keep the GIL, since releasing it
hands it to a waiting thread and then waits to get it back, which costs far more than the kernel's own work."""


def rows32(vectors: np.ndarray) -> np.ndarray:
    """Vectors as the kernels take them (C-contiguous float32: one compiled variant)."""
    return np.ascontiguousarray(vectors, dtype=np.float32)


@inlined
def dot(vectors: np.ndarray, slot: int, query: np.ndarray, dim: int) -> np.float32:
    score = np.float32(0.0)
    for j in range(dim):
        score += vectors[slot, j] * query[j]
    return score


@inlined
def dots(matrix: np.ndarray, query: np.ndarray, dim: int) -> np.ndarray:
    scores = np.empty(matrix.shape[0], np.float32)
    for i in range(matrix.shape[0]):
        scores[i] = dot(matrix, i, query, dim)
    return scores


@compiled
def replace_smallest(scores: np.ndarray, payload: np.ndarray, score: np.float32, value: int) -> None:
    """Replace the root of the min-heap `scores` (with `payload` alongside) by `score` and sift it down."""
    i = 0
    while True:
        child = 2 * i + 1
        if child >= len(scores):
            break
        if child + 1 < len(scores) and scores[child + 1] < scores[child]:
            child += 1
        if scores[child] >= score:
            break
        scores[i], payload[i] = scores[child], payload[child]
        i = child
    scores[i], payload[i] = score, value
