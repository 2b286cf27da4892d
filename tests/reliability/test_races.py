"""Writes that race on one memory, on real threads: every acknowledged change holds, and a delete is final.

Each race is run for a repetition count that showed it on the engine before its read-modify-writes checked
what they read (a field's update lost in about half the trials in memory, fewer on an embedded store). Where a
race needs one thread to be inside a step (an update encoding, a judge judging, two writers queued), the test
holds it there with events or the lock's own state, never with a sleep.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from reference import CellularMemory, MemoryConfig, NotFoundError
from reference.common.chroma import server_client
from reference.encoders import MockEncoder
from reference.judges import OfflineJudge
from tests.threads import run_concurrently

DIM = 64
CONFIG = MemoryConfig(lexical=False)


def both_at_once(first, second) -> list[BaseException]:
    """Run two calls on two threads released together by a barrier."""
    barrier = threading.Barrier(2)

    def released(call):
        def run():
            barrier.wait()
            call()

        return run

    return run_concurrently(released(first), released(second), timeout=60)


@pytest.mark.parametrize("layout", ["memory", "embedded"])
def test_concurrent_updates_of_text_and_metadata_both_hold(tmp_path, layout):
    trials = 150
    path = None if layout == "memory" else str(tmp_path / "store")
    with CellularMemory(path, encoder=MockEncoder(DIM), config=CONFIG) as memory:
        lost = 0
        for trial in range(trials):
            [cell] = memory.add([f"note {trial} about the harbour"], metadata={"round": trial})
            errors = both_at_once(
                lambda cell=cell, trial=trial: memory.update(cell, text=f"note {trial} about the lighthouse"),
                lambda cell=cell, trial=trial: memory.update(cell, metadata={"round": trial, "checked": True}),
            )
            assert errors == []
            record = memory.get(cell)
            lost += record.text != f"note {trial} about the lighthouse" or not record.metadata.get("checked")
        memory.check_invariants()
        assert lost == 0, f"{lost} of {trials} acknowledged updates were reverted by the other"


class HeldEncoder(MockEncoder):
    """The mock encoder, held inside `encode` while `hold` is set until the test lets it go: an update that
    has read its cell and is encoding the new text."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.hold, self.encoding, self.go = False, threading.Event(), threading.Event()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.hold:
            self.encoding.set()
            assert self.go.wait(30)
        return super().encode(texts)


@pytest.mark.parametrize("layout", ["memory", "embedded"])
def test_a_cell_deleted_while_its_update_encodes_stays_deleted(tmp_path, layout):
    path = None if layout == "memory" else str(tmp_path / "store")
    encoder = HeldEncoder(DIM)
    with CellularMemory(path, encoder=encoder, config=CONFIG) as memory:
        for trial in range(5):
            [cell] = memory.add([f"passport number {trial}"])
            encoder.hold, outcome = True, []
            encoder.encoding.clear(), encoder.go.clear()

            def update(cell=cell, trial=trial, outcome=outcome):
                try:
                    memory.update(cell, text=f"passport renewed {trial}")
                    outcome.append("updated")
                except NotFoundError:
                    outcome.append("refused")

            updater = threading.Thread(target=update)
            updater.start()
            assert encoder.encoding.wait(30)
            encoder.hold = False
            assert memory.delete([cell]) == 1
            encoder.go.set()
            updater.join(30)
            assert outcome == ["refused"] and cell not in memory
        memory.check_invariants()
    if path is not None:
        with CellularMemory(path, encoder=MockEncoder(DIM), config=CONFIG) as reopened:
            assert reopened.ids() == []


def contradicting_pair(memory: CellularMemory, trial: int) -> tuple[str, str]:
    """An older and a newer fact that the offline judge finds contradictory, with the conflict recorded."""
    person = f"Person{trial}"
    [older] = memory.add([f"{person} lives in Paris"], timestamps=[1_000.0 + trial])
    [newer] = memory.add([f"{person} lives in Berlin"], timestamps=[2_000.0 + trial])
    memory.consolidate()
    assert any(c.first == older and c.second == newer for c in memory.conflicts())
    return older, newer


