"""The batched vector search: one compiled probe for a batch's vector queries finds what one search per query
finds (the same hits, scores, access counts and counters), whatever else the batch holds, and from threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from reference import CellularMemory
from reference.encoders import MockEncoder
from reference.indexes.vectors import NumpyGroupIndex, ProbeLimits
from reference.kernels.quantize import quantized

DIM = 64
CELLS = 3000  # enough that the compiled probe answers, not a flat search


def built(data, **kwargs) -> CellularMemory:
    mem = CellularMemory(encoder=MockEncoder(DIM), clock=lambda: 1.7e9, **kwargs)
    texts = [f"note {i} about {['cats', 'markets', 'Maria Lopez'][i % 3]}" for i in range(CELLS)]
    metadata = [{"parity": i % 2} for i in range(CELLS)]
    scopes = ["user:a" if i % 4 else "user:b" for i in range(CELLS)]
    mem.add(texts, vectors=data.vectors, metadata=metadata, scope=scopes, ids=[str(i) for i in range(CELLS)])
    return mem


@pytest.fixture(scope="module")
def data():
    return clustered_unit_vectors(CELLS, dim=DIM, clusters=20, queries=40, seed=3)


@pytest.fixture
def twins(data):
    """Two memories of the same cells: one searched in batches, the other one query at a time."""
    with built(data) as batched, built(data) as single:
        yield batched, single


def observed(mem: CellularMemory) -> tuple[list[int], int, int, int]:
    state = mem._state
    return state.table.access.tolist(), state.counters.searches, state.counters.flat, state.counters.bytes_read


def test_the_compiled_probe_answers_these_searches(twins):
    mem = twins[0]
    route = mem._search._route(mem._state, 10, 10, None)
    assert route.centroid_codes is not None and not route.flat


def test_probe_many_finds_for_each_query_what_probe_finds_alone(data):
    index = NumpyGroupIndex(DIM)
    labels = np.asarray(data.labels)
    index.add(labels, np.arange(CELLS), data.vectors)
    groups = np.unique(labels)
    centroids = np.stack([data.vectors[labels == g].mean(axis=0) for g in groups]).astype(np.float32)
    codes = quantized(centroids / np.linalg.norm(centroids, axis=1, keepdims=True))
    limits = ProbeLimits(12, 50, 900, 0.05)
    many = index.probe_many(groups, codes, np.ascontiguousarray(data.queries), 5, limits)
    alone = [index.probe(groups, codes, query, 5, limits) for query in data.queries]
    starts = [0, *many.ends.tolist()[:-1]]
    for found, start, end in zip(alone, starts, many.ends.tolist()):
        assert many.rows[start:end].tolist() == found.rows.tolist()
        assert many.scores[start:end].tobytes() == found.scores.tobytes()
    assert many.bytes_read == sum(found.bytes_read for found in alone)


@pytest.mark.parametrize("mode", ["similarity", "memory"])
def test_a_batch_of_vectors_finds_what_one_search_per_vector_finds(twins, data, mode):
    batched, single = twins
    queries = list(data.queries)
    got = batched.search_batch(queries, k=7, mode=mode)
    expected = [single.search(query, k=7, mode=mode) for query in queries]
    assert got == expected  # ids, texts, scores, groups and metadata
    assert observed(batched) == observed(single)


def test_a_mixed_batch_finds_what_one_search_per_query_finds(twins, data):
    """Texts (entities, lexical fusion), vectors as float32, float64 and lists, in one batch."""
    batched, single = twins
    queries = [
        data.queries[0],
        "Maria Lopez and the markets",
        data.queries[1].astype(np.float64),
        data.queries[2].tolist(),
        "cats",
        data.queries[3],
    ]
    got = batched.search_batch(queries, k=5)
    assert got == [single.search(query, k=5) for query in queries]
    assert observed(batched) == observed(single)


@pytest.mark.parametrize(
    "within", [{"scope": "user:a"}, {"scope": "user:b"}, {"where": {"parity": 1}}, {"since": 0.0}, {"scope": "nobody"}]
)
def test_a_restricted_batch_finds_what_one_restricted_search_per_query_finds(twins, data, within):
    batched, single = twins
    queries = list(data.queries[:10])
    got = batched.search_batch(queries, k=6, **within)
    assert got == [single.search(query, k=6, **within) for query in queries]
    assert observed(batched) == observed(single)


def test_batches_from_two_threads_find_what_one_thread_finds(twins, data):
    batched, single = twins
    queries = list(data.queries)
    expected = single.search_batch(queries, k=10)
    found: dict[int, list] = {}
    start = threading.Barrier(2)

    def work(i: int) -> None:
        start.wait()
        found[i] = [batched.search_batch(queries, k=10) for _ in range(5)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(each == expected for i in range(2) for each in found[i])
    assert batched._state.table.access.sum() == 10 * single._state.table.access.sum()  # no read lost
