"""Offline k-means (scikit-learn) over all vectors, then the reference's top-groups search.

The best `nprobe` groups are searched, and more groups (in centroid order) when they hold fewer
than k cells, so an answer always has min(k, N) hits.

The same probing as the engine (rank centroids, search the best `nprobe` groups exactly) on
clusters fitted in one offline pass: it separates what online clustering costs from what
group-first search costs. Default k = round(sqrt(N)).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.cluster import KMeans

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .vectors import similarities, stack_unit, top_k, vector_of


class KMeansGroups:
    name = "kmeans"
    capabilities = frozenset({"vectors", "tunable", "groups"})
    query_params: ClassVar[dict[str, list[int]]] = {"nprobe": [1, 2, 3, 5, 8, 13]}

    def __init__(self, context: SystemContext, *, n_clusters: int | None = None, nprobe: int = 3, seed: int = 0):
        self.n_clusters = n_clusters
        self.nprobe = self.default_nprobe = nprobe
        self.seed = seed
        self._docs: list[Document] = []

    def add(self, docs: Sequence[Document]) -> None:
        """Offline: every add refits on all documents seen so far."""
        self._docs += list(docs)
        matrix = stack_unit(self._docs)
        clusters = self.n_clusters or max(1, round(np.sqrt(len(matrix))))
        model = KMeans(n_clusters=min(clusters, len(matrix)), n_init=1, max_iter=50, random_state=self.seed)
        labels = model.fit_predict(matrix)
        centroids = model.cluster_centers_
        self.centroids = (centroids / np.linalg.norm(centroids, axis=1, keepdims=True)).astype(np.float32)
        self.labels = labels
        self._ids = np.asarray([d.id for d in self._docs])
        self._blocks = [(np.flatnonzero(labels == c), matrix[labels == c]) for c in range(len(centroids))]
        self._sizes = np.asarray([len(rows) for rows, _ in self._blocks])

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        if not self._docs:
            return []
        similarity = similarities(self.centroids, vector_of(query))
        groups = top_k(similarity, self.nprobe)
        if self._sizes[groups].sum() < min(k, len(self._ids)):  # too few cells for k hits: probe further
            ranked = top_k(similarity, len(similarity))
            groups = ranked[: int(np.searchsorted(np.cumsum(self._sizes[ranked]), min(k, len(self._ids)))) + 1]
        rows = np.concatenate([self._blocks[g][0] for g in groups])
        vector = vector_of(query)
        scores = np.concatenate([similarities(self._blocks[g][1], vector) for g in groups])
        best = top_k(scores, k)
        return [SearchHit(str(self._ids[rows[i]]), float(scores[i])) for i in best.tolist()]

    def set_query_params(self, **params: Any) -> None:
        """`nprobe`; no arguments restore the default."""
        self.nprobe = int(params.get("nprobe", self.default_nprobe))

    def group_labels(self, doc_ids: Sequence[str]) -> list[int]:
        label_of = dict(zip(self._ids.tolist(), self.labels.tolist()))
        return [label_of[doc_id] for doc_id in doc_ids]

    def describe(self) -> dict[str, Any]:
        return {"groups": len(self.centroids)}

    def close(self) -> None:
        self._docs.clear()
