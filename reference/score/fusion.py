"""Fusing the dense and the lexical candidate lists of a text query into one ranking.

`rrf`: reciprocal-rank fusion (Cormack et al. 2009), score = Σ 1 / (`rrf_k` + rank) over the two
lists, divided by its largest possible value so it lies in [0, 1] (memory-mode scoring weighs it
like a cosine). `score`: a convex mix of the cosine and the BM25 score calibrated per query (divided
by the query's best BM25 score), weight `lexical_weight` on the lexical side. Both are learning-free.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def reciprocal_rank(
    dense: tuple[np.ndarray, np.ndarray], lexical: tuple[np.ndarray, np.ndarray], *, rrf_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of either list and their normalised RRF scores. Each list is (rows, scores), best first;
    tied scores share the better rank, so equal candidates stay equal."""
    rows = np.unique(np.concatenate([dense[0], lexical[0]]))
    fused = np.zeros(len(rows))
    for ranked, scores in (dense, lexical):
        ranks = np.searchsorted(-scores, -scores, side="left")  # competition ranking: 1, 2, 2, 4
        fused[np.searchsorted(rows, ranked)] += 1.0 / (rrf_k + 1 + ranks)
    return rows, fused / (2.0 / (rrf_k + 1))


def calibrated_scores(
    dense: tuple[np.ndarray, np.ndarray],
    lexical: tuple[np.ndarray, np.ndarray],
    cosine_of: Callable[[np.ndarray], np.ndarray],
    *,
    lexical_weight: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of either list and (1 − w) · dense score + w · BM25 / best BM25 of the query. Each list is (rows,
    scores); a dense candidate keeps the score the dense stages gave it (its cosine, plus any entity boost), and
    `cosine_of` scores the rows only the lexical list holds."""
    rows = np.unique(np.concatenate([dense[0], lexical[0]]))
    similarity = np.zeros(len(rows))
    at_dense = np.searchsorted(rows, dense[0])
    similarity[at_dense] = dense[1]
    only_lexical = np.ones(len(rows), dtype=bool)
    only_lexical[at_dense] = False
    if only_lexical.any():
        similarity[only_lexical] = cosine_of(rows[only_lexical])
    words = np.zeros(len(rows))
    if len(lexical[0]):
        words[np.searchsorted(rows, lexical[0])] = lexical[1] / lexical[1].max()
    return rows, (1 - lexical_weight) * similarity + lexical_weight * words
