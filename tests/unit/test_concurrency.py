"""Concurrency: clients' plans, levels of threads searching with and without writes, answers scored."""

import asyncio
import time

import pytest

from harness.experiments.concurrency import concurrency_rows
from harness.measure.clients import drive, searches, writes


def test_writes_keep_their_rate_and_searches_run_until_the_stop():
    start = time.monotonic_ns() + 10_000_000
    written = drive(writes(5, 100, 200.0, start, start + 100_000_000), lambda cell: f"id-{cell}")
    assert [w.cell for w in written] == list(range(5, 25)) and written[-1].id == "id-24"  # 200/s for 0.1 s
    assert all(w.acknowledged_ns >= start + i * 5_000_000 for i, w in enumerate(written))  # never before its time
    start = time.monotonic_ns() + 10_000_000
    searched = drive(searches(7, 3, start, start + 30_000_000), lambda query: [])
    assert [s.query for s in searched[:6]] == [3, 4, 5, 6, 0, 1]  # round the list
    assert all(start <= s.started_ns < start + 30_000_000 for s in searched)
    assert drive(writes(95, 100, 200.0, start, start + 10**9), str)[-1].cell == 99  # the pool ends them


def test_a_plan_in_a_thread_runs_without_an_event_loop_so_a_systems_call_may_start_its_own():
    async def found(query: int) -> list:
        return [query]

    start = time.monotonic_ns() + 5_000_000
    searched = drive(searches(4, 0, start, start + 20_000_000), lambda query: asyncio.run(found(query)))
    assert searched and [s.hits for s in searched[:5]] == [[0], [1], [2], [3], [0]]
    assert all(s.started_ns >= start for s in searched)  # the plan's start kept, by blocking


def test_every_level_is_measured_alone_and_while_writing_and_exact_search_keeps_its_recall():
    rows = concurrency_rows(("flat-numpy", "reference-dense"), cells=600, queries=20, levels=(1, 2), seconds=0.2)
    assert [(r.system, r.clients, bool(r.writes_per_s)) for r in rows] == [
        (system, clients, writing)
        for system in ("flat-numpy", "reference-dense")
        for writing in (False, True)
        for clients in (1, 2)
    ]
    for row in rows:
        assert row.searches > 0 and row.qps > 0 and row.p99_ms >= row.p50_ms and row.short == 0
        assert row.transport == "threads in process" and row.cells == 600
    assert all(r.recall_at_10 == 1.0 for r in rows if r.system == "flat-numpy")  # new cells included
    assert all(r.recall_at_10 >= 0.95 for r in rows)
    assert all(r.writes_per_s == pytest.approx(20.0, abs=5.1) for r in rows if r.writes_per_s)


def test_a_system_whose_searches_trip_over_each_other_is_exact_alone_and_not_at_once():
    rows = concurrency_rows(("tests.faults:SharesScratch",), cells=600, queries=40, levels=(1, 4), seconds=0.3)
    alone, together = rows[0], rows[1]
    assert alone.clients == 1 and alone.recall_at_10 == 1.0
    assert together.clients == 4 and together.recall_at_10 < 0.9


def test_each_level_is_measured_in_windows_taken_in_turn_and_shows_their_spread():
    rows = concurrency_rows(("flat-numpy",), cells=300, queries=20, levels=(1, 2), seconds=0.3, windows=3)
    assert [(r.clients, bool(r.writes_per_s)) for r in rows] == [(1, False), (2, False), (1, True), (2, True)]
    for row in rows:
        assert len(row.window_qps) == 3 and min(row.window_qps) > 0
        assert row.qps == pytest.approx(sorted(row.window_qps)[1])  # the median window's
