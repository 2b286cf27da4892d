"""Filtered search: `where` over metadata (Chroma's syntax) and a time range, with k hits whenever k match."""

import zlib

import numpy as np
import pytest

from reference import CellularMemory, InvalidInputError
from reference.indexes.filters import MetadataIndex, Within

CELLS = 3000


@pytest.fixture(scope="module")
def memory():
    from reference.encoders.mock import MockEncoder

    rng = np.random.default_rng(5)
    encoder = MockEncoder(dim=64)
    memory = CellularMemory(encoder=encoder)
    metadata = [
        {"user": f"u{i % 100}", "rank": i % 50, "kind": ["note", "task", "mail"][i % 3], "done": i % 2 == 0}
        for i in range(CELLS)
    ]
    memory.add(
        [f"cell {i} about topic {i % 7}" for i in range(CELLS)],
        vectors=rng.standard_normal((CELLS, encoder.dim)),
        metadata=metadata,
        timestamps=[1_700_000_000.0 + i for i in range(CELLS)],
    )
    yield memory
    memory.close()


def exact(memory: CellularMemory, query: np.ndarray, keep, k: int) -> list[str]:
    """The best k cells that `keep(record)` accepts, by cosine (the ground truth)."""
    records = [r for r in memory.get_many(memory.ids()) if keep(r)]
    vectors = np.stack([r.vector for r in records])
    scores = vectors @ (query / np.linalg.norm(query))
    return [records[i].id for i in np.argsort(-scores, kind="stable")[:k]]


FILTERS = {
    "equality (1%)": ({"user": "u7"}, lambda m: m["user"] == "u7"),
    "$in": ({"user": {"$in": ["u1", "u2"]}}, lambda m: m["user"] in ("u1", "u2")),
    "$ne": ({"kind": {"$ne": "note"}}, lambda m: m["kind"] != "note"),
    "$nin": ({"kind": {"$nin": ["note", "task"]}}, lambda m: m["kind"] == "mail"),
    "range": ({"$and": [{"rank": {"$gte": 10}}, {"rank": {"$lt": 12}}]}, lambda m: 10 <= m["rank"] < 12),
    "$or": ({"$or": [{"user": "u3"}, {"rank": {"$gt": 48}}]}, lambda m: m["user"] == "u3" or m["rank"] > 48),
    "two keys": ({"kind": "task", "done": True}, lambda m: m["kind"] == "task" and m["done"] is True),
    "boolean": ({"done": False}, lambda m: m["done"] is False),
}  # fmt: skip


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize("k", [1, 10])
def test_a_filtered_search_returns_k_matching_cells(memory, name, k):
    """k matching hits always; the exact best ones when the filter leaves no more cells than a probe reads
    (a wider filter probes, approximately, as an unfiltered search does)."""
    where, keep = FILTERS[name]
    query = np.random.default_rng(zlib.crc32(name.encode())).standard_normal(memory.dim)
    hits = memory.search(query, k=k, where=where)
    assert len(hits) == k
    assert all(keep(h.metadata) for h in hits)
    matching = sum(keep(r.metadata) for r in memory.get_many(memory.ids()))
    if matching <= memory.config.probe_candidates(k, CELLS):
        assert [h.id for h in hits] == exact(memory, query, lambda r: keep(r.metadata), k)


def test_a_text_query_is_filtered_in_every_stage(memory):
    """Lexical and entity candidates obey the filter too."""
    hits = memory.search("cell 1234 about topic 2", k=10, where={"user": "u7"})
    assert len(hits) == 10 and {h.metadata["user"] for h in hits} == {"u7"}


def test_a_time_range_is_inclusive(memory):
    start = 1_700_000_000.0
    hits = memory.search("topic", k=50, since=start + 100, until=start + 109)
    times = sorted(memory.get(h.id).timestamp for h in hits)
    assert times == [start + 100 + i for i in range(10)]


def test_a_filter_matching_fewer_than_k_returns_them_all(memory):
    hits = memory.search("topic", k=10, where={"user": "u7"}, since=1_700_000_000.0 + 2900)
    assert [memory.get(h.id).timestamp - 1_700_000_000.0 for h in hits] == [2907.0]  # cell 2907 alone matches


def test_a_filter_matching_nothing_returns_nothing(memory):
    assert memory.search("topic", where={"user": "nobody"}) == []
    assert memory.search("topic", where={"missing key": 1}) == []


