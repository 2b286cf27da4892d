"""Exact search: the inner product of the query with every vector (the ground truth's twin)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .vectors import Rows, similarities, top_k, vector_of


class FlatNumpy:
    name = "flat-numpy"
    capabilities = frozenset({"vectors", "delete"})

    def __init__(self, context: SystemContext) -> None:
        self._rows = Rows(context.vector_dim())

    def add(self, docs: Sequence[Document]) -> None:
        self._rows.add(docs)

    def delete(self, doc_ids: Sequence[str]) -> None:
        self._rows.delete(doc_ids)

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        scores = similarities(self._rows.matrix, vector_of(query))
        return [SearchHit(self._rows.ids[i], float(scores[i])) for i in top_k(scores, min(k, len(scores))).tolist()]

    def close(self) -> None:
        self._rows = Rows(self._rows.matrix.shape[1])
