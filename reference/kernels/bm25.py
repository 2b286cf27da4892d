"""Lexical scoring: BM25 over the lexical index's postings, and the choice of the best rows it scored."""

from __future__ import annotations

import numpy as np

from .jit import compiled, strict


@compiled
def bm25_into(
    terms: np.ndarray,
    offsets: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
    query_terms: np.ndarray,
    weights: np.ndarray,
    lengths: np.ndarray,
    live: np.ndarray,
    k1: float,
    b: float,
    average_length: float,
    scores: np.ndarray,
    touched: np.ndarray,
    found: int,
) -> int:
    """Add one segment's BM25 contributions for the query's words to `scores` (by row): word
    `query_terms[i]` (weight `weights[i]`, its idf times its repeats in the query) is held by
    `rows[offsets[j]:offsets[j + 1]]` where `terms[j]` is that word. Rows first scored here are appended
    to `touched` after its first `found`; returns the new count. Dead rows are skipped."""
    for i in range(len(query_terms)):
        j = np.searchsorted(terms, query_terms[i])
        if j == len(terms) or terms[j] != query_terms[i]:
            continue
        for p in range(offsets[j], offsets[j + 1]):
            row = rows[p]
            if not live[row]:
                continue
            tf = counts[p]
            norm = k1 * (1.0 - b + b * lengths[row] / average_length)
            if scores[row] == 0.0:
                touched[found] = row
                found += 1
            scores[row] += weights[i] * tf / (tf + norm)
    return found


@compiled
def collected(scores: np.ndarray, touched: np.ndarray, found: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `found` rows of `touched` and their accumulated `scores`, each reset to 0 for the next query
    (one pass, where NumPy would gather, copy and scatter)."""
    rows = touched[:found].copy()
    taken = np.empty(found, np.float64)
    for i in range(found):
        taken[i] = scores[rows[i]]
        scores[rows[i]] = 0.0
    return rows, taken


@strict
def best_scored(rows: np.ndarray, scores: np.ndarray, depth: int) -> np.ndarray:
    """Positions of the best `depth` of these scored rows, best first (ties: the earlier row first). A heap of
    `depth` over all of them: a text query touches most rows through its common words, and a partition of
    every score would cost more than the BM25 scoring itself."""
    size = min(depth, len(rows))
    heap = np.arange(size)
    for i in range(size // 2 - 1, -1, -1):
        _sift_worst_down(heap, rows, scores, i, size)
    for position in range(size, len(rows)):
        if _worse(rows, scores, heap[0], position):
            heap[0] = position
            _sift_worst_down(heap, rows, scores, 0, size)
    by_row = heap[np.argsort(rows[heap], kind="mergesort")]
    return by_row[np.argsort(-scores[by_row], kind="mergesort")]


@strict
def _worse(rows: np.ndarray, scores: np.ndarray, a: int, b: int) -> bool:
    """Whether position a ranks below position b: a lower score, or the same score for a later row."""
    return bool(scores[a] < scores[b] or (scores[a] == scores[b] and rows[a] > rows[b]))


@strict
def _sift_worst_down(heap: np.ndarray, rows: np.ndarray, scores: np.ndarray, i: int, size: int) -> None:
    """Restore the order of `heap[:size]`, the worst-ranked position at the root, below position i."""
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and _worse(rows, scores, heap[child + 1], heap[child]):
            child += 1
        if not _worse(rows, scores, heap[child], heap[i]):
            return
        heap[i], heap[child] = heap[child], heap[i]
        i = child
