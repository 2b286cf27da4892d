"""FAISS IVF-Flat (inner product on unit vectors): the strongest in-memory peer (extra `faiss`)."""

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
    raise missing_extra("faiss-ivf", "faiss", error) from None


class FaissIVF:
    """IVF-Flat with its own ids (`add_with_ids`), so deletes are `remove_ids` as FAISS users do them.

    Trained on the first batch, or, with `train_after=n` (a stream), on the first n vectors: until then
    the vectors sit in an exact flat index; afterwards every vector is added to the lists it was trained
    for, however far the data drifts from them (the cost of a static index in a stream)."""

    name = "faiss-ivf"
    capabilities = frozenset({"vectors", "tunable", "delete"})
    query_params: ClassVar[dict[str, list[int]]] = {"nprobe": [1, 2, 4, 8, 12, 16, 24, 32]}

    def __init__(
        self, context: SystemContext, *, nlist: int | None = None, nprobe: int = 16, train_after: int | None = None
    ) -> None:
        self.dim = context.vector_dim()
        self.nlist = nlist
        self.train_after = train_after
        self.nprobe = self.default_nprobe = nprobe
        self._doc_of: dict[int, str] = {}
        self._id_of: dict[str, int] = {}
        self._next_id = 0
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))  # exact until trained
        self._trained = False

    def add(self, docs: Sequence[Document]) -> None:
        """Adds; trains when `train_after` vectors have arrived, or on the first batch (nlist = 4·sqrt(N), at
        least 39 points per list)."""
        ids = np.arange(self._next_id, self._next_id + len(docs), dtype=np.int64)
        self._next_id += len(docs)
        self._doc_of.update(zip(ids.tolist(), (d.id for d in docs)))
        self._id_of.update(zip((d.id for d in docs), ids.tolist()))
        self._index.add_with_ids(stack_unit(docs), ids)
        if not self._trained and self._index.ntotal >= (self.train_after or 1):
            self._train()
        self._set_nprobe()

    def delete(self, doc_ids: Sequence[str]) -> None:
        gone = np.asarray([self._id_of.pop(doc_id) for doc_id in doc_ids if doc_id in self._id_of], dtype=np.int64)
        self._index.remove_ids(faiss.IDSelectorBatch(gone))
        for internal in gone.tolist():
            del self._doc_of[internal]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        vector = vector_of(query)[None, :].astype(np.float32)
        scores, rows = self._index.search(vector, k)
        if self._trained and (rows[0] < 0).any() and self._index.ntotal > (rows[0] >= 0).sum():
            self._index.nprobe = self._index.nlist  # the probed lists held fewer than k
            scores, rows = self._index.search(vector, k)
            self._set_nprobe()
        return [SearchHit(self._doc_of[r], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]

    def set_query_params(self, **params: Any) -> None:
        """`nprobe`; no arguments restore the default."""
        self.nprobe = int(params.get("nprobe", self.default_nprobe))
        self._set_nprobe()

    def close(self) -> None:
        self._index.reset()

    def _train(self) -> None:
        """Move the vectors held so far from the flat index into IVF lists trained on them."""
        ids = faiss.vector_to_array(self._index.id_map)
        vectors = self._index.index.reconstruct_n(0, self._index.ntotal)
        nlist = self.nlist or max(1, min(round(4 * np.sqrt(len(vectors))), len(vectors) // 39))
        # the factory's index owns its quantizer (no Python-side reference to keep alive)
        ivf = faiss.index_factory(self.dim, f"IVF{nlist},Flat", faiss.METRIC_INNER_PRODUCT)
        ivf.train(vectors)
        ivf.add_with_ids(vectors, ids)
        self._index, self._trained = ivf, True

    def _set_nprobe(self) -> None:
        if self._trained:
            self._index.nprobe = self.nprobe
