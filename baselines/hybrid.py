"""Hybrid retrieval as users build it: exact dense search and BM25, fused by reciprocal rank
(RRF, Cormack et al. 2009: score = Σ 1 / (60 + rank) over the two rankings' top `depth`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext
from reference.validation import check_k

from .bm25 import LexicalIndex
from .vectors import similarities, stack_unit, top_k

RRF_K = 60


class HybridRRF:
    name = "hybrid-rrf"
    capabilities = frozenset({"text", "vectors"})

    def __init__(self, context: SystemContext, *, depth: int = 100) -> None:
        self.depth = depth
        self._lexical = LexicalIndex()
        self._ids: list[str] = []
        self._matrix = np.zeros((0, context.dim or 0), dtype=np.float32)

    def add(self, docs: Sequence[Document]) -> None:
        self._matrix = np.vstack([self._matrix, stack_unit(docs)])
        self._lexical.add([d.text for d in docs])
        self._ids += [d.id for d in docs]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        depth = min(self.depth, len(self._ids))
        dense = top_k(similarities(self._matrix, query.vector), depth)
        lexical_scores = self._lexical.scores(query.text)
        lexical = top_k(lexical_scores, depth)
        lexical = lexical[lexical_scores[lexical] > 0]  # documents sharing no word are not ranked
        fused = np.zeros(len(self._ids))
        for ranked in (dense, lexical):
            fused[ranked] += 1.0 / (RRF_K + 1 + np.arange(len(ranked)))
        best = top_k(fused, min(k, len(fused)))
        return [SearchHit(self._ids[i], float(fused[i])) for i in best.tolist()]

    def close(self) -> None:
        self._ids.clear()
