"""Searches from several threads in one process: QPS of one and of two searching threads, for the engine's
`search` (one vector a call) and `search_batch` (`BATCH` vectors a call), with FAISS HNSW (M 32, efSearch 32)
measured the same way in the same run.

Each pass splits the queries between the threads (each its own share, a barrier to start them together) and
times until the last one ends; a figure is the best of `PASSES` passes (pytest-benchmark's minimum). The ratio
of two threads' QPS to one's goes to `extra_info` and to the perf summary (`reports/perf-summary.md`), with
whether it meets `TARGET`; it is measured, never asserted. Run serially on an otherwise idle machine:
`pytest -n 0 tests/bench/test_thread_scaling.py --benchmark-only`. Sizes: MAGBENCH_PERF_N cells,
MAGBENCH_THREAD_QUERIES queries.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from reference import CellularMemory
from reference.encoders import MockEncoder
from tests.bench.conftest import FIGURES, N, record, record_ratio, time_queries

QUERIES = int(os.environ.get("MAGBENCH_THREAD_QUERIES", "16000"))
BATCH = 64
"""Queries per `search_batch` call (and per FAISS call in its batch form), as a server batching concurrent
requests would gather them."""
PASSES = 3
TARGET = 1.8
"""Two searching threads' QPS over one's that the engine aims at on a two-core machine."""
K = 10

Search = Callable[[list[np.ndarray]], list[list[str]]]


@pytest.fixture(scope="module")
def thread_data() -> Any:
    return clustered_unit_vectors(N, dim=384, clusters=100, queries=QUERIES, seed=7)


@pytest.fixture(scope="module")
def engine(thread_data: Any) -> Iterator[CellularMemory]:
    with CellularMemory(encoder=MockEncoder(384)) as mem:  # the encoder is never called: vectors are given
        mem.add([f"cell {i}" for i in range(N)], vectors=thread_data.vectors, ids=[str(i) for i in range(N)])
        yield mem


@pytest.fixture(scope="module")
def hnsw(thread_data: Any) -> Any:
    faiss = pytest.importorskip("faiss")
    index = faiss.IndexHNSWFlat(384, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 40  # as `baselines/faiss_hnsw.py` builds it
    index.add(thread_data.vectors)
    return index


def engine_search(mem: CellularMemory) -> Search:
    return lambda queries: [[hit.id for hit in mem.search(query, k=K)] for query in queries]


def engine_batch(mem: CellularMemory) -> Search:
    def search(queries: list[np.ndarray]) -> list[list[str]]:
        found = []
        for start in range(0, len(queries), BATCH):
            found += [[hit.id for hit in hits] for hits in mem.search_batch(queries[start : start + BATCH], k=K)]
        return found

    return search


def hnsw_search(index: Any, *, batch: int) -> Search:
    """FAISS HNSW at efSearch 32, `batch` queries a call, its OpenMP pool held to one thread on each call."""
    import faiss

    params = faiss.SearchParametersHNSW(efSearch=32)

    def search(queries: list[np.ndarray]) -> list[list[str]]:
        matrix, found = np.stack(queries), []
        for start in range(0, len(matrix), batch):
            faiss.omp_set_num_threads(1)
            _, rows = index.search(matrix[start : start + batch], K, params=params)
            found += [[str(row) for row in each] for each in rows.tolist()]
        return found

    return search


def threaded_pass(search: Search, shares: list[list[np.ndarray]], answers: list[list[list[str]]]) -> None:
    """One pass: each thread searches its share; returns when the last is done (their answers kept)."""
    start = threading.Barrier(len(shares))

    def work(i: int) -> None:
        start.wait()
        answers[i] = search(shares[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(shares))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


SYSTEMS = ["engine_search", "engine_batch", "faiss_hnsw", "faiss_hnsw_batch"]


@pytest.mark.parametrize(("system", "threads"), [(system, threads) for system in SYSTEMS for threads in (1, 2)])
def test_thread_scaling(benchmark, request, system: str, threads: int, thread_data: Any) -> None:
    if system.startswith("engine"):
        mem = request.getfixturevalue("engine")
        search = engine_search(mem) if system == "engine_search" else engine_batch(mem)
    else:
        search = hnsw_search(request.getfixturevalue("hnsw"), batch=BATCH if system.endswith("batch") else 1)
    queries = list(thread_data.queries)
    shares = [queries[i::threads] for i in range(threads)]
    answers: list[list[list[str]]] = [[] for _ in shares]
    search(queries[:200])  # warm-up: compiled kernels and caches
    time_queries(benchmark, lambda: threaded_pass(search, shares, answers), rounds=PASSES, warmup_rounds=0)
    qps = QUERIES / benchmark.stats.stats.min
    record(f"{system}_{threads}_threads_qps", qps)
    benchmark.extra_info.update(
        {"system": system, "threads": threads, "queries": QUERIES, "qps": qps, "load_average": os.getloadavg()[0]}
    )
    if threads == 2:
        record_ratio(f"{system}_2_over_1_threads", f"{system}_2_threads_qps", f"{system}_1_threads_qps")
        one = FIGURES.get(f"{system}_1_threads_qps")
        if one is not None:
            benchmark.extra_info.update({"ratio_2_over_1": qps / one, f"meets {TARGET}x": qps / one >= TARGET})
    if system.startswith("engine"):  # threads change nothing found: each share's answers as one thread gives
        alone = search(shares[-1][:50])
        assert answers[-1][:50] == alone
        assert all(len(found) == K for share in answers for found in share)
