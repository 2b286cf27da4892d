"""FAISS HNSW-Flat (inner product on unit vectors): the graph index users pick for real embeddings
(extra `faiss`). M = 32; the query-time `efSearch` is the swept parameter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .vectors import stack_unit, vector_of


class FaissHNSW:
    name = "faiss-hnsw"
    capabilities = frozenset({"vectors", "tunable"})
    query_params: ClassVar[dict[str, list[int]]] = {"ef_search": [16, 32, 64, 128]}

    def __init__(self, context: SystemContext, *, m: int = 32, ef_construction: int = 40, ef_search: int = 32):
        try:
            import faiss
        except ImportError:
            raise ImportError("faiss is not installed; pip install 'magnetic-bench[faiss]'") from None
        self._index = faiss.IndexHNSWFlat(context.vector_dim(), m, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = ef_construction
        self.ef_search = self.default_ef_search = ef_search
        self._ids: list[str] = []

    def add(self, docs: Sequence[Document]) -> None:
        self._index.add(stack_unit(docs))
        self._ids += [d.id for d in docs]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        self._index.hnsw.efSearch = max(self.ef_search, k)
        scores, rows = self._index.search(vector_of(query)[None, :].astype(np.float32), k)
        return [SearchHit(self._ids[r], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]

    def set_query_params(self, **params: Any) -> None:
        """`ef_search`; no arguments restore the default."""
        self.ef_search = int(params.get("ef_search", self.default_ef_search))

    def close(self) -> None:
        self._index.reset()