def test_applying_supersessions_keeps_a_concurrent_update_of_the_newer_cell(mock_encoder):
    trials = 40
    with CellularMemory(encoder=MockEncoder(DIM), config=CONFIG) as memory:
        lost = 0
        for trial in range(trials):
            older, newer = contradicting_pair(memory, trial)
            errors = both_at_once(
                memory.apply_supersessions,
                lambda newer=newer, trial=trial: memory.update(newer, metadata={"seen": trial}),
            )
            assert errors == []
            lost += memory.get(newer).metadata.get("seen") != trial
            assert older not in memory
        memory.check_invariants()
        assert lost == 0


def test_applying_supersessions_while_the_older_cell_is_deleted_raises_nothing():
    """Both writers are made to wait for the write lock together (the test holds the read side until both are
    queued), so either may go first."""
    trials = 30
    with CellularMemory(encoder=MockEncoder(DIM), config=CONFIG) as memory:
        lock = memory._state.lock
        for trial in range(trials):
            older, newer = contradicting_pair(memory, trial)
            applied: list[list] = []

            def delete_older(older=older):
                with contextlib.suppress(NotFoundError):  # the supersession deleted it first
                    memory.delete([older])

            with lock.read():
                threads = [
                    threading.Thread(target=lambda applied=applied: applied.append(memory.apply_supersessions())),
                    threading.Thread(target=delete_older),
                ]
                for count, thread in enumerate(threads, start=1):
                    thread.start()
                    deadline = time.monotonic() + 30
                    while lock._waiting_writers < count:
                        assert time.monotonic() < deadline
                        time.sleep(0)
            for thread in threads:
                thread.join(30)
            assert applied, "apply_supersessions raised"
            history = [entry["text"] for entry in memory.get(newer).history]
            assert history == ([f"Person{trial} lives in Paris"] if applied[0] else [])
            assert older not in memory and memory.conflicts() == []
        memory.check_invariants()


def test_a_conflict_is_dropped_when_either_cell_changes_afterwards():
    with CellularMemory(encoder=MockEncoder(DIM), config=CONFIG) as memory:
        older, newer = contradicting_pair(memory, 0)
        memory.update(newer, text="Person0 enjoys long walks")
        assert memory.conflicts() == []
        assert memory.apply_supersessions() == []
        assert older in memory and not memory.get(older).conflicts
        older, newer = contradicting_pair(memory, 1)
        memory.update(older, text="Person1 collects stamps")
        assert memory.conflicts() == [] and not memory.get(newer).conflicts
        older, newer = contradicting_pair(memory, 2)
        memory.update(newer, metadata={"source": "chat"})  # the text stays: so does the conflict
        assert [(c.first, c.second) for c in memory.conflicts()] == [(older, newer)]
        memory.delete([newer])
        assert memory.conflicts() == [] and not memory.get(older).conflicts
        memory.check_invariants()


class HeldJudge:
    """The offline judge, held inside `judge` until the test lets it go (to change a cell while it judges)."""

    name = "held-offline"

    def __init__(self) -> None:
        self.judging, self.go, self._judge = threading.Event(), threading.Event(), OfflineJudge()

    def judge(self, statements):
        self.judging.set()
        assert self.go.wait(30)
        return self._judge.judge(statements)


def test_a_conflict_judged_on_a_text_that_changed_meanwhile_is_not_recorded():
    with CellularMemory(encoder=MockEncoder(DIM), config=CONFIG) as memory:
        [older] = memory.add(["Alice lives in Paris"], timestamps=[1_000.0])
        [newer] = memory.add(["Alice lives in Berlin"], timestamps=[2_000.0])
        judge = HeldJudge()
        sleeper = threading.Thread(target=memory.consolidate, args=(judge,))
        sleeper.start()
        assert judge.judging.wait(30)
        memory.update(newer, text="Alice enjoys long walks")
        judge.go.set()
        sleeper.join(30)
        assert memory.conflicts() == []
        assert memory.apply_supersessions() == [] and older in memory
        memory.check_invariants()


