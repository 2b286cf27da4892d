"""Many users in one memory: S scopes × 100 cells (real-ish topic sentences, clustered vectors given with each
write) written in interleaved turns of 1–5 cells; then one scope's text and vector searches timed against the same
cells in a memory of their own, in the same run (the ratio the summary reports), each scope's recall against exact
search over that scope, and no hit from another scope; and one scope's housekeeping (`count`, `consolidate`,
`delete` by scope) against the same in its own memory. `MAGBENCH_TENANTS` sets S (default 1,000; 10,000 is a
million cells)."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from harness.measure.timing import resident_bytes
from reference import CellularMemory
from reference.encoders import MockEncoder
from tests.bench.conftest import record, record_ratio, time_queries
from tests.bench.test_agent_loop import loop_texts

SCOPES = int(os.environ.get("MAGBENCH_TENANTS", "1000"))
CELLS = 100
PROBED = 20
"""Scopes whose searches are timed and checked."""
ENCODER = MockEncoder(384)


def scope_name(scope: int) -> str:
    return f"user:{scope}"


@pytest.fixture(scope="module")
def tenants():
    """The shared memory, each scope's texts and vectors, and the write latencies of its interleaved turns."""
    total = SCOPES * CELLS
    vectors = clustered_unit_vectors(total, 384, clusters=max(100, SCOPES // 10), spread=1.0, seed=3).vectors
    texts = loop_texts(total)
    rng = random.Random(1)
    turns = []  # (scope, start, stop): each scope's cells in turns of 1–5, the scopes interleaved
    for scope in range(SCOPES):
        start = 0
        while start < CELLS:
            stop = min(CELLS, start + rng.randint(1, 5))
            turns.append((scope, start, stop))
            start = stop
    rng.shuffle(turns)
    turns.sort(key=lambda turn: turn[1])  # shuffled within each scope's order: a scope's turns stay in order
    before = resident_bytes()
    memory = CellularMemory(encoder=ENCODER)
    latencies = []
    for scope, start, stop in turns:
        rows = slice(scope * CELLS + start, scope * CELLS + stop)
        ids = [str(row) for row in range(rows.start, rows.stop)]
        began = time.perf_counter()
        memory.add(texts[rows], vectors=vectors[rows], ids=ids, scope=scope_name(scope))
        latencies.append(time.perf_counter() - began)
    record("multi_tenant_resident_over_raw_vectors", (resident_bytes() - before) / vectors.nbytes)
    record("multi_tenant_cells", len(memory))
    record("multi_tenant_write_p50_ms", float(np.percentile(latencies, 50)) * 1e3)
    record("multi_tenant_write_p99_ms", float(np.percentile(latencies, 99)) * 1e3)
    yield memory, texts, vectors
    memory.close()


def probes(texts, vectors):
    """(scope, text query, its vector) for the probed scopes: three words of one of the scope's own cells."""
    rng = random.Random(2)
    chosen = rng.sample(range(SCOPES), PROBED)
    found = []
    for scope in chosen:
        row = scope * CELLS + rng.randrange(CELLS)
        words = texts[row].split()
        found.append((scope, " ".join(rng.sample(words, min(3, len(words)))), vectors[row]))
    return found


@pytest.fixture(scope="module")
def alone(tenants):
    """Each probed scope's cells in a memory of their own (the ideal a shared memory is held to)."""
    _, texts, vectors = tenants
    memories = {}
    for scope, _, _ in probes(texts, vectors):
        rows = slice(scope * CELLS, (scope + 1) * CELLS)
        memories[scope] = CellularMemory(encoder=ENCODER)
        memories[scope].add(texts[rows], vectors=vectors[rows], scope=scope_name(scope))
    yield memories
    for memory in memories.values():
        memory.close()


@pytest.mark.parametrize("kind", ["text", "vector"])
@pytest.mark.parametrize("where", ["shared", "alone"])
def test_scoped_search(benchmark, tenants, alone, kind, where):
    shared, texts, vectors = tenants
    queries = probes(texts, vectors)
    turn = iter(range(10**9))

    def setup():
        scope, text, vector = queries[next(turn) % len(queries)]
        memory = shared if where == "shared" else alone[scope]
        query = text if kind == "text" else vector
        return (memory, query, vector if kind == "text" else None, scope_name(scope)), {}

    def search(memory, query, vector, scope):
        return memory.search(query, 10, vector=vector, scope=scope)

    if where == "shared" and kind == "vector":
        check_scopes_and_recall(shared, texts, vectors)  # untimed: what the timed searches must keep to
    time_queries(benchmark, search, setup=setup, rounds=20 * PROBED, warmup_rounds=PROBED)
    name = f"multi_tenant_{kind}_search_{where}_s"
    record(name, benchmark.stats.stats.median)
    if where == "alone":
        record_ratio(f"multi_tenant_{kind}_search_shared_over_alone", f"multi_tenant_{kind}_search_shared_s", name)


def check_scopes_and_recall(shared: CellularMemory, texts: list[str], vectors: np.ndarray) -> None:
    """No hit from another scope, and each probed scope's recall@10 against exact search over that scope."""
    recalls = []
    for scope, text, vector in probes(texts, vectors):
        first, name = scope * CELLS, scope_name(scope)
        exact = {str(first + row) for row in np.argsort(-(vectors[first : first + CELLS] @ vector))[:10].tolist()}
        for hits in (shared.search(text, 10, vector=vector, scope=name), shared.search(vector, 10, scope=name)):
            assert all(first <= int(hit.id) < first + CELLS for hit in hits), f"a hit from outside {name}"
        recalls.append(len({hit.id for hit in shared.search(vector, 10, scope=name)} & exact) / 10)
    record("multi_tenant_scoped_vector_recall_at_10", float(np.mean(recalls)))
    assert np.mean(recalls) >= 0.95


@pytest.mark.parametrize("call", ["count", "consolidate", "delete"])
@pytest.mark.parametrize("where", ["shared", "alone"])
def test_scoped_housekeeping(benchmark, tenants, alone, call, where):
    """One scope's count, sleep pass and delete (its cells written again, untimed, before each delete)."""
    shared, texts, vectors = tenants
    scopes = [scope for scope, _, _ in probes(texts, vectors)]
    turn = iter(range(10**9))

    def setup():
        scope = scopes[next(turn) % len(scopes)]
        memory = shared if where == "shared" else alone[scope]
        rows = slice(scope * CELLS, (scope + 1) * CELLS)
        if call == "delete" and not memory.count(scope=scope_name(scope)):
            memory.add(texts[rows], vectors=vectors[rows], ids=[f"{n}" for n in range(rows.start, rows.stop)],
                       scope=scope_name(scope))  # fmt: skip
        return (memory, scope_name(scope)), {}

    def run(memory, scope):
        if call == "count":
            return memory.count(scope=scope)
        if call == "consolidate":
            return memory.consolidate(scope=scope)
        return memory.delete(scope=scope)

    time_queries(benchmark, run, setup=setup, rounds=2 * len(scopes), warmup_rounds=0)
    name = f"multi_tenant_{call}_scope_{where}_s"
    record(name, benchmark.stats.stats.median)
    if where == "alone":
        record_ratio(f"multi_tenant_{call}_scope_shared_over_alone", f"multi_tenant_{call}_scope_shared_s", name)
