"""Scopes beyond RAM: S scopes × 100 cells in an embedded store, and in a namespace of a Chroma server started here,
each opened with `MemoryConfig(resident_cells=)` a tenth of the cells. Reopening until the first scoped search; a
search in a scope out of RAM (it loads first) and in one in RAM, against the same scope's cells in a memory of their
own, in the same run; every cell of 100 random scopes found by its own vector at k = 1 after they were let go and
loaded again. `MAGBENCH_TENANTS` sets S of the embedded store (default 1,000; 10,000 is a million cells, written to
the store before anything is timed), `MAGBENCH_SERVER_TENANTS` that of the server (default 200). The server's
figures are named `server_beyond_ram_*`."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
import pytest

from harness.measure.server_processes import ChromaServer
from harness.measure.timing import resident_bytes
from reference import CellularMemory, MemoryConfig
from reference.common.chroma import server_client
from tests.bench.conftest import record, record_ratio, time_queries
from tests.bench.test_multi_tenant import CELLS, ENCODER, SCOPES, scope_name

LAYOUTS = {"embedded": SCOPES, "server": int(os.environ.get("MAGBENCH_SERVER_TENANTS", "200"))}
"""Scopes in each store: a server's writes and loads cross HTTP, so its default store is smaller."""
BATCH = 50
"""Scopes written at a time while the store is made (each write names a scope per text)."""


@dataclass
class Store:
    """A store of `scopes` scopes written and closed; `open` opens it again with a tenth of its cells in RAM."""

    layout: str
    scopes: int
    texts: list[str]
    vectors: np.ndarray
    open: Callable[[], CellularMemory]

    @property
    def budget(self) -> int:
        return self.scopes * CELLS // 10

    @property
    def checked(self) -> int:
        """Scopes whose every cell is looked for after they were let go."""
        return min(100, self.scopes // 2)

    def figure(self, name: str) -> str:
        return f"beyond_ram_{name}" if self.layout == "embedded" else f"server_beyond_ram_{name}"


@pytest.fixture(scope="module", params=list(LAYOUTS))
def store(request, tmp_path_factory) -> Iterator[Store]:
    """The scopes' texts and vectors, written BATCH scopes at a time, then closed (a server runs until the module
    is done)."""
    from harness.data.generators.vectors import clustered_unit_vectors
    from tests.bench.test_agent_loop import loop_texts

    layout, scopes = request.param, LAYOUTS[request.param]
    total = scopes * CELLS
    vectors = clustered_unit_vectors(total, 384, clusters=max(100, scopes // 10), spread=1.0, seed=3).vectors
    texts = loop_texts(total)
    config = MemoryConfig(namespace="tenants", resident_cells=total // 10)
    with ExitStack() as running:
        if layout == "embedded":
            path = str(tmp_path_factory.mktemp("tenants") / "store")
            opened = Store(layout, scopes, texts, vectors, lambda: CellularMemory(path, encoder=ENCODER, config=config))
        else:
            server = running.enter_context(ChromaServer(tmp_path_factory.mktemp("tenants-server")))
            opened = Store(
                layout,
                scopes,
                texts,
                vectors,
                lambda: CellularMemory(client=server_client(server.address), encoder=ENCODER, config=config),
            )
        with opened.open() as memory:
            for first in range(0, scopes, BATCH):
                rows = slice(first * CELLS, min(scopes, first + BATCH) * CELLS)
                memory.add(
                    texts[rows],
                    vectors=vectors[rows],
                    ids=[str(row) for row in range(rows.start, rows.stop)],
                    scope=[scope_name(row // CELLS) for row in range(rows.start, rows.stop)],
                )
        yield opened


@pytest.fixture(scope="module")
def reopened(store):
    """The store opened again with a tenth of its cells in RAM, timed until its first scoped search."""
    before = resident_bytes()
    began = time.perf_counter()
    memory = store.open()
    memory.search(store.vectors[0], 10, scope=scope_name(0))
    record(store.figure("reopen_until_first_scoped_search_s"), time.perf_counter() - began)
    record(store.figure("cells"), len(memory))
    yield memory, store, before
    memory.close()


def test_a_search_in_a_scope_out_of_ram(benchmark, reopened):
    """Each timed search names a scope not in RAM: it loads the scope (cells, groups, indexes) and searches it."""
    memory, store, _ = reopened
    vectors, scopes = store.vectors, store.scopes
    order = random.Random(4).sample(range(1, scopes), scopes - 1)
    turn = iter(order)

    def setup():
        scope = next(turn)
        while memory._state.table.known_scope(scope_name(scope)) in memory._state.scopes:  # in RAM: take another
            scope = next(turn)
        row = scope * CELLS + 7
        return (vectors[row], scope_name(scope)), {}

    def search(vector, scope):
        return memory.search(vector, 10, scope=scope)

    time_queries(benchmark, search, setup=setup, rounds=min(200, scopes // 2), warmup_rounds=0)
    record(store.figure("search_out_of_ram_s"), benchmark.stats.stats.median)


@pytest.mark.parametrize("where", ["in_ram", "alone"])
def test_a_search_in_a_scope_in_ram(benchmark, reopened, where):
    memory, store, _ = reopened
    texts, vectors = store.texts, store.vectors
    scopes = random.Random(5).sample(range(store.scopes), 5)
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
    record(store.figure(f"search_{where}_s"), benchmark.stats.stats.median)
    if where == "alone":
        ratio, in_ram, alone = (
            store.figure(name) for name in ("search_in_ram_over_alone", "search_in_ram_s", "search_alone_s")
        )
        record_ratio(ratio, in_ram, alone)
    for target in own.values():
        target.close()


def test_nothing_is_lost_through_eviction(benchmark, reopened):
    """Every cell of `checked` random scopes, each let go first, found by its own vector at k = 1 (timed once, as a
    whole); then the resident memory of the process against the raw vectors of the whole store."""
    memory, store, before = reopened
    state, vectors, scopes, checked = memory._state, store.vectors, store.scopes, store.checked

    def check() -> int:
        found = 0
        for scope in random.Random(6).sample(range(scopes), checked):
            others = iter(random.Random(scope).sample(range(scopes), scopes))
            while state.table.known_scope(scope_name(scope)) in state.scopes:  # let it go: search others first
                other = next(others)
                memory.search(vectors[other * CELLS], 1, scope=scope_name(other))
            for row in range(scope * CELLS, (scope + 1) * CELLS):
                found += memory.search(vectors[row], 1, scope=scope_name(scope))[0].id == str(row)
        return found

    found = benchmark.pedantic(check, rounds=1, iterations=1)
    record(store.figure("checked_cells_found_share"), found / (checked * CELLS))
    record(store.figure("loads"), memory._resident.loads)
    record(store.figure("resident_cells"), len(state.table))
    record(store.figure("rss_over_store_raw_vectors"), (resident_bytes() - before) / vectors.nbytes)
    assert found == checked * CELLS
    assert len(state.table) <= store.budget + CELLS
