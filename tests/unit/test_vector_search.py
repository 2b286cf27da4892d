"""One vector's search (`CellularMemory.search` with a float32 vector, similarity mode, no restriction): the compiled
probe answers it alone, in one call from the vector to its candidates, and finds what the general path
(`search_batch`) finds: the same hits, scores, access counts and counters, with ties, deletes, several scopes and a
k past the cells; the vectors it does not take, and the bad ones, go the general way."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from reference import CellularMemory
from reference.common.errors import InvalidInputError
from reference.common.validation import unit_vector
from reference.encoders import MockEncoder
from reference.indexes.vectors import NumpyGroupIndex, Probed, ProbeLimits, probe_vector
from reference.search.queries import hit_list, hits_of
from tests.threads import run_concurrently

DIM = 64
CELLS = 3000  # enough that the compiled probe answers, not a flat search


def observed(mem: CellularMemory) -> tuple[list[int], int, int, int]:
    state = mem._state
    return state.table.access.tolist(), state.counters.searches, state.counters.flat, state.counters.bytes_read


@pytest.fixture(scope="module")
def data():
    return clustered_unit_vectors(CELLS, dim=DIM, clusters=20, queries=30, seed=5)


def built(data) -> CellularMemory:
    """Cells of two scopes, each of the first 200 written twice more under other ids (ties: equal vectors)."""
    vectors = np.concatenate([data.vectors, data.vectors[:200], data.vectors[:200]])
    count = len(vectors)
    mem = CellularMemory(encoder=MockEncoder(DIM), clock=lambda: 1.7e9)
    mem.add(
        [f"note {i}" for i in range(count)],
        vectors=vectors,
        metadata=[{"i": i} for i in range(count)],
        scope=["user:a" if i % 3 else "user:b" for i in range(count)],
        ids=[str(i) for i in range(count)],
    )
    return mem


@pytest.fixture
def twins(data):
    """Two memories of the same cells: one searched by `search`, the other by `search_batch` one query at a time."""
    with built(data) as fast, built(data) as general:
        yield fast, general


def queries(data) -> list[np.ndarray]:
    """Held-out queries, cells' own vectors (each tied with two copies), and a raw (not unit) vector."""
    return [*data.queries, *data.vectors[:5], *data.vectors[190:195], 3.5 * data.queries[0]]


def test_the_compiled_probe_alone_answers_one_vector(twins, data):
    fast, _ = twins
    state = fast._state
    for query in queries(data):
        with state.reading():
            found = fast._search.probed(state, np.asarray(query, dtype=np.float32), 10)
        assert found is not None and len(found.rows) == 10


@pytest.mark.parametrize("k", [1, 10, 37])
def test_one_vector_finds_what_the_general_path_finds(twins, data, k):
    fast, general = twins
    for query in queries(data):
        vector = np.asarray(query, dtype=np.float32)
        assert fast.search(vector, k=k) == general.search_batch([vector], k=k)[0]
    assert observed(fast) == observed(general)


def test_ties_deletes_and_a_k_past_the_cells_find_what_the_general_path_finds(twins, data):
    fast, general = twins
    gone = [str(i) for i in range(0, 3400, 7)]
    fast.delete(gone)
    general.delete(gone)
    tied = np.asarray(data.vectors[4], dtype=np.float32)  # cells 4, 3004 and 3204 hold it
    for vector in [tied, *[np.asarray(q, dtype=np.float32) for q in data.queries[:10]]]:
        for k in (3, 10, 5000):
            got = fast.search(vector, k=k)
            assert got == general.search_batch([vector], k=k)[0]
            assert not set(gone) & {hit.id for hit in got}
    general.search_batch([tied], k=3)
    general.search_batch([tied], k=5000)
    tie = fast.search(tied, k=3)
    assert {hit.id for hit in tie} == {"4", "3004", "3204"} and len({hit.score for hit in tie}) == 1
    assert len(fast.search(tied, k=5000)) == 3400 - len(gone)
    assert observed(fast) == observed(general)


