"""A text search's candidates scored with their context: their episode's best candidate and their neighbours."""

from __future__ import annotations

import numpy as np

from .jit import strict


@strict
def with_context(
    rows: np.ndarray,
    scores: np.ndarray,
    episodes: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    episode_weight: float,
    neighbour_weight: float,
) -> np.ndarray:
    """Candidates' scores with their context (the rule is `search/pipeline.py`'s stage 5): `rows` ascending, each
    candidate's episode code and the rows written just before and after it (-1 for none)."""
    count = len(rows)
    order = np.argsort(episodes, kind="mergesort")
    best = np.empty(count)
    start = 0
    while start < count:  # the best score among each episode's candidates (at least 0)
        end, top = start, 0.0
        while end < count and episodes[order[end]] == episodes[order[start]]:
            top = max(top, scores[order[end]])
            end += 1
        best[order[start:end]] = top
        start = end
    around = np.zeros(count)
    for i in range(count):
        around[i] = max(_score_of(rows, scores, before[i]), _score_of(rows, scores, after[i]))
    linked = (before >= 0).any() or (after >= 0).any()
    scale = 1.0 + episode_weight + (neighbour_weight if linked else 0.0)
    scored = (scores + episode_weight * best + neighbour_weight * around) / scale
    first = np.argmax(scores)
    highest = scored.max()
    if scored[first] < highest:
        scored[first] = np.nextafter(highest, np.inf)
    return scored


@strict
def _score_of(rows: np.ndarray, scores: np.ndarray, row: int) -> float:
    """The score of `row` among the candidates `rows` (ascending); 0 where it is none of them."""
    if row < 0:
        return 0.0
    position = np.searchsorted(rows, row)
    return scores[position] if position < len(rows) and rows[position] == row else 0.0