def test_deleted_and_updated_cells_leave_the_filter(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        first, second = memory.add(["red apples", "green apples"], metadata=[{"tag": "a"}, {"tag": "a"}])
        memory.delete(first)
        memory.update(second, metadata={"tag": "b"})
        assert memory.search("apples", where={"tag": "a"}) == []
        assert [h.id for h in memory.search("apples", where={"tag": "b"})] == [second]
        memory.check_invariants()


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({}, "where must be a non-empty mapping, got {}"),
        ([], "where must be a non-empty mapping, got []"),
        ({"$and": []}, "$and takes a non-empty list of filters"),
        ({"$or": {"a": 1}}, "$or takes a non-empty list of filters"),
        ({"$not": {"a": 1}}, "unknown operator or key '$not' in where"),
        ({"a": {"$regex": "x"}}, "a: one of ['$eq', "),
        ({"a": {"$gt": "x"}}, "a: $gt compares finite numbers, got 'x'"),
        ({"a": {"$lte": True}}, "a: $lte compares finite numbers, got True"),
        ({"a": {"$in": []}}, "a: $in takes a non-empty list of values"),
        ({"a": {"$nin": "x"}}, "a: $nin takes a non-empty list of values"),
        ({"a": {"$in": [1, None]}}, "a: values are strings, finite numbers or booleans, got None"),
        ({"a": {"$eq": [1]}}, "a: values are strings, finite numbers or booleans, got [1]"),
        ({"a": {"$gt": 1, "$lt": 2}}, "a: one of ['$eq', "),
        ({"a": float("nan")}, "a: values are strings, finite numbers or booleans, got nan"),
        ({"a": None}, "a: values are strings, finite numbers or booleans, got None"),
        ({3: "x"}, "unknown operator or key 3 in where"),
    ],
)
def test_a_bad_filter_is_a_typed_error_that_names_what_is_wrong(memory, where, message):
    with pytest.raises(InvalidInputError) as raised:
        memory.search("topic", where=where)
    assert message in str(raised.value)


def test_numeric_bounds_are_exact_and_a_key_without_numbers_matches_no_range(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        ids = memory.add(["one", "two", "three"], metadata=[{"n": 1}, {"n": 2}, {"n": "three", "s": "x"}])
        found = lambda where: {hit.id for hit in memory.search("one", k=3, where=where)}  # noqa: E731
        assert found({"n": {"$lte": 2}}) == set(ids[:2]) and found({"n": {"$lt": 2}}) == {ids[0]}
        assert found({"n": {"$gte": 2}}) == {ids[1]} and found({"n": {"$gt": 1}}) == {ids[1]}
        assert found({"s": {"$gte": 0}}) == set() and found({"missing": {"$lt": 5}}) == set()


def test_numbers_are_indexed_past_nested_values_and_cells_without_a_number_match_no_range(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        ids = memory.add(["no n here", "n is five"], metadata=[{"other": 1}, {"tags": ["a", "b"], "n": 5}])
        later = memory.add(["n is a word"], metadata=[{"n": "five"}])
        found = lambda where: {hit.id for hit in memory.search("n", k=3, where=where)}  # noqa: E731
        assert found({"n": 5}) == {ids[1]} and found({"n": {"$lt": 6}}) == {ids[1]}
        memory.delete(later)  # a cell whose value of a numeric key is a word
        assert found({"n": {"$gte": 0}}) == {ids[1]} and found({"n": "five"}) == set()
    index = MetadataIndex()
    index.add(np.zeros(0, dtype=np.int64), [], np.zeros(0, dtype=np.int32))  # an empty write indexes nothing
    assert index.rows().size == 0


@pytest.mark.parametrize("bound", [float("nan"), float("inf"), "yesterday"])
def test_a_bad_time_bound_is_a_typed_error(memory, bound):
    with pytest.raises(InvalidInputError):
        memory.search("topic", since=bound)


def test_a_restriction_allows_exactly_its_scope_or_its_rows():
    scopes, rows = np.array([0, 1, 1, 2, 1]), np.arange(5)
    assert Within().allows(scopes, rows).all() and not Within().restricts
    assert Within(scope=1).allows(scopes, rows).tolist() == [False, True, True, False, True]
    assert Within(rows=np.array([1, 3])).allows(scopes, rows).tolist() == [False, True, False, True, False]
    assert not Within(rows=np.array([], dtype=np.int64)).allows(scopes, rows).any()


def test_each_scope_has_its_own_postings_and_ranges():
    """MetadataIndex directly, rows of two scopes interleaved (scope 1's rows are not its positions): each clause
    within a scope gives that scope's table rows, and removing one scope's last cell of a value leaves the value to
    the other scope."""
    index = MetadataIndex()
    rows = np.arange(8)
    scopes = np.asarray([0, 1] * 4, dtype=np.int32)
    metadatas = [{"n": i, "tag": "x" if i < 6 else "y"} for i in range(8)]
    index.add(rows, metadatas, scopes)
    ones = rows[scopes == 1]
    assert index.matching({"n": {"$gte": 3}}, 1, ones) == {3, 5, 7}
    assert index.matching({"n": {"$lt": 3}}, 1, ones) == {1}
    assert index.matching({"$and": [{"tag": "x"}, {"n": {"$lte": 5}}]}, 1, ones) == {1, 3, 5}
    assert index.matching({"$or": [{"tag": "y"}, {"n": 1}]}, 1, ones) == {1, 7}
    assert index.matching({"tag": "y"}, 0, rows[scopes == 0]) == {6}
    assert index.matching({"tag": {"$ne": "x"}}, 1, ones) == {7}
    assert index.matching({"n": 6}, 1, ones) == set()  # a value only the other scope holds
    assert index.matching({"n": {"$in": [6, 7]}}, 1, ones) == {7}
    index.remove(np.asarray([6]), [metadatas[6]], np.asarray([0], dtype=np.int32))  # scope 0's only "y"
    assert index.matching({"tag": "y"}, 0, np.asarray([0, 2, 4])) == set()
    assert index.matching({"tag": "y"}, 1, ones) == {7} and index.matching({"tag": "y"}) == {7}
