"""Hybrid retrieval as users build it: exact dense search and BM25, each over every document, fused
by reciprocal rank (RRF, Cormack et al. 2009: Σ 1 / (60 + rank) over the two lists' top `depth`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext
from reference.fusion import reciprocal_rank
from reference.lexical import LexicalIndex
from reference.validation import check_k

from .vectors import similarities, stack_unit, top_k, vector_of


class HybridRRF:
    name = "hybrid-rrf"
    capabilities = frozenset({"text", "vectors"})

    def __init__(self, context: SystemContext, *, depth: int = 100, rrf_k: int = 60) -> None:
        self.depth, self.rrf_k = depth, rrf_k
        self._lexical = LexicalIndex()
        self._ids: list[str] = []
        self._matrix = np.zeros((0, context.dim or 0), dtype=np.float32)

    def add(self, docs: Sequence[Document]) -> None:
        start = len(self._ids)
        self._matrix = np.vstack([self._matrix, stack_unit(docs)])
        self._lexical.add(np.arange(start, start + len(docs)), [d.text for d in docs])
        self._ids += [d.id for d in docs]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        similarity = similarities(self._matrix, vector_of(query))
        dense = top_k(similarity, min(self.depth, len(self._ids)))
        rows, scores = reciprocal_rank(
            (dense, similarity[dense]), self._lexical.search(query.text, self.depth), rrf_k=self.rrf_k
        )
        best = top_k(scores, min(k, len(rows)))
        return [SearchHit(self._ids[r], float(scores[i])) for i, r in zip(best.tolist(), rows[best].tolist())]

    def close(self) -> None:
        self._ids.clear()
