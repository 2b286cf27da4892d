"""One process per embedded store, enforced by the OS: two processes open one store at the same instant,
200 times, and exactly one of them gets it each time."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from tests.reliability.counts import record

TRIALS = 200


def race(path: str, barrier, outcomes) -> None:
    """Open at the barrier's release, report, close at the next one; `TRIALS` times."""
    from reference import BackendUnavailableError, CellularMemory
    from reference.encoders import MockEncoder

    for trial in range(TRIALS):
        barrier.wait()
        try:
            memory, refusal = CellularMemory(path=path, encoder=MockEncoder(16)), ""
        except BackendUnavailableError as error:
            memory, refusal = None, str(error)
        outcomes.put((trial, memory is not None, refusal))  # a queue's feeder thread may deliver it late
        barrier.wait()  # both have tried
        if memory is not None:
            memory.close()
        barrier.wait()  # the store is free again


def test_two_processes_opening_one_store_at_once_exactly_one_opens_each_time(tmp_path: Path):
    from reference import CellularMemory
    from reference.encoders import MockEncoder

    path = str(tmp_path / "store")
    with CellularMemory(path=path, encoder=MockEncoder(16)) as memory:
        memory.add(["a note already there"])
    context = multiprocessing.get_context("spawn")
    barrier, outcomes = context.Barrier(2), context.Queue()
    racers = [context.Process(target=race, args=(path, barrier, outcomes)) for _ in range(2)]
    for racer in racers:
        racer.start()
    trials: list[list[tuple[bool, str]]] = [[] for _ in range(TRIALS)]
    for _ in range(2 * TRIALS):
        trial, opened, refusal = outcomes.get(timeout=120)
        trials[trial].append((opened, refusal))
    for racer in racers:
        racer.join(60)
        assert racer.exitcode == 0
    opened_per_trial = [sum(opened for opened, _ in trial) for trial in trials]
    odd = {i: trial for i, trial in enumerate(trials) if opened_per_trial[i] != 1}
    assert not odd, f"trials where not exactly one opened: {odd}"
    with CellularMemory(path=path, encoder=MockEncoder(16)) as memory:
        assert len(memory) == 1
        memory.check_invariants()
    record("one_writer", trials=TRIALS, processes=2, opened_by_exactly_one=opened_per_trial.count(1))