def test_a_scope_and_the_vectors_the_probe_does_not_take_go_the_general_way(twins, data):
    fast, general = twins
    query = data.queries[0]
    others = {
        "float64": np.asarray(query, dtype=np.float64),
        "strided": np.repeat(np.asarray(query, dtype=np.float32), 2)[::2],
        "read-only": np.asarray(query, dtype=np.float32).copy(),
        "list": [float(x) for x in query],
    }
    others["read-only"].flags.writeable = False
    for vector in others.values():
        assert fast.search(vector, k=10) == general.search_batch([vector], k=10)[0]
    vector = np.asarray(query, dtype=np.float32)
    scoped = fast.search(vector, k=10, scope="user:b")
    assert scoped == general.search_batch([vector], k=10, scope="user:b")[0]
    assert len(scoped) == 10 and {hit.id for hit in scoped} <= {str(i) for i in range(0, 3400, 3)}
    assert observed(fast) == observed(general)


@pytest.mark.parametrize("bad", [np.zeros(DIM, np.float32), np.full(DIM, np.nan, np.float32), np.ones(DIM + 1)])
def test_a_bad_vector_is_refused_as_the_general_path_refuses_it(twins, bad):
    fast, _ = twins
    before = observed(fast)
    with pytest.raises(InvalidInputError):
        fast.search(bad, k=10)
    with pytest.raises(InvalidInputError):
        fast.search(np.ones(DIM, np.float32), k=0)
    assert observed(fast) == before


def probed_alone(mem: CellularMemory, query: np.ndarray, k: int, limits: ProbeLimits | None = None) -> Probed:
    """`probe_vector` of `query` (as float32) on the memory's route for k, within its limits or these (under the read
    lock)."""
    state = mem._state
    route = mem._search._route(state, k, k, None)
    assert route.centroid_codes is not None and isinstance(state.index, NumpyGroupIndex)
    vector = np.asarray(query, np.float32)
    probe = state.index.vector_probe(route.groups, route.centroid_codes, *counted_in(state))
    found = probe_vector(probe, vector, k, limits or route.limits)
    assert found is not None
    return found


def counted_in(state) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrays the one-vector probe takes after its limits: the table's addresses, its lists' item arrays and
    its access counts, and the search tallies."""
    return state.table.addresses, state.table.item_arrays, state.table.access, state.counters.tallies


@pytest.mark.parametrize("short", [False, True])
def test_the_one_vector_probe_finds_what_the_batch_probe_finds(twins, data, short):
    """A full buffer taken whole (the route's limits) and one cut to what was found (one group read, fewer cells than
    the depth): the same rows, scores and bytes as the batch probe's of the unit vector `search_batch` makes."""
    fast, _ = twins
    state = fast._state
    with state.reading():
        route = fast._search._route(state, 10, 10, None)
        assert route.centroid_codes is not None and isinstance(state.index, NumpyGroupIndex)
        limits = route.limits._replace(depth=200, floor=1, budget=1) if short else route.limits
        for query in queries(data):
            one = probed_alone(fast, query, 10, limits)
            batch = state.index.probe(route.groups, route.centroid_codes, unit_vector(query, dim=DIM), 10, limits)
            assert (len(one.rows) < limits.depth) == short
            assert one.rows.tolist() == batch.rows.tolist() and one.scores.tolist() == batch.scores.tolist()
            assert one.bytes_read == batch.bytes_read


def test_the_hits_of_several_queries_are_each_querys_hit_list(twins, data):
    fast, _ = twins
    state = fast._state
    with state.reading():
        found = [probed_alone(fast, query, k) for query, k in zip(data.queries[:3], (1, 10, 37))]
        many = hits_of(state.table, found)
        assert many == [hit_list(state.table, f.rows, f.scores) for f in found]
    assert [len(hits) for hits in many] == [1, 10, 37]
    assert [hit.id for hit in many[2]] == [str(row) for row in found[2].rows.tolist()]


