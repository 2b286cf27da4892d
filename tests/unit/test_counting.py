"""Counts that threads share (a memory's search tallies, its cells' access counts) are atomic adds: threads that
count into the same array at once, without the GIL as the compiled probe does, lose none of their counts."""

from __future__ import annotations

from functools import partial

import numpy as np
from numba import njit

from reference.kernels.intrinsics import atomic_add
from reference.kernels.rows import BYTES_READ, FLAT, SEARCHES, count_reads, tally
from reference.state.engine import SearchCounters
from tests.threads import run_concurrently

ROUNDS, TIMES = 300_000, 4
"""Counts per thread, and times two threads count at once: with a plain add in place of the atomic one, they lose
thousands of counts whenever the machine runs them at the same time (on a shared machine, not every time)."""


@njit(nogil=True)
def counting(
    access: np.ndarray, rows: np.ndarray, tallies: np.ndarray, started: np.ndarray, threads: int, rounds: int
) -> None:
    """What a probe counts, `rounds` times over, without the GIL, once all `threads` have started (each adds one
    to `started[0]`): they count at once, not one after another."""
    atomic_add(started, 0, 1)
    while atomic_add(started, 0, 0) < threads:
        pass
    for _ in range(rounds):
        count_reads(access, rows)
        tally(tallies, 1, 0, 3)


def test_two_threads_counting_into_the_same_cells_without_the_gil_lose_no_count():
    access, tallies = np.zeros(8, np.int64), np.zeros(3, np.int64)
    rows = np.array([1, 5, 5], np.int64)  # a row twice: two adds to one cell within a count
    counting(access, rows, tallies, np.zeros(1, np.int64), 1, 1)  # compiled before the threads start
    access[:], tallies[:] = 0, 0
    for _ in range(TIMES):
        assert not run_concurrently(*[partial(counting, access, rows, tallies, np.zeros(1, np.int64), 2, ROUNDS)] * 2)
    counts = TIMES * ROUNDS
    assert access.tolist() == [0, 2 * counts, 0, 0, 0, 4 * counts, 0, 0]
    assert (tallies[SEARCHES], tallies[FLAT], tallies[BYTES_READ]) == (2 * counts, 0, 6 * counts)


def test_counters_count_many_searches_and_their_bytes_at_once_and_read_what_the_probe_tallies():
    counters = SearchCounters()
    counters.count(flat=False, searches=3, bytes_read=1200)
    counters.count(flat=True)
    counters.read(5)
    tally(counters.tallies, 1, 0, 10)  # as the compiled probe counts its search
    assert (counters.searches, counters.flat, counters.bytes_read) == (5, 1, 1215)
