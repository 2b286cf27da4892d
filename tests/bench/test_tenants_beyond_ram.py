"""Scopes beyond RAM: S scopes × 100 cells in an embedded store, opened with `MemoryConfig(resident_cells=)` a tenth
of the cells. Reopening until the first scoped search; a search in a scope out of RAM (it loads first) and in one
in RAM, against the same scope's cells in a memory of their own, in the same run; every cell of 100 random scopes
found by its own vector at k = 1 after they were let go and loaded again. `MAGBENCH_TENANTS` sets S (default
1,000; 10,000 is a million cells, written to the store before anything is timed)."""

from __future__ import annotations

import random
import time

import pytest

from harness.measure.runner import resident_bytes
from reference import CellularMemory, MemoryConfig
from tests.bench.conftest import record, record_ratio, time_queries
from tests.bench.test_multi_tenant import CELLS, ENCODER, SCOPES, scope_name

BUDGET = SCOPES * CELLS // 10
BATCH = 50
"""Scopes written at a time while the store is made (each write names a scope per text)."""
CHECKED = min(100, SCOPES // 2)
"""Scopes whose every cell is looked for after they were let go."""


def resident_config() -> MemoryConfig:
    return MemoryConfig(resident_cells=BUDGET)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The store's path and the scopes' texts and vectors, written BATCH scopes at a time, then closed."""
    from harness.data.generators.vectors import clustered_unit_vectors
    from tests.bench.test_agent_loop import loop_texts

    total = SCOPES * CELLS
    vectors = clustered_unit_vectors(total, 384, clusters=max(100, SCOPES // 10), spread=1.0, seed=3).vectors
    texts = loop_texts(total)
    path = str(tmp_path_factory.mktemp("tenants") / "store")
    with CellularMemory(path, encoder=ENCODER, config=resident_config()) as memory:
        for first in range(0, SCOPES, BATCH):
            rows = slice(first * CELLS, min(SCOPES, first + BATCH) * CELLS)
            memory.add(
                texts[rows],
                vectors=vectors[rows],
                ids=[str(row) for row in range(rows.start, rows.stop)],
                scope=[scope_name(row // CELLS) for row in range(rows.start, rows.stop)],
            )
    return path, texts, vectors


@pytest.fixture(scope="module")
def reopened(store):
    """The store opened again with a tenth of its cells in RAM, timed until its first scoped search."""
    path, texts, vectors = store
    before = resident_bytes()
    began = time.perf_counter()
    memory = CellularMemory(path, encoder=ENCODER, config=resident_config())
    memory.search(vectors[0], 10, scope=scope_name(0))
    record("beyond_ram_reopen_until_first_scoped_search_s", time.perf_counter() - began)
    record("beyond_ram_cells", len(memory))
    yield memory, texts, vectors, before
    memory.close()


def test_a_search_in_a_scope_out_of_ram(benchmark, reopened):
    """Each timed search names a scope not in RAM: it loads the scope (cells, groups, indexes) and searches it."""
    memory, _, vectors, _ = reopened
    order = random.Random(4).sample(range(1, SCOPES), SCOPES - 1)
    turn = iter(order)

    def setup():
        scope = next(turn)
        while memory._state.table.known_scope(scope_name(scope)) in memory._state.scopes:  # in RAM: take another
            scope = next(turn)
        row = scope * CELLS + 7
        return (vectors[row], scope_name(scope)), {}

    def search(vector, scope):
        return memory.search(vector, 10, scope=scope)

    time_queries(benchmark, search, setup=setup, rounds=min(200, SCOPES // 2), warmup_rounds=0)
    record("beyond_ram_search_out_of_ram_s", benchmark.stats.stats.median)


@pytest.mark.parametrize("where", ["in_ram", "alone"])
def test_a_search_in_a_scope_in_ram(benchmark, reopened, where):
    memory, texts, vectors, _ = reopened
    scopes = random.Random(5).sample(range(SCOPES), 5)
    own = {}
    for scope in scopes:
        rows = slice(scope * CELLS, (scope + 1) * CELLS)
        own[scope] = CellularMemory(encoder=ENCODER)
        own[scope].add(texts[rows], vectors=vectors[rows], scope=scope_name(scope))
    turn = iter(range(10**9))

    def setup():
        scope = scopes[next(turn) % len(scopes)]
        return (memory if where == "in_ram" else own[scope], vectors[scope * CELLS + 3], scope_name(scope)), {}

    def search(target, vector, scope):
        return target.search(vector, 10, scope=scope)

    time_queries(benchmark, search, setup=setup, rounds=100, warmup_rounds=len(scopes))
    record(f"beyond_ram_search_{where}_s", benchmark.stats.stats.median)
    if where == "alone":
        record_ratio("beyond_ram_search_in_ram_over_alone", "beyond_ram_search_in_ram_s", "beyond_ram_search_alone_s")
    for target in own.values():
        target.close()


def test_nothing_is_lost_through_eviction(benchmark, reopened):
    """Every cell of CHECKED random scopes, each let go first, found by its own vector at k = 1 (timed once, as a
    whole); then the resident memory of the process against the raw vectors of the whole store."""
    memory, _, vectors, before = reopened
    state = memory._state

    def check() -> int:
        found = 0
        for scope in random.Random(6).sample(range(SCOPES), CHECKED):
            others = iter(random.Random(scope).sample(range(SCOPES), SCOPES))
            while state.table.known_scope(scope_name(scope)) in state.scopes:  # let it go: search others first
                other = next(others)
                memory.search(vectors[other * CELLS], 1, scope=scope_name(other))
            for row in range(scope * CELLS, (scope + 1) * CELLS):
                found += memory.search(vectors[row], 1, scope=scope_name(scope))[0].id == str(row)
        return found

    found = benchmark.pedantic(check, rounds=1, iterations=1)
    record("beyond_ram_checked_cells_found_share", found / (CHECKED * CELLS))
    record("beyond_ram_loads", memory._resident.loads)
    record("beyond_ram_resident_cells", len(state.table))
    record("beyond_ram_rss_over_store_raw_vectors", (resident_bytes() - before) / vectors.nbytes)
    assert found == CHECKED * CELLS
    assert len(state.table) <= BUDGET + CELLS
