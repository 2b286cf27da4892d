"""What taking over a namespace costs on PostgreSQL (`reference/store/ownership.py`: one update of the owner row)
against the Chroma server path (`reference/store/handover.py`: a copy of every cell into new collections), both on
servers started here, in the same run; and, on the same two stores, a one-cell add and the load of one scope.

The PostgreSQL takeover is timed at `MAGBENCH_TAKEOVER_CELLS` (10,000 and 1,000,000: the rows past the first batch
are copies of it made by the database, since the takeover reads none of them); the Chroma copy at
`MAGBENCH_CHROMA_TAKEOVER_CELLS` (10,000 and 50,000). Vectors are 64-d on both sides."""

from __future__ import annotations

import os
from itertools import cycle

import numpy as np
import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL store needs psycopg 3: pip install -e '.[postgres]'")

import psycopg

from harness.data.generators.vectors import clustered_unit_vectors
from harness.measure.postgres import INSTALL, PostgresServer, binaries
from harness.measure.server_processes import ChromaServer
from reference import CellularMemory, MemoryConfig
from reference.common.chroma import server_client
from reference.encoders import MockEncoder
from reference.store.handover import hand_over
from reference.store.ownership import Ownership
from tests.bench.conftest import record, record_ratio

DIM = 64
FILL = 10_000
"""Cells written through the engine; larger namespaces on PostgreSQL are copies of these made by the database."""
SCOPE_CELLS = 100
PG_SIZES = [int(n) for n in os.environ.get("MAGBENCH_TAKEOVER_CELLS", "10000,1000000").split(",")]
CHROMA_SIZES = [int(n) for n in os.environ.get("MAGBENCH_CHROMA_TAKEOVER_CELLS", "10000,50000").split(",")]
LEASE = MemoryConfig().lease_seconds


def cells(count: int, seed: int) -> tuple[list[str], np.ndarray, list[str]]:
    """`count` cells' texts, vectors and scopes (`SCOPE_CELLS` per scope)."""
    vectors = clustered_unit_vectors(count, dim=DIM, clusters=50, queries=1, seed=seed).vectors
    return [f"note {n}" for n in range(count)], vectors, [f"user:{n // SCOPE_CELLS}" for n in range(count)]


def filled(memory: CellularMemory, count: int) -> CellularMemory:
    texts, vectors, scopes = cells(count, seed=count)
    for start in range(0, count, 5_000):
        end = start + 5_000
        memory.add(texts[start:end], vectors=vectors[start:end], scope=scopes[start:end])
    return memory


@pytest.fixture(scope="module")
def postgres():
    pytest.importorskip("psycopg")
    if binaries() is None:
        pytest.skip(f"no PostgreSQL binaries: {INSTALL}")
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="module")
def chroma(tmp_path_factory):
    with ChromaServer(tmp_path_factory.mktemp("takeover-bench")) as server:
        yield server


def pg_memory(dsn: str, namespace: str) -> CellularMemory:
    config = MemoryConfig(namespace=namespace, resident_cells=1_000_000)
    return CellularMemory(dsn=dsn, encoder=MockEncoder(DIM), config=config)


def chroma_memory(address: str, namespace: str) -> CellularMemory:
    config = MemoryConfig(namespace=namespace, resident_cells=1_000_000)
    return CellularMemory(client=server_client(address), encoder=MockEncoder(DIM), config=config)


