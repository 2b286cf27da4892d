"""Concepts: the layer above groups. Groups are sized for search (t(N) cells), so one topic of the
memory spans several of them; a concept gathers the groups whose centroids belong together.

The live groups' centroids are linked by Ward's method and the tree is cut at the largest gap
between successive merge heights, so the number of concepts is read off the data, never given.
Linkage costs O(G²) time and memory, so beyond `limit` groups only the
`limit` largest are linked and every other group joins the concept of its nearest linked centroid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from .clustering import GroupState


@dataclass(frozen=True)
class Concept:
    """One topic of the memory: its groups and how many cells they hold."""

    id: int
    groups: list[int]
    cells: int


def concept_labels(centroids: np.ndarray, sizes: np.ndarray, *, limit: int) -> np.ndarray:
    """The concept (0 … C-1, numbered in row order) of each centroid row."""
    count = len(centroids)
    if count < 3:  # no two merge heights to compare
        return np.arange(count, dtype=np.int64)
    linked = np.sort(np.argsort(-sizes, kind="stable")[:limit])
    tree = linkage(centroids[linked].astype(np.float64), method="ward")
    cut = int(np.argmax(np.diff(tree[:, 2])))  # the largest gap lies above merge `cut`
    labels = np.empty(count, dtype=np.int64)
    labels[linked] = fcluster(tree, len(linked) - cut - 1, criterion="maxclust")
    rest = np.setdiff1d(np.arange(count), linked)
    if len(rest):
        labels[rest] = labels[linked][np.argmax(centroids[rest] @ centroids[linked].T, axis=1)]
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    renumbered: np.ndarray = np.argsort(np.argsort(first))[inverse.reshape(count)]
    return renumbered


def concepts_of(groups: GroupState, *, limit: int, scope: int | None = None) -> list[Concept]:
    """The concepts of the live groups (of `scope`; None: of every scope), numbered in order of their first group
    id."""
    active = groups.active_ids(scope)
    labels = concept_labels(groups.active_centroids(scope), groups.active_sizes(scope), limit=limit)
    members = [active[labels == concept] for concept in range(int(labels.max(initial=-1)) + 1)]
    return [Concept(number, ids.tolist(), int(groups.counts[ids].sum())) for number, ids in enumerate(members)]


def concept_of_group(concepts: list[Concept]) -> dict[int, int]:
    """Group id → the id of the concept that holds it."""
    return {group: concept.id for concept in concepts for group in concept.groups}
