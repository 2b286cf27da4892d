"""FAISS HNSW-Flat (inner product on unit vectors): the graph index users pick for real embeddings
(extra `faiss`). M = 32; the query-time `efSearch` is the swept parameter. HNSW cannot remove a node:
deletes are filtered out at search time (an `IDSelector` of the deleted ids), as FAISS users do, and the
deleted nodes stay in the graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k
from harness.systems.registry import missing_extra

from .vectors import stack_unit, vector_of

try:
    import faiss
except ModuleNotFoundError as error:
    raise missing_extra("faiss-hnsw", "faiss", error) from None


class FaissHNSW:
    name = "faiss-hnsw"
    capabilities = frozenset({"vectors", "tunable", "delete"})
    query_params: ClassVar[dict[str, list[int]]] = {"ef_search": [16, 32, 64, 128]}

    def __init__(self, context: SystemContext, *, m: int = 32, ef_construction: int = 40, ef_search: int = 32):
        self._index = faiss.IndexHNSWFlat(context.vector_dim(), m, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = ef_construction
        self.ef_search = self.default_ef_search = ef_search
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._deleted: set[int] = set()
        self._filter: Any = None

    def delete(self, doc_ids: Sequence[str]) -> None:
        self._deleted.update(self._row_of.pop(doc_id) for doc_id in doc_ids if doc_id in self._row_of)
        deleted = faiss.IDSelectorBatch(np.fromiter(self._deleted, dtype=np.int64, count=len(self._deleted)))
        self._filter = faiss.IDSelectorNot(deleted)
        self._filter.referenced = deleted  # the wrapper does not keep the selector it negates alive

    def add(self, docs: Sequence[Document]) -> None:
        self._row_of.update((d.id, len(self._ids) + i) for i, d in enumerate(docs))
        self._index.add(stack_unit(docs))
        self._ids += [d.id for d in docs]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        params = faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k), sel=self._filter)
        scores, rows = self._index.search(vector_of(query)[None, :].astype(np.float32), k, params=params)
        return [SearchHit(self._ids[r], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]

    def set_query_params(self, **params: Any) -> None:
        """`ef_search`; no arguments restore the default."""
        self.ef_search = int(params.get("ef_search", self.default_ef_search))

    def close(self) -> None:
        self._index.reset()
