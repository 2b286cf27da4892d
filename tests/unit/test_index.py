"""Both group-index backends answer like an exact search over the group."""

import numpy as np
import pytest

from harness.generators.vectors import clustered_unit_vectors
from reference.index import ChromaGroupIndex, NumpyGroupIndex, top_k


def test_top_k_orders_best_first():
    scores = np.array([0.1, 0.9, 0.5, 0.7])
    assert top_k(scores, 2).tolist() == [1, 3]
    assert top_k(scores, 10).tolist() == [1, 3, 2, 0]


@pytest.mark.parametrize("backend", ["numpy", "chroma"])
def test_group_search_matches_brute_force_after_adds_and_removes(backend):
    vectors = clustered_unit_vectors(300, dim=16, clusters=3, seed=1).vectors
    groups = np.arange(300) % 3
    rows = np.arange(300)
    index = NumpyGroupIndex(16) if backend == "numpy" else ChromaGroupIndex("test", lambda r: vectors[r], capacity=2)
    try:
        index.add(groups, rows, vectors)
        removed = rows[::7]
        index.remove(groups[removed], removed)
        keep = np.setdiff1d(rows[groups == 1], removed)
        query = vectors[5]
        found_rows, scores = index.search(1, query, 5)
        expected = keep[np.argsort(-(vectors[keep] @ query))[:5]]
        assert found_rows.tolist() == expected.tolist()
        np.testing.assert_allclose(scores, vectors[expected] @ query, atol=1e-4)
        assert index.search(99, query, 5)[0].size == 0
    finally:
        index.close()
