"""Scopes beyond RAM on a Chroma server (`MemoryConfig(resident_cells=N)` with `client=`), against a real `chroma
run`: a scope is read from the server by its own metadata key when it is used, a store of the earlier layout (the
scope inside each cell's JSON alone) is brought up to it once, however often that is cut short, and an owner that
lost its lease reads and writes no scope. The behaviour shared with the embedded store is tested on both in
`tests/unit/test_residency.py`."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pytest

from reference import CellularMemory, LeaseLostError, MemoryConfig
from reference.common.chroma import server_client
from reference.common.errors import BackendUnavailableError
from reference.encoders import MockEncoder
from reference.store.ledger import LAYOUT, Ledger

DIM = 64
SCOPES = 30
CELLS = 20
BUDGET = 100
LEASE = 1.0


def open_memory(address: str, namespace: str, budget: int | None = BUDGET, lease: float = 30.0) -> CellularMemory:
    config = MemoryConfig(namespace=namespace, resident_cells=budget, lease_seconds=lease)
    return CellularMemory(client=server_client(address), encoder=MockEncoder(DIM), config=config)


def vectors_of(scope: int) -> np.ndarray:
    return np.random.default_rng(scope).standard_normal((CELLS, DIM)).astype(np.float32)


def write_scopes(memory: CellularMemory, scopes: range = range(SCOPES)) -> None:
    """Turns of a few cells, scopes interleaved: each scope's cells `{scope}-{i}`, about its harbour."""
    for start in range(0, CELLS, 5):
        for scope in scopes:
            part = range(start, start + 5)
            memory.add(
                [f"user {scope} note {i} about the harbour" for i in part],
                vectors=vectors_of(scope)[start : start + 5],
                ids=[f"{scope}-{i}" for i in part],
                scope=f"user:{scope}",
            )


def resident(memory: CellularMemory) -> int:
    return len(memory._state.table)


def each_cell_found(memory: CellularMemory, scope: int) -> None:
    for i, vector in enumerate(vectors_of(scope)):
        [hit] = memory.search(vector, k=1, scope=f"user:{scope}")
        assert hit.id == f"{scope}-{i}"


@pytest.fixture
def namespace() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def test_scopes_out_of_ram_are_loaded_from_the_server_and_nothing_is_lost_or_crosses(chroma_server, namespace):
    address = chroma_server.address
    with open_memory(address, namespace) as memory:
        write_scopes(memory)
        assert resident(memory) <= BUDGET + 5
        assert len(memory) == SCOPES * CELLS
        assert sorted(memory._store.store.scopes()) == sorted(f"user:{s}" for s in range(SCOPES))
        sampled = random.Random(7).sample(range(SCOPES - 5), 6)  # written long ago: out of RAM
        for scope in sampled:
            assert f"{scope}-0" not in memory._state.table.row_of
            assert memory.count(scope=f"user:{scope}") == CELLS
            each_cell_found(memory, scope)
            hits = memory.search("harbour", k=CELLS * 3, scope=f"user:{scope}")
            assert len(hits) == CELLS and {hit.id.split("-")[0] for hit in hits} == {str(scope)}
        assert memory._resident.loads >= len(sampled)
        memory.check_invariants()
        gone, slept = sampled[0], sampled[1]
        for scope in set(range(SCOPES)) - {gone, slept}:  # both go out of RAM again
            memory.search(vectors_of(scope)[0], k=1, scope=f"user:{scope}")
        assert f"{gone}-0" not in memory._state.table.row_of and f"{slept}-0" not in memory._state.table.row_of
        report = memory.consolidate(scope=f"user:{slept}")  # loads the scope, sleeps it alone
        assert report.groups_before >= 1 and memory.count(scope=f"user:{slept}") == CELLS
        each_cell_found(memory, slept)
        assert memory.delete(scope=f"user:{gone}") == CELLS
        assert memory.count(scope=f"user:{gone}") == 0 and f"{gone}-3" not in memory
        assert f"user:{gone}" not in memory._store.store.scopes()
        assert len(memory) == (SCOPES - 1) * CELLS
        memory.check_invariants()
    with open_memory(address, namespace) as reopened:
        assert resident(reopened) == 0 and len(reopened) == (SCOPES - 1) * CELLS
        assert reopened.count(scope=f"user:{slept}") == CELLS and resident(reopened) == 0
        each_cell_found(reopened, slept)
        assert resident(reopened) == CELLS
        assert reopened.search("harbour", k=5, scope=f"user:{gone}") == []
        assert len(reopened.search("harbour", k=(SCOPES + 1) * CELLS)) == (SCOPES - 1) * CELLS  # every scope
        reopened.check_invariants()


