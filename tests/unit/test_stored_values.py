"""Values that could break a store: numbers it cannot hold are refused before anything changes, what a cell
holds is a copy normalised as the store gives it back, and a store holding a value written before these checks
still opens, naming the cell."""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import datetime

import pytest

from reference import CellularMemory, InvalidInputError, MemoryConfig

BIG = 10**400


@pytest.fixture
def memory(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        memory.add(["the harbour opens at dawn", "the lighthouse keeper sleeps late"])
        yield memory


@pytest.mark.parametrize(
    "metadata", [{"n": BIG}, {"n": -(2**63) - 1}, {"n": [1, {"m": BIG}]}, {"n": float("inf")}, {"n": {1: 2}}]
)
def test_a_number_or_key_no_store_holds_is_refused_and_changes_nothing(memory, metadata):
    [cell] = memory.ids()[:1]
    with pytest.raises(InvalidInputError, match="metadata"):
        memory.add(["a third note"], metadata=metadata)
    with pytest.raises(InvalidInputError, match="metadata"):
        memory.update(cell, metadata=metadata)
    assert len(memory) == 2 and memory.get(cell).metadata == {}
    memory.check_invariants()


def test_the_largest_integers_a_store_holds_are_kept_exactly(tmp_path, mock_encoder):
    edges = {"low": -(2**63), "high": 2**63 - 1}
    with CellularMemory(str(tmp_path), encoder=mock_encoder) as memory:
        [cell] = memory.add(["edge values"], metadata=edges)
        assert memory.search("edge", where={"high": {"$gte": 2**63 - 1}})[0].id == cell
    with CellularMemory(str(tmp_path), encoder=mock_encoder) as memory:
        assert memory.get(cell).metadata == edges


@pytest.mark.parametrize(
    "restriction",
    [
        {"where": {"n": {"$gt": BIG}}},
        {"where": {"n": BIG}},
        {"where": {"n": {"$in": [1, -BIG]}}},
        {"since": BIG},
        {"until": -BIG},
        {"since": float("nan")},
    ],
)
def test_a_search_restriction_beyond_what_a_store_holds_is_a_typed_error(memory, restriction):
    with pytest.raises(InvalidInputError):
        memory.search("harbour", **restriction)


def test_a_filter_nested_deeper_than_the_limit_is_a_typed_error(memory):
    where: dict = {"kind": "note"}
    for _ in range(900):
        where = {"$and": [where, {"kind": "note"}]}
    with pytest.raises(InvalidInputError, match="deeper than"):
        memory.search("harbour", where=where)
    shallow: dict = {"kind": "note"}
    for _ in range(20):
        shallow = {"$or": [shallow, {"kind": "other"}]}
    assert memory.search("harbour", where=shallow) == []


def test_timestamps_beyond_the_calendar_are_refused_and_write_nothing(memory):
    for stamp in (BIG, -BIG, 1e300, float("nan")):
        with pytest.raises(InvalidInputError, match="timestamps"):
            memory.add(["a late note"], timestamps=[stamp])
    assert len(memory) == 2
    try:
        memory.search("harbour", since=datetime.min)
    except InvalidInputError as error:  # where the local calendar cannot place it
        assert "timestamp" in str(error)


@pytest.mark.parametrize("layout", ["memory", "embedded"])
def test_a_cell_holds_a_copy_of_its_metadata_as_the_store_gives_it_back(tmp_path, mock_encoder, layout):
    path = None if layout == "memory" else str(tmp_path / "store")
    given = {"tags": ["a", "b"], "pair": (1, 2), "nested": {"deep": [1, {"x": None}]}, "flag": True}
    with CellularMemory(path, encoder=mock_encoder) as memory:
        [cell] = memory.add(["a note with tags"], metadata=given)
        given["tags"].append("changed by the caller")
        given["nested"]["deep"].append("changed too")
        hit = memory.search("note with tags", k=1)[0]
        hit.metadata["tags"].append("changed through a hit")
        memory.get(cell).metadata["nested"]["deep"].clear()
        memory.get_many([cell])[0].metadata["tags"].clear()
        held = memory.get(cell).metadata
        assert held == {"tags": ["a", "b"], "pair": [1, 2], "nested": {"deep": [1, {"x": None}]}, "flag": True}
        memory.update(cell, text="a note with other words")
        assert memory.get(cell).history[0]["text"] == "a note with tags"
        memory.get(cell).history.clear()
        assert len(memory.get(cell).history) == 1
    if path is not None:
        with CellularMemory(path, encoder=mock_encoder) as reopened:
            assert reopened.get(cell).metadata == held


def test_a_store_holding_a_number_it_cannot_index_opens_and_names_the_cell(tmp_path, mock_encoder, caplog):
    """As a store written before metadata was checked holds it: the value put in its file directly."""
    path = tmp_path / "store"
    with CellularMemory(str(path), encoder=mock_encoder) as memory:
        [bad, good] = memory.add(["the bad cell", "the good cell"], metadata=[{"n": 1}, {"n": 2}])
    with sqlite3.connect(path / "magbench.sqlite3") as db:
        db.execute("UPDATE cells SET meta = ? WHERE id = ?", (json.dumps({"n": BIG}), bad))
    with caplog.at_level(logging.WARNING), CellularMemory(str(path), encoder=mock_encoder) as memory:
        assert bad in caplog.text
        assert {h.id for h in memory.search("cell", k=2)} == {bad, good}
        assert [h.id for h in memory.search("cell", where={"n": {"$gte": 2}})] == [good]
        memory.update(bad, metadata={"n": 3})
        assert [h.id for h in memory.search("cell", where={"n": {"$gte": 3}})] == [bad]
        memory.check_invariants()


def test_an_upsert_never_replaces_another_scopes_cell(mock_encoder):
    with CellularMemory(encoder=mock_encoder, config=MemoryConfig()) as memory:
        memory.add(["bank pin is 4321"], ids=["note-1"], scope="user:alice")
        with pytest.raises(InvalidInputError, match="outside its scope"):
            memory.add(["my own note"], ids=["note-1"], scope="user:bob", upsert=True)
        with pytest.raises(InvalidInputError, match="outside its scope"):
            memory.add(["two notes", "at once"], ids=["note-2", "note-1"], scope="user:bob", upsert=True)
        assert memory.count(scope="user:alice") == 1 and memory.count(scope="user:bob") == 0
        record = memory.get("note-1")
        assert (record.text, record.scope, record.history) == ("bank pin is 4321", "user:alice", [])
        memory.add(["bank pin is 9876"], ids=["note-1"], scope="user:alice", upsert=True)
        assert memory.get("note-1").text == "bank pin is 9876"
        with pytest.raises(KeyError):
            memory.update("note-1", text="read through another scope", scope="user:bob")
        memory.check_invariants()