def grown(dsn: str, namespace: str, size: int) -> None:
    """The namespace's `FILL` cells copied by the database until it holds `size`."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        copies = size // FILL - 1
        connection.execute(
            "INSERT INTO magbench_cells (namespace, id, scope, text, fields, vector) "
            "SELECT namespace, id || ':' || n, scope, text, fields, vector "
            "FROM magbench_cells, generate_series(1, %s) AS n WHERE namespace = %s",
            (copies, namespace),
        )
        connection.execute("VACUUM ANALYZE magbench_cells")
        connection.execute("CHECKPOINT")  # the copies' writes flushed now, not during the timed rounds
        held = connection.execute("SELECT count(*) FROM magbench_cells WHERE namespace = %s", (namespace,)).fetchone()
    assert held is not None and held[0] == size


@pytest.mark.parametrize("size", PG_SIZES)
def test_postgres_takeover(benchmark, postgres, size):
    """From a dead owner whose lease has run out to the namespace owned again: one update of the owner row."""
    namespace = f"takeover{size}"
    filled(pg_memory(postgres.dsn, namespace), FILL).close()
    if size > FILL:
        grown(postgres.dsn, namespace, size)
    held: list[Ownership] = []

    def dead_owner() -> tuple[tuple[()], dict[str, object]]:
        for ownership in held:
            ownership._stop.set()  # renewals stop, as when its process is killed
        with psycopg.connect(postgres.dsn, autocommit=True) as connection:  # and its lease has run out
            connection.execute("UPDATE magbench_owners SET expires = now() WHERE namespace = %s", (namespace,))
        return (), {}

    benchmark.pedantic(
        lambda: held.append(Ownership.acquire(postgres.dsn, namespace, LEASE)), setup=dead_owner, rounds=20
    )
    assert [o.epoch for o in held] == sorted({o.epoch for o in held})  # each round took it over once
    for ownership in held:
        ownership.release()
    record(f"postgres_takeover_{size}_cells_s", benchmark.stats["median"])


@pytest.mark.parametrize("size", CHROMA_SIZES)
def test_chroma_server_takeover_copy(benchmark, chroma, size):
    """What a takeover on a Chroma server adds to taking the lease: moving the cells and the ledger to new
    collections (`hand_over`), so that the dead owner's late writes cannot land."""
    namespace = f"takeover{size}"
    filled(chroma_memory(chroma.address, namespace), size).close()
    client = server_client(chroma.address)
    benchmark.pedantic(lambda: hand_over(client, namespace, took_over=True), rounds=1)
    assert client.get_collection(f"{namespace}_cells").count() == size
    record(f"chroma_server_takeover_copy_{size}_cells_s", benchmark.stats["median"])
    if PG_SIZES and CHROMA_SIZES:
        record_ratio(
            f"chroma_copy_{CHROMA_SIZES[0]}_over_postgres_takeover_{PG_SIZES[-1]}",
            f"chroma_server_takeover_copy_{CHROMA_SIZES[0]}_cells_s",
            f"postgres_takeover_{PG_SIZES[-1]}_cells_s",
        )


@pytest.fixture(scope="module")
def both(postgres, chroma):
    """The same 5,000 cells in a memory on each store."""
    memories = {
        "postgres": filled(pg_memory(postgres.dsn, "writes"), 5_000),
        "chroma_server": filled(chroma_memory(chroma.address, "writes"), 5_000),
    }
    yield memories
    for memory in memories.values():
        memory.close()


@pytest.mark.parametrize("store", ["postgres", "chroma_server"])
def test_one_cell_add(benchmark, both, store):
    memory = both[store]
    vectors = cycle(cells(200, seed=3)[1])
    benchmark.pedantic(
        lambda vector: memory.add(["one more turn"], vectors=[vector], scope="user:new"),
        setup=lambda: ((next(vectors),), {}),
        rounds=100,
        warmup_rounds=5,
    )
    record(f"{store}_one_cell_add_s", benchmark.stats["median"])
    record_ratio("postgres_over_chroma_server_one_cell_add", "postgres_one_cell_add_s", "chroma_server_one_cell_add_s")


@pytest.mark.parametrize("store", ["postgres", "chroma_server"])
def test_scope_load(benchmark, both, store):
    """One scope's cells read from the store (what a memory with `resident_cells` does when a scope is used)."""
    store_of = both[store]._store.store
    scopes = cycle(f"user:{n}" for n in range(5_000 // SCOPE_CELLS))
    benchmark.pedantic(lambda scope: store_of.load_scope(scope), setup=lambda: ((next(scopes),), {}), rounds=50)
    assert len(store_of.load_scope("user:1")) == SCOPE_CELLS
    record(f"{store}_scope_load_{SCOPE_CELLS}_cells_s", benchmark.stats["median"])
    record_ratio(
        "postgres_over_chroma_server_scope_load",
        f"postgres_scope_load_{SCOPE_CELLS}_cells_s",
        f"chroma_server_scope_load_{SCOPE_CELLS}_cells_s",
    )
