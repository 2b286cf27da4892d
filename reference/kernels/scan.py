"""Exact scores the probe does not use: every cell of some groups (a flat read), and each query's best cells
folded from scores computed elsewhere (a recall estimate's ground truth)."""

from __future__ import annotations

import numpy as np

from .jit import compiled, dot, replace_smallest, strict


@compiled
def scan(
    vectors: np.ndarray, rows: np.ndarray, starts: np.ndarray, sizes: np.ndarray, groups: np.ndarray, query: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every cell of `groups`, group by group, with its exact score (from its float32 `vectors`, by row)."""
    total = 0
    for group in groups:
        total += sizes[group]
    out_rows = np.empty(total, np.int64)
    out_scores = np.empty(total, np.float32)
    read = 0
    for group in groups:
        for slot in range(starts[group], starts[group] + sizes[group]):
            out_rows[read] = rows[slot]
            out_scores[read] = dot(vectors, rows[slot], query, len(query))
            read += 1
    return out_rows, out_scores


@strict
def keep_best(
    best_scores: np.ndarray, best_rows: np.ndarray, scores: np.ndarray, rows: np.ndarray, skip: np.ndarray
) -> None:
    """For each query i, fold the cells `rows` scored `scores[i]` into its min-heap of the best so far
    (`best_scores[i]`, their rows `best_rows[i]`), leaving out the row `skip[i]`."""
    for i in range(scores.shape[0]):
        for j in range(scores.shape[1]):
            if scores[i, j] > best_scores[i, 0] and rows[j] != skip[i]:
                replace_smallest(best_scores[i], best_rows[i], scores[i, j], rows[j])
