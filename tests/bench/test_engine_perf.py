"""Engine performance at 100K clustered vectors (d=384, 100 clusters), vectors given.

Run serially: `tox -e perf` (pytest-benchmark disables itself under xdist). Build and
warm-up stay outside the timed code; recall is asserted, speed is only measured and reported.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time

import numpy as np
import pytest

from harness.measure.metrics import recall_at_k
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.indexes.vectors import similarities
from tests.bench.conftest import N, record, time_queries

ENCODER = MockEncoder(384)  # never called: vectors are given


def build(vectors: np.ndarray, **kwargs) -> CellularMemory:
    mem = CellularMemory(encoder=ENCODER, **kwargs)
    mem.add([f"cell {i}" for i in range(len(vectors))], vectors=vectors, ids=[str(i) for i in range(len(vectors))])
    return mem


def recall_at_10(mem: CellularMemory, queries: np.ndarray, truth: np.ndarray) -> float:
    found = [[h.id for h in mem.search(q, k=10)] for q in queries]
    return recall_at_k(found, [[str(i) for i in row] for row in truth.tolist()], 10)


def cycle(queries: np.ndarray):
    return itertools.cycle(list(queries)).__next__


@pytest.fixture(scope="module")
def numpy_memory(data):
    with build(data.vectors) as mem:
        yield mem


def test_numpy_index_search(benchmark, numpy_memory, data, truth):
    recall = recall_at_10(numpy_memory, data.queries, truth)
    record("numpy_recall_at_10", recall)
    next_query = cycle(data.queries)
    time_queries(benchmark, lambda: numpy_memory.search(next_query(), k=10), rounds=2000, warmup_rounds=50)
    record("numpy_search_s", benchmark.stats.stats.median)
    record("groups", numpy_memory.stats().groups)
    assert recall >= 0.95


def test_brute_force_search(benchmark, data, truth):
    vectors = data.vectors
    next_query = cycle(data.queries)

    def exact(query: np.ndarray) -> np.ndarray:
        scores = similarities(vectors, query)  # the engine's own kernel: a fair baseline
        best = np.argpartition(-scores, 9)[:10]
        return best[np.argsort(-scores[best])]

    time_queries(benchmark, lambda: exact(next_query()), rounds=200, warmup_rounds=5)
    record("brute_force_s", benchmark.stats.stats.median)
    assert all(set(exact(q).tolist()) == set(row.tolist()) for q, row in zip(data.queries[:20], truth[:20]))


def test_chroma_index_search(benchmark, data, truth):
    with build(data.vectors, config=MemoryConfig(group_backend="chroma")) as mem:
        recall = recall_at_10(mem, data.queries[:50], truth[:50])
        record("chroma_recall_at_10", recall)
        next_query = cycle(data.queries)
        time_queries(benchmark, lambda: mem.search(next_query(), k=10), rounds=300, warmup_rounds=10)
        record("chroma_search_s", benchmark.stats.stats.median)
    assert recall >= 0.9


def test_in_memory_ingest(benchmark, data):
    memories: list[CellularMemory] = []

    def fresh():
        memories.append(CellularMemory(encoder=ENCODER))
        return (memories[-1],), {}

    texts = [f"cell {i}" for i in range(N)]
    benchmark.pedantic(lambda mem: mem.add(texts, vectors=data.vectors), setup=fresh, rounds=3)
    record("in_memory_ingest_cells_per_s", N / benchmark.stats.stats.median)
    assert all(len(mem) == N for mem in memories)
    memories[0].check_invariants()
    for mem in memories:
        mem.close()


def test_persistent_ingest(benchmark, data):
    count = min(N, 20_000)  # Chroma writes are ~100x slower than RAM; a 20K sample gives the rate
    texts = [f"cell {i}" for i in range(count)]
    folders: list[str] = []

    def fresh():
        folders.append(tempfile.mkdtemp(prefix="magbench-perf-"))
        return (CellularMemory(path=folders[-1], encoder=ENCODER),), {}

    def ingest(mem: CellularMemory) -> None:
        mem.add(texts, vectors=data.vectors[:count])
        mem.close()

    benchmark.pedantic(ingest, setup=fresh, rounds=2)
    record("persistent_ingest_cells_per_s", count / benchmark.stats.stats.median)
    with CellularMemory(path=folders[0], encoder=ENCODER) as reopened:
        assert len(reopened) == count
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def texts():
    """Word-bearing texts for the cells (topic sentences, each made unique by its number)."""
    from harness.data.generators.topics import topic_haystack

    sentences = topic_haystack(2_000, seed=5).texts
    return [f"{sentences[i % len(sentences)]} (note {i})" for i in range(N)]


def test_hybrid_text_search(benchmark, data, texts, numpy_memory):
    """Text + vector queries (dense fused with BM25) beside the dense path and exact search."""
    with CellularMemory(encoder=ENCODER) as mem:
        mem.add(texts, vectors=data.vectors, ids=[str(i) for i in range(N)])
        queries = [(texts[i], data.vectors[i]) for i in range(0, N, max(1, N // 200))]
        mem.search(queries[0][0], vector=queries[0][1], k=10)  # the first text search builds the lexical index
        pairs = itertools.cycle(queries)

        def search() -> None:
            text, vector = next(pairs)
            mem.search(text, vector=vector, k=10)

        time_queries(benchmark, search, rounds=500, warmup_rounds=20)
        record("hybrid_text_search_s", benchmark.stats.stats.median)
        found = sum(
            mem.search(t, vector=v, k=10)[0].id == str(i * max(1, N // 200)) for i, (t, v) in enumerate(queries[:50])
        )
    record("hybrid_own_text_found_at_1", found / 50)
    assert found >= 45  # a cell's own text and vector find it first


@pytest.mark.parametrize("spread", [1.0, 1.2])
def test_diffuse_clusters(benchmark, spread):
    """Clusters as diffuse as real embeddings (cosine ≈ 0.5 and 0.4 inside a cluster)."""
    from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k

    diffuse = clustered_unit_vectors(N, dim=384, clusters=100, spread=spread, queries=200, seed=11)
    truth = exact_top_k(diffuse.vectors, diffuse.queries, 10)
    started = time.perf_counter()
    with build(diffuse.vectors) as mem:
        record(f"spread_{spread}_ingest_cells_per_s", N / (time.perf_counter() - started))
        recall = recall_at_10(mem, diffuse.queries, truth)
        record(f"spread_{spread}_recall_at_10", recall)
        stats = mem.stats()
        record(f"spread_{spread}_groups", stats.groups)
        record(f"spread_{spread}_target_groups", stats.target_groups)
        record(f"spread_{spread}_group_bound", stats.group_bound)
        next_query = cycle(diffuse.queries)
        time_queries(benchmark, lambda: mem.search(next_query(), k=10), rounds=1000, warmup_rounds=50)
        record(f"spread_{spread}_search_s", benchmark.stats.stats.median)
    assert recall >= 0.95