def test_new_groups_after_reopening_never_take_the_ids_of_groups_out_of_ram(chroma_server, namespace):
    address = chroma_server.address
    with open_memory(address, namespace) as memory:
        write_scopes(memory, range(6))
        stored = {memory.get(f"{s}-{i}").group_id for s in range(6) for i in range(CELLS)}
    with open_memory(address, namespace) as reopened:
        write_scopes(reopened, range(6, 12))
        new = {reopened.get(f"{s}-{i}").group_id for s in range(6, 12) for i in range(CELLS)}
        assert not new & stored
        each_cell_found(reopened, 0)
        reopened.check_invariants()


def old_layout(address: str, namespace: str) -> None:
    """Rewrite the namespace's cells as versions before the scope key wrote them (`seq`, `cell` and `vec` in each
    cell's metadata, no ledger)."""
    client = server_client(address)
    cells = client.get_collection(f"{namespace}_cells")
    found = cells.get(include=["embeddings", "documents", "metadatas"])
    assert all("scope" in metadata for metadata in found["metadatas"])
    client.delete_collection(cells.name)
    client.delete_collection(f"{namespace}_scopes")
    rewritten = client.create_collection(
        cells.name, configuration={"hnsw": {"space": "cosine"}}, metadata=cells.metadata
    )
    old = [{key: value for key, value in metadata.items() if key != "scope"} for metadata in found["metadatas"]]
    rewritten.add(ids=found["ids"], embeddings=found["embeddings"], documents=found["documents"], metadatas=old)


def test_a_store_of_the_earlier_layout_is_brought_up_to_date_once_even_when_cut_short(
    chroma_server, namespace, monkeypatch
):
    address = chroma_server.address
    with open_memory(address, namespace, budget=None) as memory:
        write_scopes(memory, range(8))
        groups = {cell: memory.get(cell).group_id for cell in memory.ids()}
    old_layout(address, namespace)
    cells = server_client(address).get_collection(f"{namespace}_cells")
    half = cells.get(include=[])["ids"][::2]  # a migration that gave half the cells their key, then died
    cells.update(ids=half, metadatas=[{"scope": f"user:{cell.split('-')[0]}"} for cell in half])

    def dies(ledger: Ledger, seqs: int, groups: int) -> None:
        raise BackendUnavailableError("the server went away before the migration was marked done")

    monkeypatch.setattr(Ledger, "settle", dies)
    with pytest.raises(BackendUnavailableError, match="marked done"):
        open_memory(address, namespace)
    monkeypatch.undo()
    with open_memory(address, namespace) as migrated:
        assert resident(migrated) == 0 and len(migrated) == 8 * CELLS
        for scope in range(8):
            assert migrated.count(scope=f"user:{scope}") == CELLS
            each_cell_found(migrated, scope)
        assert {cell: migrated.get(cell).group_id for cell in groups} == groups
        write_scopes(migrated, range(8, 10))  # new groups numbered past the old ones
        assert not {migrated.get(f"8-{i}").group_id for i in range(CELLS)} & set(groups.values())
        migrated.check_invariants()
    metadatas = cells.get(include=["metadatas"])["metadatas"]
    assert all(metadata["scope"].startswith("user:") for metadata in metadatas)
    assert server_client(address).get_collection(f"{namespace}_scopes").metadata["layout"] == LAYOUT
    with open_memory(address, namespace, budget=None) as whole:  # and every cell loads as before
        assert len(whole) == 10 * CELLS
        each_cell_found(whole, 3)


def test_an_owner_that_lost_its_lease_reads_and_writes_no_scope(chroma_server, namespace):
    address = chroma_server.address
    first = open_memory(address, namespace, budget=50, lease=LEASE)
    write_scopes(first, range(6))
    assert "0-0" not in first._state.table.row_of  # user:0 is out of RAM
    first._store.lease._stop.set()  # its renewals stop (cut off from the server, as far as the server can tell)
    second = open_memory(address, namespace, budget=50, lease=LEASE)
    second.add(["the second owner's note"], vectors=vectors_of(99)[:1], ids=["second-0"], scope="user:0")
    assert not first._store.lease.renew()
    for call in (
        lambda: first.count(scope="user:0"),
        lambda: first.search(vectors_of(0)[0], k=1, scope="user:0"),
        lambda: first.ids(scope="user:0"),
        lambda: "0-1" in first,
        lambda: first.get("0-1"),
        lambda: first.delete(scope="user:0"),
        lambda: first.consolidate(scope="user:0"),
        lambda: first.add(["too late"], scope="user:0"),
    ):
        with pytest.raises(LeaseLostError, match="no longer served by this process"):
            call()
    first.close()
    assert second.count(scope="user:0") == CELLS + 1 and len(second) == 6 * CELLS + 1
    each_cell_found(second, 0)
    second.close()
