"""FAISS IVF-Flat (inner product on unit vectors): the strongest in-memory peer (extra `faiss`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .vectors import stack_unit, vector_of


class FaissIVF:
    name = "faiss-ivf"
    capabilities = frozenset({"vectors", "tunable"})
    query_params: ClassVar[dict[str, list[int]]] = {"nprobe": [1, 2, 4, 8, 12, 16, 24, 32]}

    def __init__(self, context: SystemContext, *, nlist: int | None = None, nprobe: int = 16) -> None:
        try:
            import faiss
        except ImportError:
            raise ImportError("faiss is not installed; pip install 'magnetic-bench[faiss]'") from None
        self._faiss = faiss
        self.dim = context.vector_dim()
        self.nlist = nlist
        self.nprobe = self.default_nprobe = nprobe
        self._ids: list[str] = []
        self._index: Any = None  # built on the first batch (faiss has no type hints)

    def add(self, docs: Sequence[Document]) -> None:
        """Trains on the first batch (nlist = 4·sqrt(N), at least 39 points per list), then adds."""
        matrix = stack_unit(docs)
        if self._index is None:
            nlist = self.nlist or max(1, min(round(4 * np.sqrt(len(matrix))), len(matrix) // 39))
            # the factory's index owns its quantizer (no Python-side reference to keep alive)
            self._index = self._faiss.index_factory(self.dim, f"IVF{nlist},Flat", self._faiss.METRIC_INNER_PRODUCT)
            self._index.train(matrix)
        self._index.add(matrix)
        self._ids += [d.id for d in docs]
        self._index.nprobe = self.nprobe

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        vector = vector_of(query)[None, :].astype(np.float32)
        scores, rows = self._index.search(vector, k)
        if (rows[0] < 0).any() and len(self._ids) > (rows[0] >= 0).sum():  # the probed lists held fewer than k
            self._index.nprobe = self._index.nlist
            scores, rows = self._index.search(vector, k)
            self._index.nprobe = self.nprobe
        return [SearchHit(self._ids[r], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]

    def set_query_params(self, **params: Any) -> None:
        """`nprobe`; no arguments restore the default."""
        self.nprobe = int(params.get("nprobe", self.default_nprobe))
        self._index.nprobe = self.nprobe

    def close(self) -> None:
        if self._index is not None:
            self._index.reset()
