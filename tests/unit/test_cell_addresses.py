"""`CellTable.addresses`: each row's id and text objects where they lie, and `CellTable.item_arrays`, where the
lists' items lie, through new rows, released rows filled again and a table grown past its capacity; a stale address
is named (`check_invariants`)."""

from __future__ import annotations

import ctypes

import numpy as np

from reference import CellularMemory
from reference.cells.table import LIST_ITEMS_AT, CellBatch, CellTable
from reference.encoders import MockEncoder
from reference.kernels.probe import ITEM


def batch(ids: list[str]) -> CellBatch:
    count = len(ids)
    return CellBatch(
        ids=ids,
        texts=[f"the text of {cell}" for cell in ids],
        vectors=np.zeros((count, 4), dtype=np.float32),
        groups=np.zeros(count, dtype=np.int64),
        kinds=["episodic"] * count,
        importance=np.zeros(count),
        timestamps=np.zeros(count),
        access=np.zeros(count, dtype=np.int64),
        metadata=[{}] * count,
        conflicts=[[]] * count,
        episodes=[""] * count,
        scopes=[""] * count,
        histories=[[]] * count,
    )


def recorded(table: CellTable) -> bool:
    rows = np.arange(table.size)
    return (
        table.address_problems(rows) == []
        and table.addresses[: table.size].tolist() == [[id(table.ids[row]), id(table.texts[row])] for row in rows]
        and all(items_hold(base, column) for base, column in zip(table.item_arrays.tolist(), listed(table)))
    )


def listed(table: CellTable) -> list[list]:
    return [table.ids, table.texts, table.metadata]


def items_hold(base: int, column: list) -> bool:
    """Whether the item array at `base` holds the addresses of `column`'s objects (read back from memory)."""
    if LIST_ITEMS_AT is None:
        return base == 0
    return [ctypes.c_void_p.from_address(base + ITEM * i).value for i in range(len(column))] == list(map(id, column))


def test_the_addresses_follow_rows_written_released_refilled_and_grown():
    table = CellTable(4, keep_vectors=False)
    table.append(batch([f"a{i}" for i in range(10)]))
    assert recorded(table)
    table.kill([2, 5])
    table.release([2, 5])
    assert recorded(table)
    rows = table.append(batch(["b0", "b1", "b2"]))  # two released rows filled again, one new
    assert rows.tolist() == [2, 5, 10] and recorded(table)
    table.append(batch([f"c{i}" for i in range(3000)]))  # past the first capacity: every column grown
    assert table.size == 3011 and recorded(table)


def test_a_stale_address_is_named():
    table = CellTable(4, keep_vectors=False)
    rows = table.append(batch([f"a{i}" for i in range(5)]))
    table.addresses[3, 1] += 64
    assert table.address_problems(rows) == ["a cell's id or text lies elsewhere than its recorded address"]
    table.addresses[3, 1] -= 64
    table.item_arrays[1] += 8
    assert table.address_problems(rows) == ["the lists' items lie elsewhere than their recorded addresses"]


def test_a_memory_checks_its_addresses():
    with CellularMemory(encoder=MockEncoder(8)) as mem:
        mem.add([f"note {i}" for i in range(20)])
        mem.delete([mem.search("note 3", k=1)[0].id])
        mem.check_invariants()
