"""Per-group indexes of cell vectors: the second search stage runs over one group at a time.

`NumpyGroupIndex` keeps each group's vectors in one contiguous float32 block (IVF-style);
`ChromaGroupIndex` keeps one ephemeral Chroma collection per group (`{ns}_grp_{id}`), rebuilt
from the master store each session. Both answer `search(group, query, k)` with (rows, cosines).
"""

from __future__ import annotations

import uuid
from typing import Protocol

import numpy as np

from .chroma import ephemeral_client, guarded


class GroupIndex(Protocol):
    io_bound: bool
    """True when a per-group search waits on I/O, so searching groups on threads always pays."""

    def add(self, groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray) -> None: ...
    def remove(self, groups: np.ndarray, rows: np.ndarray) -> None: ...
    def search(self, group: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...
    def close(self) -> None: ...


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first."""
    if k < len(scores):
        positions = np.argpartition(-scores, k - 1)[:k]
        return positions[np.argsort(-scores[positions], kind="stable")]
    return np.argsort(-scores, kind="stable")


class _Block:
    """One group's vectors, contiguous, with swap-remove."""

    def __init__(self, dim: int) -> None:
        self.vectors = np.zeros((8, dim), dtype=np.float32)
        self.rows = np.zeros(8, dtype=np.int64)
        self.size = 0
        self.slot_of: dict[int, int] = {}

    def extend(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        needed = self.size + len(rows)
        if needed > len(self.rows):
            capacity = max(needed, 2 * len(self.rows))
            grown = np.zeros((capacity, self.vectors.shape[1]), dtype=np.float32)
            grown[: self.size] = self.vectors[: self.size]
            self.vectors = grown
            self.rows = np.concatenate([self.rows[: self.size], np.zeros(capacity - self.size, dtype=np.int64)])
        self.vectors[self.size : needed] = vectors
        self.rows[self.size : needed] = rows
        for offset, row in enumerate(rows.tolist()):
            self.slot_of[row] = self.size + offset
        self.size = needed

    def discard(self, row: int) -> None:
        slot, last = self.slot_of.pop(row), self.size - 1
        if slot != last:
            moved = int(self.rows[last])
            self.vectors[slot] = self.vectors[last]
            self.rows[slot] = moved
            self.slot_of[moved] = slot
        self.size = last


class NumpyGroupIndex:
    """Exact search inside each group over a contiguous block (the default backend)."""

    io_bound = False

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._blocks: dict[int, _Block] = {}

    def add(self, groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray) -> None:
        order = np.argsort(groups, kind="stable")
        boundaries = np.flatnonzero(np.diff(groups[order])) + 1
        for part in np.split(order, boundaries):
            group = int(groups[part[0]])
            self._blocks.setdefault(group, _Block(self.dim)).extend(rows[part], vectors[part])

    def remove(self, groups: np.ndarray, rows: np.ndarray) -> None:
        for group, row in zip(groups.tolist(), rows.tolist()):
            block = self._blocks[group]
            block.discard(row)
            if block.size == 0:
                del self._blocks[group]

    def search(self, group: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        block = self._blocks.get(group)
        if block is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = block.vectors[: block.size] @ query
        best = top_k(scores, k)
        return block.rows[best], scores[best]

    def close(self) -> None:
        self._blocks.clear()


class ChromaGroupIndex:
    """One ephemeral Chroma collection per group, named `{namespace}_grp_{id}` (plus a session tag)."""

    io_bound = True

    def __init__(self, namespace: str) -> None:
        self._client = ephemeral_client()
        self._prefix = f"{namespace}_{uuid.uuid4().hex[:8]}_grp_"
        self._collections: dict[int, object] = {}

    def _collection(self, group: int):
        if group not in self._collections:
            self._collections[group] = guarded(
                "creating a group collection",
                self._client.create_collection,
                f"{self._prefix}{group}",
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
            )
        return self._collections[group]

    def add(self, groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray) -> None:
        for group in np.unique(groups).tolist():
            mask = groups == group
            ids = [str(row) for row in rows[mask].tolist()]
            guarded("adding to a group collection", self._collection(group).add, ids=ids, embeddings=vectors[mask])

    def remove(self, groups: np.ndarray, rows: np.ndarray) -> None:
        for group in np.unique(groups).tolist():
            ids = [str(row) for row in rows[groups == group].tolist()]
            guarded("deleting from a group collection", self._collection(group).delete, ids=ids)

    def search(self, group: int, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        collection = self._collections.get(group)
        count = guarded("counting a group", collection.count) if collection is not None else 0
        if count == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        result = guarded(
            "querying a group collection",
            collection.query,
            query_embeddings=query[None, :],
            n_results=min(k, count),
            include=["distances"],
        )
        rows = np.asarray([int(i) for i in result["ids"][0]], dtype=np.int64)
        return rows, 1.0 - np.asarray(result["distances"][0], dtype=np.float32)

    def close(self) -> None:
        for group in list(self._collections):
            guarded("dropping a group collection", self._client.delete_collection, f"{self._prefix}{group}")
        self._collections.clear()
