"""The readers–writer lock on real threads: writers are not starved by readers, readers are not starved by
writers taking turns, the writer may re-enter and read, and no waiter is left behind.

Every wait is on the lock's own state (a thread is known to be waiting when the lock counts it), never a
sleep: the orders asserted here are the lock's rules, not timings."""

from __future__ import annotations

import threading
import time

from reference.common.locks import ReadWriteLock
from tests.threads import run_concurrently


def wait_until(condition, timeout: float = 10.0) -> None:
    """Spin (yielding the core) until `condition()` holds; fail past `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the threads never reached the state waited for"
        time.sleep(0)


def entry_order(held: str, queued: list[str]) -> list[str]:
    """Hold one side of a lock ("read" or "write"), queue threads taking the sides in `queued` one after another
    (each counted by the lock as waiting before the next starts), let go: the order in which they all went in."""
    lock, order = ReadWriteLock(), []
    holding, release = threading.Event(), threading.Event()

    def holder():
        with getattr(lock, held)():
            holding.set()
            release.wait()
            order.append(f"held {held}")

    def taker(side: str):
        def run():
            with getattr(lock, side)():
                order.append(side)

        return run

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    holding.wait()
    for side in queued:
        threads.append(threading.Thread(target=taker(side)))
        threads[-1].start()
        readers, writers = queued[: len(threads) - 1].count("read"), queued[: len(threads) - 1].count("write")
        wait_until(lambda r=readers, w=writers: (lock._waiting_readers, lock._waiting_writers) == (r, w))
    release.set()
    for thread in threads:
        thread.join(10)
    return order


def test_a_reader_waiting_behind_a_writer_goes_in_before_the_next_writer():
    assert entry_order("write", ["read", "write"]) == ["held write", "read", "write"]


def test_a_waiting_writer_holds_back_readers_that_come_after_it():
    assert entry_order("read", ["write", "read"]) == ["held read", "write", "read"]


def test_two_writers_taking_turns_let_a_waiting_reader_in_after_at_most_one_write():
    """`overtaking`: write sections entered in a row while the reader was queued (reset when it gets in). The old
    writer-preferring lock let two writers go on for over 80,000 writes while a search waited."""
    lock, stop = ReadWriteLock(), threading.Event()
    overtaking, most, reads = 0, 0, 0

    def writer():
        nonlocal overtaking, most
        while not stop.is_set():
            with lock.write():
                if lock._waiting_readers:
                    overtaking += 1
                    most = max(most, overtaking)

    def reader():
        nonlocal overtaking, reads
        for _ in range(3_000):
            with lock.read():
                overtaking = 0
                reads += 1
        stop.set()

    errors = run_concurrently(writer, writer, reader, timeout=120)
    assert errors == [] and reads == 3_000
    assert most <= 1, f"{most} writes went in one after another while a reader waited"


def test_the_writer_re_enters_and_reads_what_it_writes():
    lock = ReadWriteLock()
    with lock.write():
        with lock.write(), lock.read():
            assert lock._depth == 3
        with lock.read():
            pass
    assert lock._writer is None and lock._depth == 0 and lock._readers == 0
    done = threading.Event()

    def other_writer():
        with lock.write():
            done.set()

    thread = threading.Thread(target=other_writer)
    thread.start()
    thread.join(10)
    assert done.is_set(), "the write side was not let go"


def test_many_readers_and_writers_all_finish_and_writes_are_exclusive():
    lock = ReadWriteLock()
    inside = {"readers": 0, "writers": 0}
    guard = threading.Lock()
    problems: list[str] = []

    def enter(kind: str) -> None:
        with guard:
            inside[kind] += 1
            if inside["writers"] > 1 or (inside["writers"] and inside["readers"]):
                problems.append(f"{inside}")

    def leave(kind: str) -> None:
        with guard:
            inside[kind] -= 1

    def worker(seed: int):
        def run():
            for step in range(3_000):
                if (step * 7 + seed) % 5 == 0:
                    with lock.write():
                        enter("writers")
                        leave("writers")
                else:
                    with lock.read():
                        enter("readers")
                        leave("readers")

        return run

    errors = run_concurrently(*(worker(seed) for seed in range(6)), timeout=120)
    assert errors == [] and problems == []
    assert lock._readers == lock._waiting_readers == lock._waiting_writers == lock._owed == 0
