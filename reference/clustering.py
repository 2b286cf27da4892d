"""Online leader clustering: each cell joins its most similar group or founds a new one.

A group's centroid is the normalised true mean of its members, kept as a running float64 sum.
`LeaderClustering.assign` is pure: it returns the group of each vector together with the new
state, so the caller commits both only after everything else in the write has succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class GroupState:
    """Per-group running sums and member counts; a group with count 0 is empty (deleted or merged)."""

    sums: np.ndarray
    counts: np.ndarray
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def empty(cls, dim: int) -> GroupState:
        return cls(np.zeros((0, dim), dtype=np.float64), np.zeros(0, dtype=np.int64))

    @property
    def n_slots(self) -> int:
        """Groups ever created (group ids are 0 … n_slots-1)."""
        return len(self.counts)

    @property
    def n_active(self) -> int:
        return int(np.count_nonzero(self.counts))

    def active_ids(self) -> np.ndarray:
        """Ids of the non-empty groups (cached until the state changes)."""
        if "active" not in self._cache:
            self._cache["active"] = np.flatnonzero(self.counts)
        return self._cache["active"]

    def centroids(self) -> np.ndarray:
        """Unit-length float32 centroids, one row per slot; empty groups are zero rows."""
        if "centroids" not in self._cache:
            norms = np.linalg.norm(self.sums, axis=1, keepdims=True)
            self._cache["centroids"] = (self.sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return self._cache["centroids"]

    def active_centroids(self) -> np.ndarray:
        """Centroids of the non-empty groups, row i for group `active_ids()[i]` (contiguous, cached)."""
        if "active_centroids" not in self._cache:
            self._cache["active_centroids"] = np.ascontiguousarray(self.centroids()[self.active_ids()])
        return self._cache["active_centroids"]

    def copy(self) -> GroupState:
        return GroupState(self.sums.copy(), self.counts.copy())

    def add_members(self, group_ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors to the groups' sums (groups must exist)."""
        groups, partial = _sum_by_group(group_ids, vectors)
        self.sums[groups] += partial
        self.counts += np.bincount(group_ids, minlength=self.n_slots)
        self._cache.clear()

    def remove_members(self, group_ids: np.ndarray, vectors: np.ndarray) -> None:
        """Subtract vectors from their groups; a group left empty gets an exact zero sum."""
        groups, partial = _sum_by_group(group_ids, vectors)
        self.sums[groups] -= partial
        self.counts -= np.bincount(group_ids, minlength=self.n_slots)
        self.sums[self.counts == 0] = 0.0
        self._cache.clear()

    def new_slots(self, count: int) -> None:
        """Append `count` empty groups."""
        dim = self.sums.shape[1]
        self.sums = np.vstack([self.sums, np.zeros((count, dim))])
        self.counts = np.concatenate([self.counts, np.zeros(count, dtype=np.int64)])
        self._cache.clear()


def _sum_by_group(group_ids: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct groups and, for each, the float64 sum of its vectors."""
    order = np.argsort(group_ids, kind="stable")
    sorted_ids = group_ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    return sorted_ids[starts], np.add.reduceat(vectors[order].astype(np.float64), starts, axis=0)


class LeaderClustering:
    """Assigns unit vectors to groups by the leader rule with a bounded number of groups."""

    def __init__(self, *, join_threshold: float, max_groups: int, chunk: int) -> None:
        self.join_threshold = join_threshold
        self.max_groups = max_groups
        self.chunk = chunk

    def assign(self, state: GroupState, vectors: np.ndarray) -> tuple[np.ndarray, GroupState]:
        """Groups for `vectors` (unit rows, in order) and the state after adding them."""
        state = state.copy()
        groups = np.empty(len(vectors), dtype=np.int64)
        for start in range(0, len(vectors), self.chunk):
            block = vectors[start : start + self.chunk]
            groups[start : start + len(block)] = self._assign_chunk(state, block)
        return groups, state

    def _assign_chunk(self, state: GroupState, block: np.ndarray) -> np.ndarray:
        """Vectorised against the chunk-start centroids; only cells that found no group loop."""
        existing = state.active_ids()
        if len(existing):
            similarity = block @ state.active_centroids().T
            best_column = similarity.argmax(axis=1)
            best_similarity = similarity[np.arange(len(block)), best_column]
            groups = existing[best_column]
        else:
            best_similarity = np.full(len(block), -np.inf)
            groups = np.full(len(block), -1, dtype=np.int64)
        loners = np.flatnonzero(best_similarity <= self.join_threshold)
        if len(loners):
            self._place_loners(state, block, loners, groups, best_similarity)
        state.add_members(groups, block)
        return groups

    def _place_loners(
        self,
        state: GroupState,
        block: np.ndarray,
        loners: np.ndarray,
        groups: np.ndarray,
        best_similarity: np.ndarray,
    ) -> None:
        """Leader rule inside the chunk, one founder at a time, each step vectorised.

        The first unplaced loner founds a group and every later loner closer to it than the
        threshold joins it. At the bound, the remaining loners keep their nearest group.
        """
        room = self.max_groups - state.n_active
        pending = loners
        founders: list[int] = []
        while len(pending) and len(founders) < room:
            founder, rest = pending[0], pending[1:]
            groups[founder] = state.n_slots + len(founders)
            joins = block[rest] @ block[founder] > self.join_threshold
            groups[rest[joins]] = groups[founder]
            founders.append(founder)
            pending = rest[~joins]
        if len(pending) and founders:  # at the bound: the nearest of the existing and the new groups
            similarity = block[pending] @ block[founders].T
            nearest = similarity.argmax(axis=1)
            closer = similarity[np.arange(len(pending)), nearest] > best_similarity[pending]
            groups[pending[closer]] = state.n_slots + nearest[closer]
        if founders:
            state.new_slots(len(founders))
