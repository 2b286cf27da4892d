"""Scopes beyond RAM (`MemoryConfig(resident_cells=N)`): the scopes in use stay in RAM, the least recently used go,
and whatever a call needs is loaded from the store first (an embedded one, or a namespace on a Chroma server started
here); nothing is lost through eviction."""

import uuid
from collections.abc import Callable

import numpy as np
import pytest

from reference import CellularMemory, InvalidInputError, MemoryConfig, NotFoundError
from reference.common.chroma import server_client
from reference.encoders import MockEncoder

DIM = 64
SCOPES = 8
CELLS = 60


def scope_name(scope: int) -> str:
    return f"user:{scope}"


def vectors_of(scope: int, count: int = CELLS) -> np.ndarray:
    return np.random.default_rng(scope).standard_normal((count, DIM)).astype(np.float32)


Opener = Callable[[int | None], CellularMemory]
"""Opens a memory with this resident budget on the test's store."""


@pytest.fixture(params=["embedded", "server"])
def opener(request, tmp_path) -> Opener:
    """One store for the test: a path, or a namespace of its own on the module's Chroma server."""
    if request.param == "embedded":
        path = str(tmp_path / "store")
        return lambda budget: CellularMemory(path, encoder=MockEncoder(DIM), config=MemoryConfig(resident_cells=budget))
    address = request.getfixturevalue("chroma_server").address
    namespace = f"t{uuid.uuid4().hex[:12]}"
    return lambda budget: CellularMemory(
        client=server_client(address),
        encoder=MockEncoder(DIM),
        config=MemoryConfig(namespace=namespace, resident_cells=budget),
    )


def filled(opener: Opener, budget: int | None = 150) -> CellularMemory:
    """SCOPES scopes of CELLS cells each, written a few at a time, scopes interleaved."""
    memory = opener(budget)
    for start in range(0, CELLS, 20):
        for scope in range(SCOPES):
            part = slice(start, start + 20)
            texts = [f"{scope_name(scope)} note {i} about the harbour" for i in range(part.start, part.stop)]
            ids = [f"{scope}-{i}" for i in range(part.start, part.stop)]
            memory.add(texts, vectors=vectors_of(scope)[part], ids=ids, scope=scope_name(scope))
    return memory


def resident(memory: CellularMemory) -> int:
    return len(memory._state.table)


def test_a_memory_over_its_budget_keeps_recent_scopes_and_finds_every_cell_of_the_others(opener):
    with filled(opener) as memory:
        assert resident(memory) <= 150 + 20  # the budget, and the scope a write needs
        assert len(memory) == SCOPES * CELLS
        assert [memory.count(scope=scope_name(s)) for s in range(SCOPES)] == [CELLS] * SCOPES
        loads = memory._resident.loads
        for scope in range(SCOPES):
            for i, vector in enumerate(vectors_of(scope)):
                [hit] = memory.search(vector, k=1, scope=scope_name(scope))
                assert hit.id == f"{scope}-{i}"
            assert memory.search("harbour", k=CELLS + 5, scope=scope_name(scope))[-1].id.startswith(f"{scope}-")
            assert resident(memory) <= 150 + CELLS
            memory.check_invariants()
        assert memory._resident.loads > loads  # scopes out of RAM were loaded
        assert memory.ids(scope=scope_name(0)) == [f"0-{i}" for i in range(CELLS)]


def test_reopening_loads_nothing_until_a_scope_is_used(opener):
    filled(opener).close()
    with opener(150) as memory:
        assert resident(memory) == 0 and len(memory) == SCOPES * CELLS
        assert memory.count(scope=scope_name(3)) == CELLS
        [hit] = memory.search(vectors_of(3)[7], k=1, scope=scope_name(3))
        assert hit.id == "3-7" and resident(memory) == CELLS
        assert memory.search("harbour", scope="user:nobody") == [] and resident(memory) == CELLS
        memory.check_invariants()


def test_groups_are_loaded_as_stored_and_access_counts_survive_eviction(opener):
    with filled(opener, budget=100) as memory:
        groups = {f"0-{i}": memory.get(f"0-{i}").group_id for i in range(CELLS)}
        for _ in range(3):
            memory.search(vectors_of(0)[5], k=1, scope=scope_name(0))
        seen = memory.get("0-5").access_count
        assert seen >= 3
        for scope in range(1, SCOPES):  # scope 0 goes out of RAM
            memory.search(vectors_of(scope)[0], k=1, scope=scope_name(scope))
        assert "0-5" not in memory._state.table.row_of
        assert memory.get("0-5").access_count == seen  # loaded again, from the store
        assert {f"0-{i}": memory.get(f"0-{i}").group_id for i in range(CELLS)} == groups
        memory.check_invariants()


