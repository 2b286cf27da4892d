"""One million cells (opt-in: `MAGBENCH_MILLION=1 tox -e perf`): spread 1.0, one cluster per 1,000 cells,
vectors given. The engine's p50, recall, ingest rate and resident memory (its compiled code loaded first, as
FAISS's is at import), with FAISS IVF and HNSW beside it; and the lexical index over a million text cells, its
resident memory against the raw float32 vectors."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.measure.timing import resident_bytes
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.indexes.lexical import BM25Index
from tests.bench.conftest import load_engine_code, record, record_ratio, time_queries
from tests.bench.test_agent_loop import loop_texts

N = 1_000_000
pytestmark = pytest.mark.skipif(not os.environ.get("MAGBENCH_MILLION"), reason="opt-in: set MAGBENCH_MILLION=1")


@pytest.fixture(scope="module")
def million():
    data = clustered_unit_vectors(N, 384, N // 1_000, spread=1.0, queries=200, seed=21)
    return data, exact_top_k(data.vectors, data.queries, 10)


def loaded_engine_bytes() -> int:
    """The resident bytes that loading the engine's compiled kernels leaves behind (`load_engine_code`): code, not
    memory that grows with the cells, so the million's ingest rate and memory are measured without it."""
    before = resident_bytes()
    load_engine_code()
    return resident_bytes() - before


def numpy_assignment_pass(vectors: np.ndarray, groups: int = 1_000, block: int = 8192) -> float:
    """Seconds NumPy takes to find each vector's most similar of `groups` centroids (vectors taken as centroids),
    `block` rows at a time: one flat assignment pass, the least an index that groups its cells pays per cell, and
    the baseline the engine's ingest rate is set against in the same run (a busier machine slows both)."""
    centroids = vectors[:: len(vectors) // groups][:groups]
    started = time.perf_counter()
    for start in range(0, len(vectors), block):
        np.argmax(vectors[start : start + block] @ centroids.T, axis=1)
    return time.perf_counter() - started


def test_engine_at_a_million_cells(benchmark, million):
    data, truth = million
    record("engine_code_resident_mb", loaded_engine_bytes() / 1e6)
    record("million_numpy_assignment_pass_cells_per_s", N / numpy_assignment_pass(data.vectors))
    before = resident_bytes()
    memory = CellularMemory(encoder=MockEncoder(384), config=MemoryConfig(lexical=False))
    started = time.perf_counter()
    memory.add(["cell"] * N, vectors=data.vectors, ids=[str(i) for i in range(N)])
    record("million_ingest_cells_per_s", N / (time.perf_counter() - started))
    record("million_engine_resident_bytes", resident_bytes() - before)
    record("million_raw_vector_bytes", data.vectors.nbytes)
    record_ratio("million_resident_vs_raw_vectors", "million_engine_resident_bytes", "million_raw_vector_bytes")
    record_ratio(
        "million_ingest_vs_numpy_assignment_pass",
        "million_ingest_cells_per_s",
        "million_numpy_assignment_pass_cells_per_s",
    )
    stats = memory.stats()
    record("million_groups", stats.groups)
    record("million_group_bound", stats.group_bound)
    found = [{int(h.id) for h in memory.search(q, k=10)} for q in data.queries]
    recall = float(np.mean([len(f & set(t.tolist())) / 10 for f, t in zip(found, truth)]))
    record("million_recall_at_10", recall)
    queries = iter(np.tile(data.queries, (20, 1)))
    time_queries(benchmark, lambda: memory.search(next(queries), k=10), rounds=1000, warmup_rounds=20)
    record("million_search_s", benchmark.stats.stats.median)
    memory.close()
    assert recall >= 0.95


def test_lexical_index_at_a_million_cells():
    """The lexical index's resident memory at 1M text cells (the loop's texts), ≤ the raw float32 vectors."""
    texts, batch = loop_texts(N), 50_000
    before = resident_bytes()
    index = BM25Index()
    for start in range(0, N, batch):
        index.add(np.arange(start, start + batch), texts[start : start + batch])
    resident = resident_bytes() - before
    raw_vectors = N * 384 * np.dtype(np.float32).itemsize
    record("million_lexical_resident_bytes", resident)
    record("million_lexical_resident_vs_raw_vectors", resident / raw_vectors)
    assert len(index) == N and resident <= raw_vectors


def test_faiss_ivf_at_a_million_cells(benchmark, million):
    faiss = pytest.importorskip("faiss")
    data, _ = million
    index = faiss.index_factory(384, "IVF4000,Flat", faiss.METRIC_INNER_PRODUCT)
    index.train(data.vectors[::4])
    index.add(data.vectors)
    index.nprobe = 8
    measure_faiss(benchmark, "million_faiss_ivf_nprobe8", index, million)


def test_faiss_hnsw_at_a_million_cells(benchmark, million):
    faiss = pytest.importorskip("faiss")
    data, _ = million
    index = faiss.IndexHNSWFlat(384, 32, faiss.METRIC_INNER_PRODUCT)  # the `faiss-hnsw` baseline's settings
    index.hnsw.efConstruction = 40
    started = time.perf_counter()
    index.add(data.vectors)
    record("million_faiss_hnsw_ingest_cells_per_s", N / (time.perf_counter() - started))
    index.hnsw.efSearch = 32
    measure_faiss(benchmark, "million_faiss_hnsw_ef32", index, million)


def measure_faiss(benchmark, name: str, index, million) -> None:
    """Record a FAISS index's recall@10 on the queries and its single-query median search time."""
    data, truth = million
    rows = index.search(data.queries, 10)[1]
    overlaps = [len(set(r) & set(t)) / 10 for r, t in zip(rows.tolist(), truth.tolist())]
    record(f"{name}_recall_at_10", float(np.mean(overlaps)))
    queries = iter(np.tile(data.queries, (20, 1)))
    time_queries(benchmark, lambda: index.search(next(queries)[None, :], 10), rounds=1000, warmup_rounds=20)
    record(f"{name}_search_s", benchmark.stats.stats.median)
