"""Hybrid retrieval as users build it: exact dense search and BM25 (`bm25s`), each over every document,
fused by reciprocal rank (RRF, Cormack et al. 2009: Σ 1 / (60 + rank) over the two lists' top `depth`)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .bm25 import LexicalRetriever
from .vectors import Rows, similarities, top_k, vector_of


class HybridRRF:
    name = "hybrid-rrf"
    capabilities = frozenset({"text", "vectors", "delete"})

    def __init__(self, context: SystemContext, *, depth: int = 100, rrf_k: int = 60) -> None:
        self.depth, self.rrf_k = depth, rrf_k
        self._lexical = LexicalRetriever()
        self._rows = Rows(context.vector_dim())

    def add(self, docs: Sequence[Document]) -> None:
        self._rows.add(docs)
        self._lexical.add([(d.id, d.text) for d in docs])

    def delete(self, doc_ids: Sequence[str]) -> None:
        self._rows.delete(doc_ids)
        self._lexical.delete(doc_ids)

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        dense = similarities(self._rows.matrix, vector_of(query))
        lexical_ids, lexical = self._lexical.scores(query.text)
        fused: dict[str, float] = {}
        ranked_lists = [
            [self._rows.ids[i] for i in top_k(dense, min(self.depth, len(dense))).tolist()],
            [lexical_ids[i] for i in top_k(lexical, min(self.depth, len(lexical))).tolist() if lexical[i] > 0],
        ]
        for ranked in ranked_lists:
            for rank, doc_id in enumerate(ranked, start=1):
                fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (self.rrf_k + rank)
        best = sorted(fused, key=lambda doc_id: -fused[doc_id])[:k]
        return [SearchHit(doc_id, fused[doc_id]) for doc_id in best]

    def close(self) -> None:
        self._rows = Rows(self._rows.matrix.shape[1])
