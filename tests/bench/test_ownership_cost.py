"""What one owner per namespace costs on a Chroma server (`reference/store/lease.py`), against a server started here:
a search and a one-cell add with the lease checked, timed against the same memory with its check taken out in the
same run; one round trip to the server, the least the other rule (each process reads the others' writes before it
answers) would add to every search; how long a second opener waits to be refused, and how long after its owner is
killed a namespace is served again, with the default lease."""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from itertools import cycle

import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from harness.measure.server_processes import ChromaServer
from reference import CellularMemory, MemoryConfig, NamespaceOwnedError
from reference.common.chroma import server_client
from reference.encoders import MockEncoder
from reference.store.lease import FencedStore
from tests.bench.conftest import record, record_ratio, time_queries
from tests.bench.test_agent_loop import loop_texts
from tests.server import test_ownership
from tests.server.test_ownership import Owner

CELLS = 5_000
DIM = 384
LEASE = MemoryConfig().lease_seconds


def open_memory(address: str, namespace: str) -> CellularMemory:
    config = MemoryConfig(namespace=namespace)
    return CellularMemory(client=server_client(address), encoder=MockEncoder(DIM), config=config)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ChromaServer(tmp_path_factory.mktemp("ownership-bench")) as running:
        yield running


@pytest.fixture(scope="module")
def owned(server):
    data = clustered_unit_vectors(CELLS, dim=DIM, clusters=50, queries=200, seed=5)
    memory = open_memory(server.address, "bench")
    memory.add(loop_texts(CELLS), vectors=data.vectors)
    yield memory, data.queries
    memory.close()


@contextmanager
def checked(memory: CellularMemory, check: bool):
    """The memory as it is, or with its lease checks taken out (before every call, and around every write)."""
    state = memory._state
    fence, store = state.fence, state.store
    if not check:
        assert isinstance(store, FencedStore)
        state.fence, state.store = None, store.store
    try:
        yield
    finally:
        state.fence, state.store = fence, store


@pytest.mark.parametrize("check", [True, False], ids=["lease_checked", "unchecked"])
def test_vector_search(benchmark, owned, check):
    memory, queries = owned
    vectors = cycle(queries)
    with checked(memory, check):
        time_queries(
            benchmark,
            lambda vector: memory.search(vector, k=10),
            rounds=2_000,
            warmup_rounds=100,
            setup=lambda: ((next(vectors),), {}),
        )
    name = "lease_checked" if check else "unchecked"
    record(f"ownership_vector_search_{name}_s", benchmark.stats["median"])
    record_ratio(
        "ownership_search_lease_checked_over_unchecked",
        "ownership_vector_search_lease_checked_s",
        "ownership_vector_search_unchecked_s",
    )


@pytest.mark.parametrize("check", [True, False], ids=["lease_checked", "unchecked"])
def test_one_cell_add(benchmark, owned, check):
    memory, queries = owned
    vectors = cycle(queries)
    with checked(memory, check):
        benchmark.pedantic(
            lambda vector: memory.add(["one more turn"], vectors=[vector]),
            setup=lambda: ((next(vectors),), {}),
            rounds=100,
            warmup_rounds=5,
        )
    name = "lease_checked" if check else "unchecked"
    record(f"ownership_one_cell_add_{name}_s", benchmark.stats["median"])
    record_ratio(
        "ownership_add_lease_checked_over_unchecked",
        "ownership_one_cell_add_lease_checked_s",
        "ownership_one_cell_add_unchecked_s",
    )


def test_lease_check(benchmark, owned):
    memory, _ = owned
    benchmark(memory._store.lease.check)
    record("ownership_lease_check_s", benchmark.stats["median"])


def test_server_round_trip(benchmark, owned, server):
    """A count of the namespace's cells: one request, the least that reading other processes' writes costs."""
    collection = server_client(server.address).get_collection("bench_cells", embedding_function=None)
    benchmark.pedantic(collection.count, rounds=300, warmup_rounds=10)
    record("ownership_server_round_trip_s", benchmark.stats["median"])
    record_ratio(
        "ownership_round_trip_over_unchecked_search",
        "ownership_server_round_trip_s",
        "ownership_vector_search_unchecked_s",
    )


def test_second_opener_refused(benchmark, server):
    with open_memory(server.address, "refusing"):

        def refused() -> None:
            with pytest.raises(NamespaceOwnedError):
                open_memory(server.address, "refusing")

        benchmark.pedantic(refused, rounds=10, warmup_rounds=1)
    record("ownership_second_opener_refused_after_s", benchmark.stats["median"])


def test_served_again_after_a_kill(benchmark, server):
    """From the SIGKILL of the owner (a process writing batches) until another process has opened the namespace."""
    owners: list[Owner] = []

    def kill_owner():
        owner = Owner(server.address, "killed", f"k{len(owners)}", lease=LEASE)
        owners.append(owner)
        while not owner.acknowledged:
            time.sleep(0.01)
        owner.process.send_signal(signal.SIGKILL)
        owner.finish()
        return (), {}

    taker = test_ownership.open_memory  # the owner's encoder and dimension
    benchmark.pedantic(lambda: taker(server.address, "killed", LEASE).close(), setup=kill_owner, rounds=3)
    record("ownership_served_again_after_kill_s", benchmark.stats["median"])
    record("ownership_lease_s", LEASE)
