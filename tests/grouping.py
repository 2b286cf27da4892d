"""How well a memory's groups fit its cells, read through the public API (for the grouping tests)."""

import numpy as np

from reference import CellularMemory


def group_fit(mem: CellularMemory, ids: list[str], vectors: np.ndarray) -> tuple[float, float]:
    """The mean cosine of each cell to its group's centroid, and the share of cells whose nearest centroid is
    another group's (centroids of the groups `get_many` reports)."""
    _, own = np.unique([record.group_id for record in mem.get_many(ids)], return_inverse=True)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sums = np.zeros((own.max() + 1, vectors.shape[1]))
    np.add.at(sums, own, unit)
    centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    fit = float(np.mean(np.sum(unit * centroids[own], axis=1)))
    return fit, float(np.mean(np.argmax(unit @ centroids.T, axis=1) != own))
