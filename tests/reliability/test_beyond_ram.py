"""Scopes beyond RAM (`MemoryConfig(resident_cells=N)`) under calls that need more scopes than the budget holds and
under eviction racing them, on an embedded store and on a namespace of a Chroma server started here: every call
answers, an id call finds every cell that exists, a search of every scope does not starve behind a writer, and
counts, conflicts, concepts and supersessions cover every scope, not only those in RAM.

Every call that could spin is run on a thread joined with a timeout (`bounded`), so a livelock fails the test
instead of hanging the suite; the limits that decide a test are counts (scope loads, a writer's writes), never
times."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np
import pytest

from reference import CellularMemory, MemoryConfig
from reference.common.chroma import server_client
from reference.encoders import MockEncoder

DIM = 32
BACKSTOP = 60.0
"""Seconds after which a call is taken for one that never returns (a hang, not a slow machine: each call here takes
well under a second)."""

REPEATS = 20
"""Rounds of id calls racing the writers: on the engine before the fix, the first few rounds already failed."""

T = TypeVar("T")
Opener = Callable[[int | None], CellularMemory]


def bounded(memory: CellularMemory, call: Callable[[], T], timeout: float = BACKSTOP) -> T:
    """`call()` on a thread of its own, its result or exception handed back; fails the test if it has not returned
    within `timeout`, after stopping the memory so that the call ends (its next step raises) before the test closes
    it."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # handed back to the test
            outcome.append((False, error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        memory._state.abandon()
        thread.join(timeout)
        pytest.fail(f"a call did not return within {timeout:.0f} s (livelock)")
    returned, value = outcome[0]
    if not returned:
        raise value
    return value  # type: ignore[no-any-return]


@pytest.fixture(params=["embedded", "server"])
def opener(request, tmp_path) -> Opener:
    """One store for the test: a path, or a namespace of its own on the module's Chroma server."""
    config = MemoryConfig(lexical=False)
    if request.param == "embedded":
        path = str(tmp_path / "store")
        return lambda budget: CellularMemory(
            path, encoder=MockEncoder(DIM), config=replace(config, resident_cells=budget)
        )
    address = request.getfixturevalue("chroma_server").address
    namespace = f"t{uuid.uuid4().hex[:12]}"
    return lambda budget: CellularMemory(
        client=server_client(address),
        encoder=MockEncoder(DIM),
        config=replace(config, namespace=namespace, resident_cells=budget, lease_seconds=60.0),
    )


def vectors(seed: int, count: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def write_scopes(memory: CellularMemory, names: list[str], cells: int) -> None:
    """`cells` cells in each scope, ids `{scope}-{i}`."""
    for seed, name in enumerate(names):
        memory.add(
            [f"{name} note {i}" for i in range(cells)],
            vectors=vectors(seed, cells),
            ids=[f"{name}-{i}" for i in range(cells)],
            scope=name,
        )


@pytest.fixture
def two_scopes(opener) -> Iterator[CellularMemory]:
    """8 cells in scope a, 8 in b, reopened with a budget of 10 after a search in a: b is out of RAM."""
    with opener(None) as memory:
        write_scopes(memory, ["a", "b"], 8)
    with opener(10) as memory:
        memory.search(vectors(0, 1)[0], k=1, scope="a")
        yield memory


def test_an_id_call_over_more_scopes_than_the_budget_answers(two_scopes):
    memory, before = two_scopes, two_scopes._resident.loads
    assert [r.id for r in bounded(memory, lambda: memory.get_many(["a-0", "b-0"]))] == ["a-0", "b-0"]
    assert bounded(memory, lambda: memory.delete(["a-1", "b-1"])) == 2
    written = bounded(
        memory,
        lambda: memory.add(
            ["a again", "b again"], vectors=vectors(9, 2), ids=["a-2", "b-2"], scope=["a", "b"], upsert=True
        ),
    )
    assert written == ["a-2", "b-2"]
    assert [r.text for r in bounded(memory, lambda: memory.get_many(["b-2", "a-2"]))] == ["b again", "a again"]
    assert len(bounded(memory, lambda: memory.search(vectors(0, 1)[0], k=20))) == 14
    assert memory._resident.loads - before <= 10  # each call loads what it lacks once, not round after round
    assert bounded(memory, lambda: memory.count()) == 14 and bounded(memory, lambda: len(memory.ids())) == 14
    memory.check_invariants()


def test_id_calls_find_every_cell_while_writers_in_other_scopes_evict(opener):
    """Writers into scopes w0..w9 keep loading scopes and letting others go; meanwhile one thread reads, updates
    and deletes cells of scopes t0..t3 that exist. Every such call must find its cells."""
    targets, others = [f"t{i}" for i in range(4)], [f"w{i}" for i in range(10)]
    with opener(60) as memory:
        write_scopes(memory, targets + others, 20)
        stop, failures, calls = threading.Event(), [], [0]

        def writer(first: int) -> None:
            turn = first
            while not stop.is_set():
                name = others[turn % len(others)]
                memory.add([f"{name} more {turn}"], vectors=vectors(1000 + turn, 1), scope=name)
                turn += 2

        def id_caller() -> None:
            rng = np.random.default_rng(5)
            for rep in range(REPEATS):
                one, two = (f"{targets[t]}-{int(rng.integers(20))}" for t in rng.choice(4, 2, replace=False))
                try:
                    assert memory.get(one).id == one
                    assert [r.id for r in memory.get_many([one, two])] == [one, two], "get_many dropped a cell"
                    memory.update(two, metadata={"rep": rep})
                    [fresh] = memory.add([f"temporary {rep}"], vectors=vectors(5000 + rep, 1), scope=targets[rep % 4])
                    memory.search(vectors(7000 + rep, 1)[0], k=1, scope=others[rep % len(others)])
                    assert memory.delete([fresh]) == 1
                except Exception as error:  # counted, then asserted none
                    failures.append(f"{type(error).__name__}: {error}")
                calls[0] += 1

        writers = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(2)]
        for thread in writers:
            thread.start()
        try:
            bounded(memory, id_caller)
        finally:
            stop.set()
            for thread in writers:
                thread.join(BACKSTOP)
        assert calls[0] == REPEATS
        assert failures == []
        for name in targets:
            assert memory.count(scope=name) == 20
        memory.check_invariants()


def test_a_search_of_every_scope_returns_while_a_writer_goes_on(opener):
    """36 scopes of 20 cells, a budget of 100, one writer writing one cell at a time round the scopes (each write
    loads its scope and lets others go). A search of every scope must return while the writer is still writing:
    the writer stops by itself after WRITES writes, so a search that starved returns only then."""
    writes_allowed = 400
    names = [f"s{i}" for i in range(36)]
    with opener(None) as memory:
        write_scopes(memory, names, 20)
    with opener(100) as memory:
        writes, done = [0], threading.Event()

        def writer() -> None:
            while writes[0] < writes_allowed and not done.is_set():
                name = names[writes[0] % len(names)]
                memory.add([f"{name} more"], vectors=vectors(2000 + writes[0], 1), scope=name)
                writes[0] += 1

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        try:
            while writes[0] < 5:  # the writer is under way
                threading.Event().wait(0.01)
            hits = bounded(memory, lambda: memory.search(vectors(3, 1)[0], k=10))
            at_return = writes[0]
        finally:
            done.set()
            thread.join(BACKSTOP)
        assert len(hits) == 10
        assert at_return < writes_allowed, "the search returned only once the writer had stopped"


def contradicting(memory: CellularMemory, scope: str) -> list[str]:
    """Two cells of `scope` that the offline judge finds contradict, slept on so that the conflict is recorded."""
    ids = memory.add(
        [f"{scope.title()} lives in Paris", f"{scope.title()} lives in Berlin"],
        timestamps=[1_000.0, 2_000.0],
        vectors=np.repeat(vectors(len(scope), 1), 2, axis=0),
        scope=scope,
    )
    memory.consolidate(scope=scope)
    return ids


def test_counts_conflicts_concepts_and_supersessions_cover_every_scope(opener):
    with opener(None) as memory:
        recorded = {scope: contradicting(memory, scope) for scope in ("alice", "bob")}
        assert len(memory.conflicts()) == 2
        write_scopes(memory, [f"x{i}" for i in range(6)], 20)
        everything = [concept.groups for concept in memory.concepts()]
    with opener(30) as memory:
        memory.search(vectors(0, 1)[0], k=1, scope="x0")  # alice and bob are out of RAM
        assert memory.stats().cells == len(memory) == 124
        assert [concept.groups for concept in memory.concepts()] == everything
        assert sorted((c.first, c.second) for c in memory.conflicts()) == sorted(map(tuple, recorded.values()))
        applied = memory.apply_supersessions()
        assert sorted((c.first, c.second) for c in applied) == sorted(map(tuple, recorded.values()))
        assert len(memory) == 122 and memory.conflicts() == []
        for older, newer in recorded.values():
            assert older not in memory and newer in memory
        memory.check_invariants()


def test_an_update_runs_the_estimate_its_writes_made_due():
    """The post-write hook runs after every write: updates of a quarter of a scope's cells make its recall estimate
    due, as adds and deletes do, and it is made before the update returns."""
    with CellularMemory(encoder=MockEncoder(DIM)) as memory:
        ids = memory.add([f"note {i}" for i in range(20)], vectors=vectors(1, 20), scope="s")
        memory.add(["elsewhere"], vectors=vectors(2, 1), scope="t")
        state = memory._state
        code = state.table.known_scope("s")
        assert state.probe_of(code).turnover == state.turnover(code) == 20
        for cell_id in ids[:5]:
            memory.update(cell_id, text=f"{cell_id} rewritten")
        assert state.probe_of(code).turnover == state.turnover(code) > 20


def test_a_search_of_every_scope_probes_by_an_estimate_made_over_every_scope(opener):
    """Reopened with one scope of seven in RAM, a search of every scope loads them all; the recall estimate it
    probes by must be made over all of them too, not over the scope that happened to be in RAM (nor be none)."""
    names = [f"s{i}" for i in range(7)]
    with opener(None) as memory:
        write_scopes(memory, names, 30)
    with opener(50) as memory:
        memory.search(vectors(0, 1)[0], k=1, scope="s0")
        hits = bounded(memory, lambda: memory.search(vectors(0, 1)[0], k=10))
        assert hits[0].id == "s0-0"
        setting = memory._state.probe_of(None)
        assert setting.scope is None and setting.cells == len(memory) == 210
