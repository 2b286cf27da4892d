"""The grouping steps ingest and sleep run: sums of vectors by group, centroids from those sums, 2-means splits."""

from __future__ import annotations

import numpy as np

from .jit import compiled, dot, dots


@compiled
def add_by_group(sums: np.ndarray, group_ids: np.ndarray, vectors: np.ndarray, sign: float) -> None:
    """`sums[g] += sign · v` for every row v of `vectors` and its group g, in place, in float64. One pass
    (a sparse one-hot product, the NumPy way, first converted the rows to float64)."""
    for i in range(len(group_ids)):
        group = group_ids[i]
        for j in range(vectors.shape[1]):
            sums[group, j] += sign * vectors[i, j]


@compiled
def centroids_from_sums(sums: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """`sums[ids]` scaled to unit length, as float32 (a zero row stays zero): the centroids in one pass."""
    out = np.zeros((len(ids), sums.shape[1]), np.float32)
    for i in range(len(ids)):
        norm = np.sqrt(np.sum(sums[ids[i]] * sums[ids[i]]))
        if norm > 0:
            for j in range(sums.shape[1]):
                out[i, j] = sums[ids[i], j] / norm
    return out


@compiled
def two_means(vectors: np.ndarray, iterations: int) -> np.ndarray:
    """A 2-means split of unit rows; True marks the second part. A row goes to the mean it has the larger
    dot product with (the means are not normalised: normalising them lowered the recall of real text
    after sleep). Seeded with the row farthest from the mean and the row farthest from that
    one; stops when no row changes part or a part would be empty (then every row is False). Each step
    is one pass: a row's side is the sign of its dot with the difference of the two means, and the
    second part's sum is gathered on the way (BLAS took two calls and a copy a step, and its threads
    stall on a busy machine)."""
    count, dim = vectors.shape
    total = np.zeros(dim, np.float64)
    for i in range(count):
        total += vectors[i]
    first = np.argmin(dots(vectors, total.astype(np.float32), dim))
    second = np.argmin(dots(vectors, vectors[first].copy(), dim))
    direction = vectors[second] - vectors[first]
    part = np.zeros(count, np.bool_)
    step = np.empty(count, np.bool_)
    second_sum = np.empty(dim, np.float64)
    for _ in range(iterations):
        in_second, changed = 0, False
        second_sum[:] = 0.0
        for i in range(count):
            step[i] = dot(vectors, i, direction, dim) > 0
            changed |= step[i] != part[i]
            if step[i]:
                in_second += 1
                second_sum += vectors[i]
        if in_second == 0 or in_second == count or not changed:
            break
        part[:] = step
        direction = (second_sum / in_second - (total - second_sum) / (count - in_second)).astype(np.float32)
    return part