class HeldLoads:
    """A store whose scope loads are held, while `hold` is set, after they read the store and before the engine
    takes the cells in: a search that read a scope out of RAM while other threads write it and let it go."""

    def __init__(self, store) -> None:
        self.load_scope, self.hold, self.read, self.go = store.load_scope, False, threading.Event(), threading.Event()
        store.load_scope = self.held

    def held(self, scope: str):
        cells = self.load_scope(scope)
        if self.hold:
            self.hold = False
            self.read.set()
            assert self.go.wait(30)
        return cells


def bounded_memory(request: pytest.FixtureRequest, layout: str, tmp_path, budget: int) -> CellularMemory:
    """A memory with this resident budget on an embedded store, or on a namespace of the module's Chroma server."""
    config = MemoryConfig(lexical=False, resident_cells=budget)
    if layout == "embedded":
        return CellularMemory(str(tmp_path / "store"), encoder=MockEncoder(DIM), config=config)
    client = server_client(request.getfixturevalue("chroma_server").address)
    config = replace(config, namespace=f"t{uuid.uuid4().hex[:12]}")
    return CellularMemory(client=client, encoder=MockEncoder(DIM), config=config)


@pytest.mark.parametrize("layout", ["embedded", "server"])
def test_a_scope_read_before_it_was_written_and_let_go_is_read_again(request, tmp_path, layout):
    """A search reads scope A from the store; before it takes the cells in, a write loads A, adds a cell and A is
    let go again. The search must not take in the cells it read (the store holds one more now): it reads again."""
    rng = np.random.default_rng(3)
    with bounded_memory(request, layout, tmp_path, 50) as memory:
        for scope in ("a", "b", "c"):
            memory.add([f"{scope} {i}" for i in range(40)], vectors=rng.standard_normal((40, DIM)), scope=scope)
        loads = HeldLoads(memory._store.store)
        for trial in range(5):
            memory.search(rng.standard_normal(DIM), k=1, scope="b")  # "a" out of RAM
            vector = rng.standard_normal(DIM)
            loads.hold, found = True, []
            loads.read.clear(), loads.go.clear()
            searcher = threading.Thread(target=lambda v=vector, f=found: f.extend(memory.search(v, k=1, scope="a")))
            searcher.start()
            assert loads.read.wait(30)
            [new] = memory.add([f"a new {trial}"], vectors=[vector], scope="a")
            memory.search(rng.standard_normal(DIM), k=1, scope="c")  # "a" out of RAM again
            loads.go.set()
            searcher.join(30)
            assert [hit.id for hit in found] == [new]
            assert memory.count(scope="a") == 41 + trial
        memory.check_invariants()


@pytest.mark.parametrize("layout", ["embedded", "server"])
def test_searches_in_their_own_scopes_keep_working_while_others_load_and_let_go(request, tmp_path, layout):
    """Threads search their own scopes while a writer writes and a wanderer searches scope after scope, with room in
    RAM for a few scopes only: every search finds each cell of its scope by its own vector, nothing is lost."""
    scopes, cells = 12, 30
    vectors = {s: np.random.default_rng(s).standard_normal((cells, DIM)) for s in range(scopes)}
    with bounded_memory(request, layout, tmp_path, 100) as memory:
        for scope in range(scopes):
            ids = [f"{scope}-{i}" for i in range(cells)]
            memory.add([f"note {i}" for i in range(cells)], vectors=vectors[scope], ids=ids, scope=f"s{scope}")
        written: list[str] = []

        def searcher(scope: int):
            def run():
                for round_ in range(40):
                    i = round_ % cells
                    [hit] = memory.search(vectors[scope][i], k=1, scope=f"s{scope}")
                    assert hit.id == f"{scope}-{i}", (scope, i, hit.id)

            return run

        def writer():
            rng = np.random.default_rng(99)
            for round_ in range(40):
                scope = 4 + round_ % (scopes - 4)
                written.extend(memory.add([f"more {round_}"], vectors=rng.standard_normal((1, DIM)), scope=f"s{scope}"))

        def wanderer():
            for round_ in range(60):
                scope = round_ % scopes
                memory.search(vectors[scope][0], k=1, scope=f"s{scope}")

        errors = run_concurrently(searcher(0), searcher(1), searcher(2), writer, wanderer, timeout=600)
        assert errors == []
        assert len(memory) == scopes * cells + len(written)
        assert all(cell in memory for cell in written)
        memory.check_invariants()