def test_the_probe_finds_the_same_whatever_addresses_it_prefetches(twins, data):
    """The addresses the probe prefetches its hits' objects and list items at change nothing it finds: null, wild
    and unmapped ones neither fault nor change a row or a score."""
    fast, _ = twins
    state = fast._state
    route = fast._search._route(state, 10, 10, None)
    assert route.centroid_codes is not None and isinstance(state.index, NumpyGroupIndex)
    size = len(state.table.addresses)
    wild = np.random.default_rng(3).integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (size + 1, 2))
    prefetched = [
        (state.table.addresses, state.table.item_arrays),
        (np.zeros((size, 2), np.int64), np.zeros(3, np.int64)),
        (wild[:size], np.concatenate([wild[size], wild[size, :1]])),
    ]
    for query in queries(data):
        vector = np.asarray(query, np.float32)
        found = [
            probe_vector(
                state.index.vector_probe(route.groups, route.centroid_codes, *addresses, *counted_in(state)[2:]),
                vector,
                10,
                route.limits,
            )
            for addresses in prefetched
        ]
        assert all(f is not None for f in found)
        assert all(np.array_equal(f.rows, found[0].rows) and np.array_equal(f.scores, found[0].scores) for f in found)


def test_searches_at_once_lose_no_count(twins, data):
    """Two threads search the same vector at once, their probes counting without the GIL (and a batch search's
    reads counted from Python meanwhile): every search, byte and read of a cell is counted."""
    fast, _ = twins
    vector = np.asarray(data.queries[0], np.float32)
    hits = fast.search(vector, k=10)
    rows = fast._state.rows_of([hit.id for hit in hits])
    before = observed(fast)
    rounds, start = 2000, threading.Barrier(3)

    def searching() -> None:
        start.wait()
        for _ in range(rounds):
            fast.search(vector, k=10)

    def batching() -> None:
        start.wait()
        for _ in range(rounds // 10):
            fast.search_batch([vector] * 10, k=10)

    assert not run_concurrently(searching, searching, batching)
    access, searches, flat, bytes_read = observed(fast)
    added = np.asarray(access) - np.asarray(before[0])
    assert added[rows].tolist() == [3 * rounds] * 10 and added.sum() == 3 * rounds * 10
    assert (searches - before[1], flat - before[2]) == (3 * rounds, 0)
    assert bytes_read - before[3] == 3 * rounds * (before[3] // before[1])  # every search reads the same bytes


def test_a_stored_memory_keeps_the_reads_the_probe_counted(tmp_path, data):
    """With a store, the cells the compiled probe counted are listed for the flush: reopened, their counts hold."""
    vector = np.asarray(data.queries[0], np.float32)
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(DIM)) as mem:
        mem.add([f"note {i}" for i in range(CELLS)], vectors=data.vectors, ids=[str(i) for i in range(CELLS)])
        with mem._state.reading():
            assert mem._search.probed(mem._state, vector, 10) is not None  # the compiled probe answers
        hits = [hit.id for _ in range(3) for hit in mem.search(vector, k=10)]
        counted = {i: mem.get(i).access_count for i in set(hits)}
    assert set(counted.values()) == {4}  # three searches, and the probe's own above
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(DIM)) as mem:
        assert {i: mem.get(i).access_count for i in counted} == counted


def test_a_write_drops_the_routes_so_no_array_it_replaced_stays_alive(data):
    """A route binds the index's arrays: a write that replaces them drops it, so the old arena goes at once, not
    at the next search."""
    with built(data) as mem:
        mem.search(np.asarray(data.queries[0], np.float32), k=10)
        assert mem._state.routes
        arena = weakref.ref(mem._state.index.codes)
        mem.add([f"more {i}" for i in range(CELLS)], vectors=data.vectors, ids=[f"m{i}" for i in range(CELLS)])
        gc.collect()
        assert mem._state.routes == {} and arena() is None