def test_calls_by_id_load_the_scope_they_need(opener):
    with filled(opener, budget=70) as memory:
        memory.search(vectors_of(7)[0], k=1, scope=scope_name(7))  # scope 0 is out of RAM now
        assert "0-1" in memory and "0-1" not in memory._state.table.row_of
        record = memory.update("0-1", text="user:0 note about the lighthouse")
        assert record.text.endswith("lighthouse") and memory.get("0-1").text == record.text
        memory.search(vectors_of(6)[0], k=1, scope=scope_name(6))
        assert memory.delete(["0-2"]) == 1 and "0-2" not in memory
        memory.search(vectors_of(5)[0], k=1, scope=scope_name(5))
        with pytest.raises(InvalidInputError):  # an id another scope holds, out of RAM
            memory.add(["taken"], ids=["0-3"], scope=scope_name(1))
        with pytest.raises(InvalidInputError, match="outside its scope"):
            memory.add(["taken"], ids=["0-3"], scope=scope_name(1), upsert=True)
        assert memory.get_many(["0-3", "1-3", "nobody"])[1].id == "1-3"
        with pytest.raises(NotFoundError):
            memory.get("nobody")
        assert memory.count(scope=scope_name(0)) == CELLS - 1
        assert memory.delete(scope=scope_name(4)) == CELLS and memory.count(scope=scope_name(4)) == 0
        memory.check_invariants()


def test_a_write_into_a_scope_out_of_ram_keeps_what_it_held(opener):
    with filled(opener, budget=70) as memory:
        memory.search(vectors_of(7)[0], k=1, scope=scope_name(7))
        memory.add(["one more"], vectors=vectors_of(99, 1), ids=["0-new"], scope=scope_name(0))
        assert memory.ids(scope=scope_name(0)) == [f"0-{i}" for i in range(CELLS)] + ["0-new"]
        for i, vector in enumerate(vectors_of(0)):
            assert memory.search(vector, k=1, scope=scope_name(0))[0].id == f"0-{i}"
        memory.check_invariants()


def test_rows_let_go_are_filled_again(opener):
    """Cycling through every scope many times does not grow the table: rows of cells let go are reused."""
    with filled(opener, budget=100) as memory:
        for _ in range(5):
            for scope in range(SCOPES):
                memory.search(vectors_of(scope)[1], k=1, scope=scope_name(scope))
        assert memory._state.table.size <= 100 + 2 * CELLS + 20
        memory.check_invariants()


def test_resident_cells_needs_a_store():
    with pytest.raises(InvalidInputError, match=r"path=\.\.\., client=\.\.\. or dsn="):
        CellularMemory(encoder=MockEncoder(DIM), config=MemoryConfig(resident_cells=10))
    for wrong in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError, match="resident_cells"):
            MemoryConfig(resident_cells=wrong)


def test_a_scope_is_estimated_when_it_loads_for_the_target_in_force(opener):
    """A scope large enough to be probed gets its recall estimate as it loads; one let go while the target changed
    is estimated again for the new target when it comes back."""
    data = np.random.default_rng(8).standard_normal((4_000, DIM)).astype(np.float32)
    with opener(2_500) as memory:
        memory.add([f"big {i}" for i in range(2_000)], vectors=data[:2_000], scope="big")
        memory.add([f"other {i}" for i in range(2_000)], vectors=data[2_000:], scope="other")  # "big" goes
        assert memory._state.scopes.count(memory._state.table.known_scope("big")) == 0
        memory.set_search_options(target_recall=0.9)
        assert memory.search(data[3], k=1, scope="big")[0].text == "big 3"
        state = memory._state
        code = state.table.known_scope("big")
        estimated = state.probe_of(code).estimated_recall
        assert estimated is not None and 0.9 <= estimated < 0.95  # made for 0.9: one for 0.95 would read above 0.95
    with opener(2_500) as reopened:
        reopened.search(data[3], k=1, scope="big")
        assert reopened._state.probe_of(reopened._state.table.known_scope("big")).estimated_recall is not None
