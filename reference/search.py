"""Three-stage search: centroids → per-group searches → entity boost → flat fill.

Stage 1 ranks the live groups' centroids and keeps the best `group_top_k`. Stage 2 searches
those groups' cells, in parallel on the thread pool when the groups hold at least
`parallel_min_cells` cells (below that, the hand-off to a thread costs more than a NumPy block
product: about 100 µs against 30 µs for 1,000 cells of 384 dimensions).
Stage 3 looks the query's entities up in the exact-match index: cells that mention them are
scored directly and boosted by `entity_boost` times the share of the query's entities they
mention (their groups are thereby searched too). If fewer than `k` candidates score above
`min_score`, an exact flat search over every cell fills in.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .cells import CellTable
from .clustering import GroupState
from .config import MemoryConfig
from .entities import EntityIndex
from .index import GroupIndex, similarities, top_k


@dataclass(frozen=True)
class Candidates:
    """Rows and their similarity-mode scores (cosine + entity boost), best first, rows unique."""

    rows: np.ndarray
    scores: np.ndarray


class ThreeStageSearch:
    """Runs the pipeline over the engine's derived state (read-only)."""

    def __init__(self, config: MemoryConfig, pool: ThreadPoolExecutor) -> None:
        self.config = config
        self.pool = pool

    def run(
        self,
        query: np.ndarray,
        k: int,
        query_entities: frozenset[str],
        *,
        table: CellTable,
        groups: GroupState,
        index: GroupIndex,
        entities: EntityIndex,
    ) -> Candidates:
        rows, scores = self._group_stage(query, k, groups, index)
        if self.config.use_entities and query_entities:
            rows, scores = _merge_best(rows, scores, *self._entity_stage(query, query_entities, table, entities))
        best = top_k(scores, k)
        rows, scores = rows[best], scores[best]
        if int(np.count_nonzero(scores > self.config.min_score)) < k:
            rows, scores = _merge_best(rows, scores, *flat_search(query, k, table))
            best = top_k(scores, k)
            rows, scores = rows[best], scores[best]
        return Candidates(rows, scores)

    def _group_stage(
        self, query: np.ndarray, k: int, groups: GroupState, index: GroupIndex
    ) -> tuple[np.ndarray, np.ndarray]:
        active = groups.active_ids()
        if len(active) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        chosen = active[top_k(similarities(groups.active_centroids(), query), self.config.group_top_k)]
        probed_cells = int(groups.counts[chosen].sum())
        if len(chosen) > 1 and probed_cells >= self.config.parallel_min_cells:
            results = list(self.pool.map(lambda group: index.search(group, query, k), chosen.tolist()))
        else:
            results = [index.search(group, query, k) for group in chosen.tolist()]
        rows = np.concatenate([r for r, _ in results])
        return rows, np.concatenate([s for _, s in results]).astype(np.float64)

    def _entity_stage(
        self, query: np.ndarray, query_entities: frozenset[str], table: CellTable, entities: EntityIndex
    ) -> tuple[np.ndarray, np.ndarray]:
        matched = entities.matches(query_entities)
        rows = np.fromiter(matched, dtype=np.int64, count=len(matched))
        shares = np.fromiter(matched.values(), dtype=np.float64, count=len(matched)) / len(query_entities)
        return rows, similarities(table.vectors[rows], query).astype(np.float64) + self.config.entity_boost * shares


def flat_search(query: np.ndarray, k: int, table: CellTable) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k over every live cell."""
    scores = similarities(table.vectors[: table.size], query)
    scores[~table.alive[: table.size]] = -np.inf
    best = top_k(scores, min(k, len(table)))
    return best, scores[best].astype(np.float64)


def _merge_best(
    rows: np.ndarray, scores: np.ndarray, more_rows: np.ndarray, more_scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The union of two candidate lists; a row in both keeps its higher score."""
    rows, scores = np.concatenate([rows, more_rows]), np.concatenate([scores, more_scores])
    order = np.lexsort((-scores, rows))
    first = np.r_[True, rows[order][1:] != rows[order][:-1]]
    keep = order[first]
    return rows[keep], scores[keep]
