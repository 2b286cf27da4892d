"""Sleep consolidation: merge groups that are too similar or too small, split what is too large,
and move every cell to its nearest centroid (the repair that online ingest cannot do).

Merges are planned on centroids only (O(G²) similarities, never on cells): repeatedly take the
most similar pair of live groups above `merge_threshold` whose union fits the capacity, let the
larger group absorb the smaller (the lower id on a tie), recompute the merged centroid as the true
mean of both, and refresh its similarities, so chains A~B~C resolve against up-to-date centroids.
Then each fragment (fewer than `fragment` cells), smallest first, joins its most similar group
that it fits in. With adaptive grouping the pass goes on over the cells (`plan_regrouping`):
k-means steps move every cell to its nearest centroid until few move, and groups above the
capacity are split in two (`clustering.split_in_two`) until none is or the group bound is reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..groups.clustering import GroupState, kmeans_steps, split_in_two
from ..judges.base import Conflict


class Merge(NamedTuple):
    """One group absorbed by another (at this centroid cosine)."""

    kept: int
    absorbed: int
    similarity: float


@dataclass(frozen=True)
class GroupSizes:
    """G and the distribution of group sizes at one moment."""

    groups: int
    cells: int
    size_min: int
    size_median: float
    size_max: int
    singletons: int

    @classmethod
    def of(cls, counts: np.ndarray) -> GroupSizes:
        sizes = counts[counts > 0]
        if not len(sizes):
            return cls(0, 0, 0, 0.0, 0, 0)
        return cls(
            len(sizes),
            int(sizes.sum()),
            int(sizes.min()),
            float(np.median(sizes)),
            int(sizes.max()),
            int(np.count_nonzero(sizes == 1)),
        )


@dataclass(frozen=True)
class ConsolidationReport:
    merges: list[Merge]
    groups_before: int
    groups_after: int
    cells_moved: int
    groups_judged: int
    conflicts: list[Conflict] = field(default_factory=list)
    judge_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    splits: int = 0
    sizes_before: GroupSizes | None = None
    sizes_after: GroupSizes | None = None
    ari_before: float | None = None
    """Adjusted Rand index of the groups against labels given to `consolidate(labels=...)`."""
    ari_after: float | None = None
    concepts: int = 0
    """Concepts (topics: groups gathered by `concepts.py`) after the pass."""
    concept_ari: float | None = None
    """ARI of the concepts after the pass against the labels."""


@dataclass(frozen=True)
class Regrouping:
    """A sleep plan over cells: the merges, then the group of every moved row, and how many splits."""

    merges: list[Merge]
    rows: np.ndarray
    groups: np.ndarray
    splits: int

    @classmethod
    def joined(cls, plans: list[Regrouping]) -> Regrouping:
        """One plan doing what each of `plans` (over disjoint cells and groups) does."""
        if not plans:
            return cls([], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0)
        return cls(
            [merge for plan in plans for merge in plan.merges],
            np.concatenate([plan.rows for plan in plans]),
            np.concatenate([plan.groups for plan in plans]),
            sum(plan.splits for plan in plans),
        )


def plan_merges(state: GroupState, threshold: float, *, capacity: int = 2**62, fragment: int = 0) -> list[Merge]:
    """The greedy merge sequence for the live groups of `state` (the state is not changed)."""
    ids = state.active_ids()
    if len(ids) < 2:
        return []
    sums = state.sums[ids].copy()
    counts = state.counts[ids].copy()
    units = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    similarity = units @ units.T
    np.fill_diagonal(similarity, -np.inf)
    alive = np.ones(len(ids), dtype=bool)
    merges: list[Merge] = []

    def merge(i: int, j: int) -> None:
        keep, drop = (i, j) if (counts[i], -ids[i]) >= (counts[j], -ids[j]) else (j, i)
        merges.append(Merge(int(ids[keep]), int(ids[drop]), float(similarity[i, j])))
        sums[keep] += sums[drop]
        counts[keep] += counts[drop]
        units[keep] = sums[keep] / np.linalg.norm(sums[keep])
        alive[drop] = False
        similarity[drop, :] = similarity[:, drop] = -np.inf
        refreshed = units @ units[keep]
        refreshed[~alive] = -np.inf
        refreshed[keep] = -np.inf
        similarity[keep, :] = similarity[:, keep] = refreshed

    while True:
        i, j = divmod(int(np.argmax(similarity)), len(ids))
        if similarity[i, j] <= threshold:
            break
        if counts[i] + counts[j] > capacity:  # too large together: never this pair
            similarity[i, j] = similarity[j, i] = -np.inf
            continue
        merge(i, j)
    for i in np.argsort(counts, kind="stable").tolist():
        if not alive[i] or counts[i] >= fragment:
            continue
        fits = alive & (counts + counts[i] <= capacity)
        fits[i] = False
        if fits.any():
            j = int(np.argmax(np.where(fits, similarity[i], -np.inf)))
            merge(i, j)
    return merges


def plan_regrouping(
    state: GroupState,
    rows: np.ndarray,
    vectors: np.ndarray,
    groups: np.ndarray,
    *,
    threshold: float,
    capacity: int,
    fragment: int,
    bound: int,
    rounds: int,
    settled: float,
    block: int = 8192,
) -> Regrouping:
    """Merges, then up to `rounds` k-means steps over the live cells (fewer once at most a `settled`
    share of them moves), then splits while fewer than `bound` groups exist: the group of each moved row.

    `rows`, `vectors`, `groups` are the live cells; new groups take ids from `state.n_slots` on.
    """
    merges = plan_merges(state, threshold, capacity=capacity, fragment=fragment)
    target = final_groups(merges)
    nearest = np.asarray([target.get(g, g) for g in groups.tolist()], dtype=np.int64) if target else groups.copy()
    after = state.copy()
    merged = np.flatnonzero(nearest != groups)
    after.remove_members(groups[merged], vectors[merged])
    after.add_members(nearest[merged], vectors[merged])
    (nearest,) = kmeans_steps(after, [(vectors, nearest)], rounds=rounds, settled=settled, block=block)
    slot, splits = state.n_slots, 0
    sizes = np.bincount(nearest, minlength=slot)
    queue, active = [int(g) for g in np.flatnonzero(sizes > capacity)], int(np.count_nonzero(sizes))
    while queue and active + splits < bound:
        group = queue.pop()
        members = np.flatnonzero(nearest == group)
        second = split_in_two(vectors[members])
        nearest[members[second]] = slot
        queue += [g for g, part in ((group, ~second), (slot, second)) if part.sum() > capacity]
        slot, splits = slot + 1, splits + 1
    moved = nearest != groups
    return Regrouping(merges, rows[moved], nearest[moved], splits)


def final_groups(merges: list[Merge]) -> dict[int, int]:
    """Where each absorbed group's cells end up once every merge is applied (chains followed)."""
    target: dict[int, int] = {}
    for merge in merges:
        target[merge.absorbed] = merge.kept
    resolved = {}
    for group in target:
        end = group
        while end in target:
            end = target[end]
        resolved[group] = end
    return resolved
