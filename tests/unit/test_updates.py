"""Updates: a cell replaced in place (text, vector, metadata), upserts, get_many, and superseded facts applied."""

from dataclasses import asdict

import numpy as np
import pytest

from reference import Cell, CellularMemory, InvalidInputError, NotFoundError


def fields(record: Cell) -> dict:
    """A record as plain values (its vector as a list), to compare records."""
    return asdict(record) | {"vector": record.vector.tolist()}


def test_after_update_no_search_returns_the_old_text(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        [cell, other] = memory.add(["Alice lives in Paris", "Bob plays the piano"])
        old_vector = memory.get(cell).vector
        memory.update(cell, text="Alice moved to Berlin")
        for query in ("Paris", "Alice lives in Paris", old_vector, "Berlin"):
            assert all(h.text != "Alice lives in Paris" for h in memory.search(query, k=5))
        assert memory.search("Berlin", k=1)[0].id == cell  # the lexical index has the new text
        record = memory.get(cell)
        assert record.text == "Alice moved to Berlin"
        assert [entry["text"] for entry in record.history] == ["Alice lives in Paris"]
        assert not np.allclose(record.vector, old_vector)  # re-embedded
        assert memory.get(other).text == "Bob plays the piano"
        memory.check_invariants()


def test_the_lexical_and_entity_indexes_forget_the_old_text(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        [cell] = memory.add(["Contact maria.lopez@example.com about the zebra invoice"])
        memory.update(cell, text="Contact the finance team")
        state = memory._state
        assert state.lexical.search("zebra", 5)[0].size == 0
        assert state.entities.matches(frozenset({"maria.lopez@example.com"})) == {}


def test_an_update_keeps_what_it_does_not_change(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        [cell] = memory.add(
            ["a fact"], kind="fact", metadata={"source": "chat"}, timestamps=[1_700_000_000.0], scope="user:alice"
        )
        before = memory.get(cell)
        memory.update(cell, metadata={"source": "email"})
        after = memory.get(cell)
        assert after.metadata == {"source": "email"} and after.text == "a fact" and after.history == []
        assert (after.kind, after.importance, after.timestamp, after.scope, after.episode) == (
            before.kind,
            before.importance,
            before.timestamp,
            before.scope,
            before.episode,
        )
        assert np.array_equal(after.vector, before.vector)  # metadata alone is not re-embedded


def test_an_update_with_a_vector_uses_it(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        [cell] = memory.add(["a"])
        vector = np.zeros(mock_encoder.dim)
        vector[3] = 2.0
        memory.update(cell, vector=vector)
        assert memory.get(cell).vector[3] == pytest.approx(1.0)
        assert memory.search(vector, k=1)[0].id == cell


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, InvalidInputError),
        ({"text": ""}, InvalidInputError),
        ({"text": 3}, InvalidInputError),
        ({"vector": [1.0, 2.0]}, InvalidInputError),
        ({"vector": [float("nan")] * 384}, InvalidInputError),
        ({"metadata": "x"}, InvalidInputError),
    ],
)
def test_a_bad_update_is_refused_and_changes_nothing(mock_encoder, args, error):
    with CellularMemory(encoder=mock_encoder) as memory:
        [cell] = memory.add(["a"])
        before = memory.get(cell)
        with pytest.raises(error):
            memory.update(cell, **args)
        assert fields(memory.get(cell)) == fields(before)


def test_updating_an_unknown_id_is_not_found(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        with pytest.raises(NotFoundError):
            memory.update("nope", text="x")
        with pytest.raises(InvalidInputError):
            memory.update(["a"], text="x")


def test_upsert_is_idempotent_and_overwrites_by_id(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        memory.add(["one", "two"], ids=["a", "b"], upsert=True)
        memory.add(["one", "two"], ids=["a", "b"], upsert=True)
        assert len(memory) == 2 and memory.get("a").history == []  # the same text again is no change
        memory.add(["uno", "three"], ids=["a", "c"], upsert=True)
        assert [r.text for r in memory.get_many(["c", "a", "b"])] == ["three", "uno", "two"]
        assert [entry["text"] for entry in memory.get("a").history] == ["one"]
        with pytest.raises(InvalidInputError, match="upsert"):
            memory.add(["again"], ids=["a"])
        memory.check_invariants()


def test_get_many_keeps_the_order_asked_and_skips_unknown_ids(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        ids = memory.add(["a", "b", "c"])
        assert [r.id for r in memory.get_many([ids[2], "unknown", ids[0]])] == [ids[2], ids[0]]
        assert memory.get_many([]) == []
        with pytest.raises(InvalidInputError):
            memory.get_many("not a list")


def test_updates_persist_and_survive_reopening(tmp_path, mock_encoder):
    path = str(tmp_path / "store")
    with CellularMemory(path, encoder=mock_encoder) as memory:
        [cell, other] = memory.add(["Alice lives in Paris", "Bob plays the piano"], scope="user:alice")
        memory.update(cell, text="Alice moved to Berlin")
        memory.add(["Bob plays the violin"], ids=[other], upsert=True, scope="user:alice")
        expected = [fields(r) for r in memory.get_many([cell, other])]
    with CellularMemory(path, encoder=mock_encoder) as memory:
        assert [fields(r) for r in memory.get_many([cell, other])] == expected
        assert memory.search("Berlin", k=1, scope="user:alice")[0].id == cell
        assert all(h.text != "Alice lives in Paris" for h in memory.search("Paris", k=5))
        memory.check_invariants()


def test_apply_supersessions_keeps_the_newer_fact_and_the_older_text_in_its_history(mock_encoder):
    clock = iter(range(1_700_000_000, 1_700_001_000)).__next__
    with CellularMemory(encoder=mock_encoder, clock=lambda: float(clock())) as memory:
        [old] = memory.add(["Alice lives in Paris"])
        [new] = memory.add(["Alice lives in Berlin"])
        memory.consolidate()
        assert memory.conflicts()
        applied = memory.apply_supersessions()
        assert [(c.first, c.second) for c in applied] == [(old, new)]
        assert old not in memory and memory.get(new).text == "Alice lives in Berlin"
        assert [entry["text"] for entry in memory.get(new).history] == ["Alice lives in Paris"]
        assert memory.conflicts() == []
        memory.check_invariants()
