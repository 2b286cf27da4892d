"""Both group-index backends answer like an exact search over the group."""

import numpy as np
import pytest
from numba import njit

from harness.data.generators.vectors import clustered_unit_vectors
from reference.indexes.vectors import ChromaGroupIndex, NumpyGroupIndex, ProbeLimits, top_k
from reference.kernels import intrinsics
from reference.kernels.probe import descending
from reference.kernels.quantize import code_dots, quantized


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


def test_the_arena_keeps_every_vector_through_growth_moves_removals_and_rebuilds():
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(8000, 8)).astype(np.float32)
    index, members, next_row, arenas = NumpyGroupIndex(8), {}, 0, set()
    for step in range(300):
        if step % 3 == 2 and any(members.values()):  # remove a random share of one group (sometimes all of it)
            group = int(rng.choice([g for g, rows in members.items() if rows]))
            rows = sorted(members[group])
            gone = rows if step % 5 == 0 else list(rng.choice(rows, size=max(1, len(rows) // 3), replace=False))
            index.remove(np.full(len(gone), group), np.asarray(gone))
            members[group] -= set(int(r) for r in gone)
        else:  # a batch spread over a few of 40 groups, rows new
            size = int(rng.integers(1, 40))
            groups, rows = rng.integers(0, 40, size=size), np.arange(next_row, next_row + size)
            next_row += size
            index.add(groups, rows, vectors[rows])
            for group, row in zip(groups.tolist(), rows.tolist()):
                members.setdefault(group, set()).add(row)
        arenas.add(id(index.codes))
        for group, rows in members.items():
            assert set(index.members(group).tolist()) == rows
        live = np.asarray(sorted(set().union(*members.values())), dtype=np.int64)
        np.testing.assert_array_equal(index.vectors_of(live), vectors[live])
        slots = index._slot_of[live]  # each cell's codes moved with it: they still decode to its vector
        decoded = index.codes[slots] * index.scales[slots, None]
        assert (np.abs(decoded - vectors[live]) <= index.scales[slots, None] / 2 + 1e-6).all()
    scanned_rows, scores = index.scan(np.flatnonzero(index.sizes), vectors[0])
    assert sorted(scanned_rows.tolist()) == live.tolist()
    np.testing.assert_allclose(scores, vectors[scanned_rows] @ vectors[0], rtol=1e-5, atol=1e-5)
    assert len(arenas) > 2  # the arena was rebuilt along the way


def test_codes_map_each_rows_largest_magnitude_to_127_and_round_the_rest_to_nearest():
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    vectors[1, 7] = -9.0  # the largest magnitude negative
    vectors[2] = 0.0  # no direction: codes 0, scale 0
    vectors[3, :5] = [0.5, -0.5, 1.5, 2.5, 127.0]  # halves round to even
    codes, scales = quantized(vectors)
    top = np.abs(vectors).max(axis=1)
    np.testing.assert_array_equal(scales, top / np.float32(127))
    inverse = np.divide(np.float32(127), top, out=np.zeros_like(top), where=top > 0)
    np.testing.assert_array_equal(codes, np.rint(vectors * inverse[:, None]).astype(np.int8))
    assert codes[1, 7] == -127 and not codes[2].any() and scales[2] == 0


def code_scores(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each vector's score against the query by their int8 codes, in the kernel's float32 order of products."""
    codes, scales = quantized(vectors)
    query_codes, query_scale = quantized(query[None, :])
    return (codes.astype(np.int32) @ query_codes[0].astype(np.int32)).astype(np.float32) * scales * query_scale[0]


def _probe_by_the_rule(groups, centroids, members, vectors, query, k, floor, budget, margin):
    """The probing rule, step by step in Python: groups in the order of their centroids' code scores until
    `budget` cells are read; past `floor` cells, stop at the first group scoring below the k-th best code score
    so far minus `margin`."""
    read: list[int] = []
    centroid_scores = code_scores(centroids, query)
    for position in np.argsort(-centroid_scores, kind="stable").tolist():
        if len(read) >= budget:
            break
        scores = np.sort(code_scores(vectors[read], query))[::-1]
        kth = scores[k - 1] if len(scores) >= k else -np.inf
        if len(read) >= floor and centroid_scores[position] < kth - margin:
            break
        read += members[groups[position]]
    return read


@pytest.mark.parametrize("dim", [16, 64])  # 64: the VNNI product where the CPU has it (`intrinsics.vnni_usable`)
@pytest.mark.parametrize(
    ("floor", "budget", "margin"), [(0, 10**6, 10.0), (0, 120, 10.0), (30, 10**6, 0.05), (0, 10**6, 0.0)]
)
def test_probe_reads_the_groups_the_rule_names_and_keeps_the_best_it_read(floor, budget, margin, dim):
    data = clustered_unit_vectors(600, dim=dim, clusters=12, spread=1.0, queries=10, seed=4)
    vectors, labels = data.vectors, np.asarray(data.labels)
    index = NumpyGroupIndex(dim)
    index.add(labels + 5, np.arange(600), vectors)  # group ids need not start at 0
    groups = np.unique(labels) + 5
    members = {int(g): np.flatnonzero(labels + 5 == g).tolist() for g in groups}
    centroids = np.stack([vectors[members[int(g)]].mean(axis=0) for g in groups]).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    for query in data.queries[:10]:
        read = _probe_by_the_rule(groups, centroids, members, vectors, query, 5, floor, budget, margin)
        assert read
        codes = quantized(centroids)
        everything = index.probe(groups, codes, query, 5, ProbeLimits(600, floor, budget, margin))
        assert sorted(everything.rows.tolist()) == sorted(read)  # depth 600 rescores and keeps every cell read
        rows, scores, _ = index.probe(groups, codes, query, 5, ProbeLimits(7, floor, budget, margin))
        rescored = np.asarray(read)[np.argsort(-code_scores(vectors[read], query), kind="stable")[:12]]
        expected = rescored[np.argsort(-(vectors[rescored] @ query), kind="stable")[:7]]
        assert rows.tolist() == expected.tolist()  # the best 7 + 5 by codes, rescored exactly
        np.testing.assert_allclose(scores, vectors[rows] @ query, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not intrinsics.has_vnni(), reason="this CPU has no 256-bit VNNI")
def test_the_vnni_products_are_the_exact_integer_dot_products_of_the_codes():
    rng = np.random.default_rng(5)
    codes = rng.integers(-128, 128, size=(50, 96), dtype=np.int8)
    codes[0], codes[1] = 127, -128  # the extremes, where the flip into unsigned bytes could go wrong
    query = rng.integers(-128, 128, size=96, dtype=np.int8)

    @njit
    def dots(codes: np.ndarray, query: np.ndarray, start: int, end: int, flipped: bool) -> np.ndarray:
        out = np.empty(end - start, np.int32)
        if flipped:
            code_dots(codes, start, end, 0, 3, query, out, 96, True)
        else:
            code_dots(codes, start, end, 0, 3, query, out, 96, False)
        return out

    offset = 128 * int(query.astype(np.int64).sum())
    expected = codes.astype(np.int64) @ query.astype(np.int64)
    assert (dots(codes, query, 0, 50, True) - offset).tolist() == expected.tolist()
    assert (dots(codes, query, 7, 31, True) - offset).tolist() == expected[7:31].tolist()  # a group's rows
    assert dots(codes, query, 7, 31, False).tolist() == expected[7:31].tolist()  # the portable loop: the same


def _all_descending(scores: np.ndarray) -> list[int]:
    return descending(scores, np.ones(len(scores), np.int64), len(scores)).tolist()


def test_descending_ranks_highest_first_and_keeps_the_order_of_scores_within_one_step():
    rng = np.random.default_rng(8)
    scores = rng.permutation(np.linspace(-0.4, 0.9, 1000)).astype(np.float32)  # 1.3e-3 apart: far over a step
    assert _all_descending(scores) == np.argsort(-scores, kind="stable").tolist()
    tied = np.array([0.5, 0.2, 0.5, 0.5 - 1e-9, 0.9, 0.2], dtype=np.float32)
    assert _all_descending(tied) == [4, 0, 2, 3, 1, 5]
    for few in ([], [0.3], [0.3, 0.3, 0.3]):
        assert _all_descending(np.asarray(few, dtype=np.float32)) == list(range(len(few)))
    near = np.array([0.1, 0.1 + 1e-7, 0.8], dtype=np.float32)  # within one step (1.07e-5): taken as equal
    assert _all_descending(near) == [2, 0, 1]


@pytest.mark.parametrize("count", [5, 400])  # positions few enough for the insertion sort, and many
def test_descending_stops_where_the_sizes_reach_the_budget_in_the_full_order(count):
    rng = np.random.default_rng(9)
    scores = np.round(rng.standard_normal(count), 1).astype(np.float32)  # ties, kept in the order of positions
    sizes = rng.integers(1, 200, count)
    full = _all_descending(scores)
    for budget in [0, 1, *rng.integers(2, sizes.sum(), 20).tolist(), int(sizes.sum()), 10**9]:
        reached = np.cumsum(sizes[full])
        expected = full[: min(count, int(np.searchsorted(reached, budget)) + 1)] if budget > 0 else []
        assert descending(scores, sizes, budget).tolist() == expected


@pytest.mark.parametrize(("near", "rescored"), [(0.0, 7), (1.0, 12)])
def test_probe_rescores_only_the_cells_whose_codes_may_reach_the_best_depth(near, rescored):
    """Seven cells near the query and five others: scored far below (`near` 0) their codes rule them out, so
    only seven float32 vectors are read; as near as the seven (`near` 1), all twelve are rescored."""
    rng = np.random.default_rng(3)
    query = rng.standard_normal(16).astype(np.float32)
    query /= np.linalg.norm(query)
    close = query + 0.05 * rng.standard_normal((7, 16))
    other = near * query + (1 - near + 0.05) * rng.standard_normal((5, 16))
    vectors = np.concatenate([close, other]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = NumpyGroupIndex(16)
    index.add(np.zeros(12, dtype=np.int64), np.arange(12), vectors)
    groups = np.zeros(1, dtype=np.int64)
    found = index.probe(groups, quantized(query[None, :]), query, 5, ProbeLimits(7, 0, 100, 0.0))
    assert found.rows.tolist() == np.argsort(-(vectors @ query), kind="stable")[:7].tolist()
    assert found.bytes_read == (1 + 12) * (16 + 4) + rescored * 16 * 4
