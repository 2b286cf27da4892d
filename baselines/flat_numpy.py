"""Exact search: the inner product of the query with every vector (the ground truth's twin)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .vectors import similarities, stack_unit, top_k, vector_of


class FlatNumpy:
    name = "flat-numpy"
    capabilities = frozenset({"vectors"})

    def __init__(self, context: SystemContext) -> None:
        self._ids: list[str] = []
        self._matrix = np.zeros((0, context.dim or 0), dtype=np.float32)

    def add(self, docs: Sequence[Document]) -> None:
        self._matrix = np.vstack([self._matrix, stack_unit(docs)])
        self._ids += [d.id for d in docs]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        scores = similarities(self._matrix, vector_of(query))
        return [SearchHit(self._ids[i], float(scores[i])) for i in top_k(scores, k).tolist()]

    def close(self) -> None:
        self._matrix = self._matrix[:0]
