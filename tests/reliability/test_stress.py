"""Stress: several writer and reader threads on one memory, in memory and on an embedded store, while sleep
consolidates and applies supersessions. Every acknowledged write is what a later read returns, a deleted cell
stays deleted, and a search in a scope returns only that scope; counts go to the reliability report (`counts.py`)."""

from __future__ import annotations

import itertools
import random
import threading

import pytest

from reference import CellularMemory, MemoryConfig, NotFoundError
from reference.encoders import MockEncoder
from tests.reliability.counts import record
from tests.threads import run_concurrently

CITIES = ["Paris", "Berlin", "Lisbon", "Oslo", "Rome", "Vienna"]
WRITERS, READERS = 3, 2
DELETED = None


class Writer:
    """One user's thread: adds, updates, upserts and deletes its own cells (scope `user:<n>`) and, now and
    then, adds a fact contradicting one of them; remembers what each acknowledged write left."""

    def __init__(self, memory: CellularMemory, number: int, operations: int) -> None:
        self.memory, self.number, self.operations = memory, number, operations
        self.scope = f"user:{number}"
        self.expected: dict[str, tuple[str, dict] | None] = {}
        self.counts = {"add": 0, "update": 0, "upsert": 0, "delete": 0, "contradict": 0, "refused": 0}
        self.rng = random.Random(number)

    def __call__(self) -> None:
        for step in range(self.operations):
            live = [i for i, held in self.expected.items() if held is not DELETED]
            choice = self.rng.random() if live else 0.0
            if choice < 0.35:
                self.add(f"w{self.number}-{step}", f"Owner{self.number}x{step} lives in {self.rng.choice(CITIES)}")
            elif choice < 0.45:
                self.contradict(self.rng.choice(live), step)
            elif choice < 0.7:
                self.update(self.rng.choice(live), step)
            elif choice < 0.85:
                self.upsert(self.rng.choice(live), step)
            else:
                self.delete(self.rng.choice(live))

    def add(self, cell: str, text: str, kind: str = "add") -> None:
        metadata = {"writer": self.number, "tags": [kind]}
        self.memory.add([text], ids=[cell], metadata=metadata, scope=self.scope)
        self.expected[cell] = (text, metadata)
        self.counts[kind] += 1

    def contradict(self, cell: str, step: int) -> None:
        text, _ = self.expected[cell]  # type: ignore[misc]
        subject = text.split(" lives in ")[0]
        self.add(f"w{self.number}-{step}", f"{subject} lives in {self.rng.choice(CITIES)}", "contradict")

    def update(self, cell: str, step: int) -> None:
        text, metadata = self.expected[cell]  # type: ignore[misc]
        try:
            if step % 2:
                record = self.memory.update(cell, metadata={**metadata, "step": step})
            else:
                record = self.memory.update(cell, text=f"{text.split(' lives in ')[0]} works at desk {step}")
        except NotFoundError:  # a supersession deleted it meanwhile
            self.expected[cell] = DELETED
            self.counts["refused"] += 1
            return
        self.expected[cell] = (record.text, record.metadata)
        self.counts["update"] += 1

    def upsert(self, cell: str, step: int) -> None:
        text = f"Owner{self.number}x{step} plays the {self.rng.choice(['piano', 'cello', 'drums'])}"
        metadata = {"writer": self.number, "upserted": step}
        self.memory.add([text], ids=[cell], metadata=metadata, scope=self.scope, upsert=True)
        self.expected[cell] = (text, metadata)
        self.counts["upsert"] += 1

    def delete(self, cell: str) -> None:
        try:
            self.memory.delete([cell])
        except NotFoundError:  # a supersession deleted it first
            self.counts["refused"] += 1
        self.expected[cell] = DELETED
        self.counts["delete"] += 1


def reader(memory: CellularMemory, stop: threading.Event, searches: list[int], problems: list[str]):
    def run() -> None:
        rng = random.Random(99)
        while not stop.is_set():
            number = rng.randrange(WRITERS)
            hits = memory.search(f"Owner{number} lives in {rng.choice(CITIES)}", k=8, scope=f"user:{number}")
            ids = [h.id for h in hits]
            if len(set(ids)) != len(ids) or any(not i.startswith(f"w{number}-") for i in ids):
                problems.append(f"scope user:{number} returned {ids}")
            if any(a.score < b.score for a, b in itertools.pairwise(hits)):
                problems.append("hits out of order")
            searches[0] += 1

    return run


def sleeper(memory: CellularMemory, stop: threading.Event, superseded: set[str], passes: list[int]):
    def run() -> None:
        while not stop.is_set():
            memory.consolidate()
            superseded.update(c.first for c in memory.apply_supersessions())
            passes[0] += 1

    return run


def check(memory: CellularMemory, writers: list[Writer], superseded: set[str]) -> int:
    """Every id's state against what its writer last had acknowledged; returns how many were checked."""
    wrong = []
    for writer in writers:
        for cell, held in writer.expected.items():
            if cell in memory:
                record = memory.get(cell)
                if held is DELETED or (record.text, record.metadata) != held:
                    wrong.append((cell, held, record.text))
            elif held is not DELETED and cell not in superseded:
                wrong.append((cell, held, "missing"))
    assert not wrong, f"{len(wrong)} cells differ from their last acknowledged write: {wrong[:3]}"
    memory.check_invariants()
    return sum(len(w.expected) for w in writers)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["memory", "embedded"])
def test_acknowledged_writes_hold_under_writers_readers_and_sleep(tmp_path, layout):
    path = None if layout == "memory" else str(tmp_path / "store")
    operations = 1_500 if layout == "memory" else 400
    config = MemoryConfig()
    with CellularMemory(path, encoder=MockEncoder(64), config=config) as memory:
        writers = [Writer(memory, number, operations) for number in range(WRITERS)]
        stop, superseded, searches, passes, problems = threading.Event(), set(), [0], [0], []
        background = [reader(memory, stop, searches, problems) for _ in range(READERS)]
        background.append(sleeper(memory, stop, superseded, passes))
        threads = [threading.Thread(target=run) for run in background]
        for thread in threads:
            thread.start()
        try:
            errors = run_concurrently(*writers, timeout=600)
        finally:
            stop.set()
            for thread in threads:
                thread.join(120)
        assert errors == [] and problems == []
        superseded.update(c.first for c in memory.apply_supersessions())
        checked = check(memory, writers, superseded)
    if path is not None:
        with CellularMemory(path, encoder=MockEncoder(64), config=config) as reopened:
            check(reopened, writers, superseded)
    counts = {kind: sum(w.counts[kind] for w in writers) for kind in writers[0].counts}
    record(
        f"stress_{layout}",
        writers=WRITERS,
        readers=READERS,
        **counts,
        searches=searches[0],
        sleep_passes=passes[0],
        superseded=len(superseded),
        cells_checked=checked,
        acknowledged_writes_lost=0,
    )
    assert passes[0] > 0 and searches[0] > 0
