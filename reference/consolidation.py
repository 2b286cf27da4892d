"""Sleep consolidation: greedy merging of groups whose centroids are too similar.

The plan is computed on centroids only (O(G²) similarities, never on cells): repeatedly take
the most similar pair of live groups above `merge_threshold`, let the larger group absorb the
smaller (the lower id on a tie), recompute the merged centroid as the true mean of both, and
refresh its similarities, so chains A~B~C resolve against up-to-date centroids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .clustering import GroupState
from .judges.base import Conflict


@dataclass(frozen=True)
class Merge:
    kept: int
    absorbed: int
    similarity: float


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


def plan_merges(state: GroupState, threshold: float) -> list[Merge]:
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
    merges = []
    while True:
        flat = int(np.argmax(similarity))
        i, j = divmod(flat, len(ids))
        best = float(similarity[i, j])
        if best <= threshold:
            return merges
        keep, drop = (i, j) if (counts[i], -ids[i]) >= (counts[j], -ids[j]) else (j, i)
        merges.append(Merge(int(ids[keep]), int(ids[drop]), best))
        sums[keep] += sums[drop]
        counts[keep] += counts[drop]
        units[keep] = sums[keep] / np.linalg.norm(sums[keep])
        alive[drop] = False
        similarity[drop, :] = similarity[:, drop] = -np.inf
        refreshed = units @ units[keep]
        refreshed[~alive] = -np.inf
        refreshed[keep] = -np.inf
        similarity[keep, :] = similarity[:, keep] = refreshed


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
