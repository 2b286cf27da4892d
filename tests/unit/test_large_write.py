"""A large write, and an open that loads every cell, pause Python's cyclic collector only while they run, and leave it
as they found it: overlapping writes from several threads, a write that fails, and a host that had turned the
collector off."""

from __future__ import annotations

import gc
import threading

import pytest

from reference import CellularMemory
from reference.encoders import MockEncoder
from reference.state.engine import EngineState
from reference.write.ingest import large_write

REPETITIONS = 50


@pytest.fixture(autouse=True)
def collector_restored():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_a_small_write_leaves_the_collector_alone():
    gc.enable()
    with large_write(False):
        assert gc.isenabled()


def test_a_large_write_pauses_the_collector_and_resumes_it_even_when_it_fails():
    gc.enable()
    with pytest.raises(RuntimeError), large_write(True):
        assert not gc.isenabled()
        raise RuntimeError("the write failed")
    assert gc.isenabled()


def test_a_collector_the_host_turned_off_stays_off():
    gc.disable()
    with large_write(True):
        pass
    assert not gc.isenabled()


def overlap_once() -> list[bool]:
    """Two large writes on two threads, the second starting inside the first and ending after it; whether the
    collector was still paused in the second once the first had ended."""
    first_in, second_in, first_done = threading.Event(), threading.Event(), threading.Event()
    paused: list[bool] = []

    def first() -> None:
        with large_write(True):
            first_in.set()
            second_in.wait(timeout=10)
        first_done.set()

    def second() -> None:
        first_in.wait(timeout=10)
        with large_write(True):
            second_in.set()
            first_done.wait(timeout=10)
            paused.append(not gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return paused


def test_overlapping_writes_keep_it_paused_until_the_last_ends():
    gc.enable()
    for _ in range(REPETITIONS):
        assert overlap_once() == [True]
        assert gc.isenabled()


def test_an_open_loads_the_cells_with_the_collector_paused_and_resumes_it(tmp_path, monkeypatch):
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as memory:
        memory.add(["Maria Lopez flew to Lisbon", "the cats purr"])
    restore, collecting = EngineState.restore, []

    def watched(state, *args, **kwargs):
        collecting.append(gc.isenabled())
        restore(state, *args, **kwargs)

    monkeypatch.setattr(EngineState, "restore", watched)
    gc.enable()
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as memory:
        assert gc.isenabled() and len(memory) == 2
    assert collecting == [False]
