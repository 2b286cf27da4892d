"""Scopes: many users' and agents' memories in one store, never mixed (by search, delete, sleep or judge)."""

import random

import numpy as np
import pytest

from reference import CellularMemory, InvalidInputError, MemoryConfig, NotFoundError
from reference.judges import Conflict, Statement

SCOPES = ["user:alice", "user:bob", "agent:planner", "run:42", ""]
WORDS = "Paris Berlin coffee meeting budget Alice Bob deadline garden piano invoice flight".split()
SMALL_GROUPS = MemoryConfig(group_size=4, group_size_per_sqrt_n=0.0)
"""Small groups, so that a few hundred cells make many groups and sleep has merges and splits to do."""


def random_text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(6))


def random_vectors(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    """Vectors around a few shared directions, so that cells of every scope sit in the same regions."""
    centres = np.random.default_rng(7).standard_normal((4, dim))
    return centres[rng.integers(0, 4, count)] + 0.6 * rng.standard_normal((count, dim))


class ScopeRecorder:
    """A judge that remembers the scopes of every batch it is shown."""

    name = "recorder"

    def __init__(self, scope_of: dict[str, str]) -> None:
        self.scope_of = scope_of
        self.batches: list[set[str]] = []

    def judge(self, statements: list[Statement]) -> list[Conflict]:
        self.batches.append({self.scope_of[s.id] for s in statements})
        return []


def check_isolated(memory: CellularMemory, expected: dict[str, str], queries: list, rng: random.Random) -> None:
    """Every search in a scope returns only its cells (and as many as it holds, up to k)."""
    for scope in SCOPES:
        held = sum(1 for s in expected.values() if s == scope)
        for query in queries:
            hits = memory.search(query, k=8, scope=scope)
            assert {expected[h.id] for h in hits} <= {scope}, f"scope {scope!r} returned another scope's cell"
            assert len(hits) == min(8, held)
        assert memory.count(scope=scope) == held
        assert set(memory.ids(scope=scope)) == {i for i, s in expected.items() if s == scope}


def check_found_by_own_vector(memory: CellularMemory, expected: dict[str, str]) -> None:
    for cell_id, scope in expected.items():
        record = memory.get(cell_id)
        assert record.scope == scope
        assert memory.search(record.vector, k=1, scope=scope)[0].id == cell_id


@pytest.mark.slow
def test_a_thousand_random_operations_never_mix_five_scopes(tmp_path, mock_encoder):
    rng, np_rng = random.Random(11), np.random.default_rng(11)
    expected: dict[str, str] = {}
    path = str(tmp_path / "store")
    memory = CellularMemory(path, encoder=mock_encoder, config=SMALL_GROUPS)
    judged = ScopeRecorder(expected)
    operations = {"add": 0, "update": 0, "delete": 0, "delete scope": 0, "consolidate": 0, "reopen": 0}
    try:
        for step in range(1000):
            roll = rng.random()
            if roll < 0.55 or len(expected) < 20:
                scope, count = rng.choice(SCOPES), rng.randint(1, 12)
                texts = [random_text(rng) for _ in range(count)]
                vectors = random_vectors(np_rng, count, mock_encoder.dim)
                ids = memory.add(texts, vectors=vectors, scope=scope)
                expected.update(dict.fromkeys(ids, scope))
                operations["add"] += 1
            elif roll < 0.75:
                cell_id = rng.choice(sorted(expected))
                memory.update(cell_id, text=random_text(rng))
                operations["update"] += 1
            elif roll < 0.88:
                doomed = rng.sample(sorted(expected), rng.randint(1, 3))
                assert memory.delete(doomed) == len(doomed)
                for cell_id in doomed:
                    del expected[cell_id]
                operations["delete"] += 1
            elif roll < 0.9:
                scope = rng.choice(SCOPES[:4])
                gone = [i for i, s in expected.items() if s == scope]
                assert memory.delete(scope=scope) == len(gone)
                for cell_id in gone:
                    del expected[cell_id]
                operations["delete scope"] += 1
            elif roll < 0.97:
                memory.consolidate(judged)
                operations["consolidate"] += 1
            else:
                memory.close()
                memory = CellularMemory(path, encoder=mock_encoder, config=SMALL_GROUPS)
                operations["reopen"] += 1
            queries = [random_text(rng), random_vectors(np_rng, 1, mock_encoder.dim)[0]]
            check_isolated(memory, expected, queries, rng)
            if step % 100 == 99:
                check_found_by_own_vector(memory, expected)
                memory.check_invariants()
        check_found_by_own_vector(memory, expected)
        memory.check_invariants()
    finally:
        memory.close()
    assert min(operations.values()) > 0, operations
    assert judged.batches and all(len(scopes) == 1 for scopes in judged.batches)


def test_sleep_never_merges_groups_of_two_scopes(mock_encoder):
    vector = np.ones(mock_encoder.dim)
    with CellularMemory(encoder=mock_encoder) as memory:
        alice = memory.add(["a note"] * 3, vectors=[vector] * 3, scope="user:alice")
        bob = memory.add(["a note"] * 3, vectors=[vector] * 3, scope="user:bob")
        memory.consolidate()
        groups = {cell: memory.get(cell).group_id for cell in alice + bob}
        assert {groups[c] for c in alice}.isdisjoint({groups[c] for c in bob})
        memory.check_invariants()


def test_an_unknown_scope_finds_nothing_and_deletes_nothing(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        memory.add(["coffee with Alice"], scope="user:alice")
        assert memory.search("coffee", scope="user:carol") == []
        assert memory.count(scope="user:carol") == 0
        assert memory.delete(scope="user:carol") == 0
        assert len(memory.search("coffee")) == 1  # no scope: every scope


def test_deleting_ids_of_another_scope_deletes_nothing(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        [alice] = memory.add(["coffee with Alice"], scope="user:alice")
        [bob] = memory.add(["coffee with Bob"], scope="user:bob")
        with pytest.raises(NotFoundError, match="scope"):
            memory.delete([alice, bob], scope="user:alice")
        assert len(memory) == 2


@pytest.mark.parametrize("scope", [3, "x" * 5_001, "bad\x00name", b"bytes", ["a", "b"]])
def test_a_bad_scope_is_refused_and_writes_nothing(mock_encoder, scope):
    with CellularMemory(encoder=mock_encoder) as memory:
        with pytest.raises(InvalidInputError):
            memory.add(["a"], scope=scope)
        assert len(memory) == 0
        if scope is not None:
            with pytest.raises(InvalidInputError):
                memory.search("a", scope=scope)


def test_one_scope_per_text(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        ids = memory.add(["a", "b"], scope=["user:alice", "user:bob"])
        assert [memory.get(i).scope for i in ids] == ["user:alice", "user:bob"]
        with pytest.raises(InvalidInputError):
            memory.add(["a", "b"], scope=["user:alice"])


def test_scopes_and_episodes_stay_apart(mock_encoder):
    """Two users' cells written in the same named episode are not each other's context."""
    with CellularMemory(encoder=mock_encoder) as memory:
        [alice] = memory.add(["Alice booked the flight to Paris"], scope="user:alice", episode="s1")
        memory.add(["Bob booked the flight to Berlin"], scope="user:bob", episode="s1")
        assert memory.stats().episodes == 2
        assert [h.id for h in memory.search("flight", k=5, scope="user:alice")] == [alice]


@pytest.mark.parametrize("cells", [100, 3_000])
def test_a_scoped_search_does_not_move_when_other_scopes_are_written(mock_encoder, cells):
    """BM25 statistics, episodes, the probe and its margin are the scope's own: 10,000 cells written into 100 other
    scopes (the same words, some of them the same texts, vectors in the same regions) leave every hit and score of
    a scoped search as it was, for text and for vectors, in a scope searched flat and in one probed."""
    rng, np_rng = random.Random(5), np.random.default_rng(5)
    mine = [random_text(rng) for _ in range(cells)]
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(20)] + [rng.choice(mine) for _ in range(5)]
    queries += list(random_vectors(np_rng, 20, mock_encoder.dim))
    with CellularMemory(encoder=mock_encoder) as memory:
        memory.add(mine, vectors=random_vectors(np_rng, cells, mock_encoder.dim), scope="user:alice")
        probed = memory._state.probe_of(memory._state.table.known_scope("user:alice"))
        assert (probed.estimated_recall is not None) == (cells > 1_000)  # a scope searched flat has no estimate

        def answers() -> list[list[tuple[str, float]]]:
            return [[(h.id, h.score) for h in memory.search(q, 10, scope="user:alice")] for q in queries]

        before = answers()
        for other in range(100):
            texts = [random_text(rng) + " Paris" * (other % 4) for _ in range(100)]
            texts[:5] = mine[other % (cells - 5) : other % (cells - 5) + 5]
            memory.add(texts, vectors=random_vectors(np_rng, 100, mock_encoder.dim), scope=f"user:{other}")
        assert answers() == before
        memory.delete(scope="user:7")
        memory.consolidate(scope="user:8")
        assert answers() == before
        memory.check_invariants()


def test_one_scopes_sleep_regroups_that_scope_alone(mock_encoder):
    """`consolidate(scope=...)` plans, moves and judges the cells of that scope; every other scope's groups and
    centroids stay as they were, and a search of the slept scope still finds each of its cells."""
    rng, np_rng = random.Random(6), np.random.default_rng(6)
    with CellularMemory(encoder=mock_encoder, config=SMALL_GROUPS) as memory:
        for scope in ("user:alice", "user:bob"):
            for _ in range(20):  # written a little at a time: groups a sleep pass has work to do on
                vectors = random_vectors(np_rng, 15, mock_encoder.dim)
                memory.add([random_text(rng) for _ in range(15)], vectors=vectors, scope=scope)
        state = memory._state
        bob = state.table.known_scope("user:bob")
        groups_before, centroids_before = state.groups.active_ids(bob).copy(), state.groups.active_centroids(bob).copy()
        cells_before = {cell: memory.get(cell).group_id for cell in memory.ids(scope="user:bob")}
        report = memory.consolidate(scope="user:alice")
        assert report.cells_moved > 0 and report.sizes_before.cells == report.sizes_after.cells == 300
        assert np.array_equal(state.groups.active_ids(bob), groups_before)
        np.testing.assert_array_equal(state.groups.active_centroids(bob), centroids_before)
        assert {cell: memory.get(cell).group_id for cell in memory.ids(scope="user:bob")} == cells_before
        for cell in memory.ids(scope="user:alice"):
            assert memory.search(memory.get(cell).vector, k=1, scope="user:alice")[0].id == cell
        assert memory.consolidate(scope="user:carol").cells_moved == 0  # a scope that never held a cell
        memory.check_invariants()


def test_counting_and_deleting_a_scope_leave_the_others(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        alice = memory.add([f"note {i}" for i in range(30)], scope="user:alice")
        bob = memory.add([f"note {i}" for i in range(20)], scope="user:bob")
        memory.delete(alice[:10])
        assert (memory.count(scope="user:alice"), memory.count(scope="user:bob")) == (20, 20)
        assert memory.ids(scope="user:alice") == alice[10:]
        assert memory.delete(scope="user:alice") == 20
        assert (memory.count(scope="user:alice"), len(memory), memory.ids()) == (0, 20, bob)
        again = memory.add(["a new start"], scope="user:alice")
        assert memory.ids(scope="user:alice") == again
        memory.check_invariants()


def test_an_inferred_episode_continues_its_own_scope(mock_encoder):
    """A cell written without an episode continues that of the last cell of its own scope, whatever other scopes
    wrote in between (users' turns interleave in a shared memory)."""
    clock = iter(range(0, 10_000, 60))
    with CellularMemory(encoder=mock_encoder, clock=lambda: float(next(clock))) as memory:
        [first] = memory.add(["Alice: hello"], scope="user:alice")
        [bob] = memory.add(["Bob: hi"], scope="user:bob")
        [second] = memory.add(["Alice: are you there"], scope="user:alice")
        assert memory.get(second).episode == memory.get(first).episode != memory.get(bob).episode
        [both_alice, both_bob] = memory.add(["Alice: again", "Bob: again"], scope=["user:alice", "user:bob"])
        assert memory.get(both_alice).episode == memory.get(first).episode
        assert memory.get(both_bob).episode == memory.get(bob).episode


def test_an_entity_lookup_reads_its_own_scope(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        [alice] = memory.add(["Maria Lopez moved to Lisbon"], scope="user:alice")
        memory.add(["Maria Lopez moved to Porto"] * 3, scope="user:bob")
        state = memory._state
        code = state.table.known_scope("user:alice")
        assert list(state.entities.matches(frozenset({"maria lopez"}), code)) == [state.table.row_of[alice]]
        assert len(state.entities.matches(frozenset({"maria lopez"}))) == 4
        memory.check_invariants()


def test_a_filter_within_a_scope_reads_that_scopes_postings(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        alice = memory.add([f"alice {i}" for i in range(6)], metadata=[{"n": i, "tag": "x"} for i in range(6)],
                           scope="user:alice")  # fmt: skip
        memory.add([f"bob {i}" for i in range(6)], metadata=[{"n": i, "tag": "x"} for i in range(6)], scope="user:bob")
        for where in ({"tag": "x"}, {"tag": {"$ne": "y"}}, {"n": {"$gte": 3}}, {"$or": [{"n": 1}, {"n": {"$lt": 1}}]}):
            hits = memory.search("alice", k=10, scope="user:alice", where=where)
            assert hits and {h.id for h in hits} <= set(alice)
        state = memory._state
        code = state.table.known_scope("user:alice")
        rows = state.scope_rows(code)
        matched = state._metadata.matching({"n": {"$gte": 3}}, code, rows)
        assert matched == {state.table.row_of[cell] for cell in alice[3:]}
        assert len(state._metadata.matching({"n": {"$gte": 3}})) == 6  # every scope's
        memory.delete(alice[:2])
        memory.check_invariants()
