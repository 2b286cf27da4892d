"""Engine performance at 100K clustered vectors (d=384, 100 clusters), vectors given.

Run serially: `tox -e perf` (pytest-benchmark disables itself under xdist). Build and
warm-up stay outside the timed code; recall is asserted, speed is only measured and reported.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile

import numpy as np
import pytest

from harness.metrics import recall_at_k
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.index import similarities
from tests.bench.conftest import N, record

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
    benchmark.pedantic(lambda: numpy_memory.search(next_query(), k=10), rounds=2000, warmup_rounds=50)
    record("numpy_search_s", benchmark.stats.stats.median)
    record("groups", numpy_memory.stats().groups)
    assert recall >= 0.95


def test_brute_force_search(benchmark, data, truth):
    vectors = data.vectors
    next_query = cycle(data.queries)

    def exact() -> np.ndarray:
        scores = similarities(vectors, next_query())  # the engine's own kernel: a fair baseline
        best = np.argpartition(-scores, 9)[:10]
        return best[np.argsort(-scores[best])]

    benchmark.pedantic(exact, rounds=200, warmup_rounds=5)
    record("brute_force_s", benchmark.stats.stats.median)


def test_chroma_index_search(benchmark, data, truth):
    with build(data.vectors, config=MemoryConfig(group_backend="chroma")) as mem:
        record("chroma_recall_at_10", recall_at_10(mem, data.queries[:50], truth[:50]))
        next_query = cycle(data.queries)
        benchmark.pedantic(lambda: mem.search(next_query(), k=10), rounds=300, warmup_rounds=10)
        record("chroma_search_s", benchmark.stats.stats.median)


def test_in_memory_ingest(benchmark, data):
    memories: list[CellularMemory] = []

    def fresh():
        memories.append(CellularMemory(encoder=ENCODER))
        return (memories[-1],), {}

    texts = [f"cell {i}" for i in range(N)]
    benchmark.pedantic(lambda mem: mem.add(texts, vectors=data.vectors), setup=fresh, rounds=3)
    record("in_memory_ingest_cells_per_s", N / benchmark.stats.stats.median)
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
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
