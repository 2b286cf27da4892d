"""Timing passes: more of them while the medians are unsettled, never fewer than planned."""

import itertools
import os
import threading

import pytest

from harness.data.generated import vectors_evalset
from harness.measure import timing
from harness.measure.timing import Job, measure_together
from harness.verdicts.confidence import unsettled

STEADY = (1.0, 1.01, 0.99, 1.0, 1.0)
DRIFTING = (0.75, 1.0, 1.25, 0.8, 1.2)


def passes_of(factors: tuple[float, ...], queries: int = 40) -> list[list[int]]:
    return [[int(1e6 * factor)] * queries for factor in factors]


def test_medians_that_drift_between_passes_are_unsettled():
    assert not unsettled([passes_of(STEADY), passes_of(STEADY[::-1])])
    assert unsettled([passes_of(DRIFTING), passes_of(DRIFTING[::-1])])
    assert unsettled([passes_of(STEADY), passes_of(STEADY), passes_of(DRIFTING)])  # any one that decides a verdict


@pytest.mark.parametrize(("factors", "expected"), [(STEADY, 5), (DRIFTING, 9)])
def test_unsettled_timing_gets_more_passes_up_to_the_cap(monkeypatch, factors, expected):
    """Latencies come from a stand-in clock: the planned 5 passes, then more while they drift."""
    drift = itertools.cycle(factors)
    timed = timing._run_queries

    def run_queries(*args, **kwargs):
        retrieved, latencies = timed(*args, **kwargs)
        return retrieved, [int(1e6 * next(drift))] * len(latencies)

    monkeypatch.setattr(timing, "_run_queries", run_queries)
    evalset = vectors_evalset(500, queries=25, dim=16, clusters=5)  # one setting: a factor per pass
    jobs = [Job("flat-numpy", evalset, "vectors", decides=True)]
    (measurement,) = measure_together(jobs, passes=5, max_passes=9)
    assert len(measurement.pass_latencies_ns) == expected
    (single,) = measure_together(jobs, passes=1, max_passes=9)  # one planned pass: no spread to judge by
    assert len(single.pass_latencies_ns) == 1
    (aside,) = measure_together([Job("flat-numpy", evalset, "vectors")], passes=5, max_passes=9)
    assert len(aside.pass_latencies_ns) == 5  # its latency decides no verdict: no passes beyond the plan


def test_queries_are_timed_on_one_core_and_builds_are_not(monkeypatch):
    """BLAS (and OpenMP) pools are held to one thread while queries are timed, as ann-benchmarks does; a build
    keeps every thread the process has (three here, so that one thread reads as a pin)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    threads: dict[str, set[int]] = {"timed": set(), "built": set()}
    timed, opened = timing._run_queries, timing.open_system

    def run_queries(*args, **kwargs):
        threads["timed"] |= blas_threads()
        return timed(*args, **kwargs)

    def open_system(*args, **kwargs):
        system = opened(*args, **kwargs)
        add = system.add

        def counted_add(docs):
            threads["built"] |= blas_threads()
            return add(docs)

        system.add = counted_add
        return system

    monkeypatch.setattr(timing, "_run_queries", run_queries)
    monkeypatch.setattr(timing, "open_system", open_system)
    evalset = vectors_evalset(300, queries=25, dim=16, clusters=5)
    with threadpool_limits(limits=3, user_api="blas"):
        measure_together([Job("flat-numpy", evalset, "vectors")], passes=2)
        assert blas_threads() == {3}  # as it was before
    assert threads["timed"] == {1}
    assert threads["built"] == {3}


def test_each_setting_answers_all_its_queries_back_to_back_in_an_order_that_rotates(monkeypatch):
    """No other search runs between two of a setting's (an exact scan would flush its data from the caches),
    the settings take turns in an order that rotates from pass to pass, and every setting's latencies and
    answers line up with the queries."""
    calls: list[tuple[str, tuple, int]] = []
    chosen: list[tuple[str, tuple]] = []
    timed, choose = timing._run_queries, timing._set

    def set_params(item, params):
        chosen.append((item.system.name, tuple(sorted(params.items()))))
        choose(item, params)

    def run_queries(system, evalset, known, k):
        retrieved, latencies = timed(system, evalset, known, k)
        calls.append((*chosen[-1], len(latencies)))
        return retrieved, latencies

    monkeypatch.setattr(timing, "_set", set_params)
    monkeypatch.setattr(timing, "_run_queries", run_queries)
    evalset = vectors_evalset(600, queries=30, dim=16, clusters=5)
    jobs = [Job("flat-numpy", evalset, "vectors"), Job("kmeans", evalset, "vectors", sweep=True)]
    measurements = measure_together(jobs, passes=2)
    per_pass = len(measurements)
    assert len(calls) == 2 * per_pass and all(queries == 30 for *_, queries in calls)
    first, second = calls[:per_pass], calls[per_pass:]
    assert len(set(first)) == per_pass and sorted(first) == sorted(second) and first[0] != second[0]
    assert all(len(one_pass) == len(evalset.queries) for m in measurements for one_pass in m.pass_latencies_ns)
    assert all(0 not in one_pass for m in measurements for one_pass in m.pass_latencies_ns)
    assert measurements[0].recall_at_10 == 1.0  # exact search, its answers in query order


def test_each_setting_of_a_sweep_is_described_in_that_setting():
    """A recall target's measurement carries that target's estimate and the bytes its searches read, not those
    of the setting timed last."""
    evalset = vectors_evalset(5_000, queries=25, dim=32, clusters=20, spread=1.5)  # diffuse
    measured = measure_together([Job("reference", evalset, "vectors", sweep=True)], passes=1)
    by_target = {m.params.get("target_recall"): m.describe for m in measured}
    assert by_target[None]["target_recall"] == 0.95
    assert all(describe["target_recall"] == target for target, describe in by_target.items() if target is not None)
    assert len({describe["probe_margin"] for describe in by_target.values()}) > 1
    read = {target: describe["bytes_read_per_search"] for target, describe in by_target.items()}
    assert 0 < read[0.8] < read[0.99] < 5_000 * 32 * 4  # each setting's own reads, fewer than a flat search's


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_queries_are_timed_with_every_thread_of_the_process_on_one_cpu():
    """A library's own thread, started before timing (as embedded Chroma's are), is held to the caller's CPU while
    queries are timed and gets its CPUs back after."""
    started, done = threading.Event(), threading.Event()
    native: list[int] = []

    def library_thread() -> None:
        native.append(threading.get_native_id())
        started.set()
        done.wait()

    helper = threading.Thread(target=library_thread)
    helper.start()
    started.wait()
    before = os.sched_getaffinity(native[0])
    try:
        with timing.one_cpu():
            pinned = os.sched_getaffinity(native[0])
            assert pinned == os.sched_getaffinity(0) and len(pinned) == 1
        assert os.sched_getaffinity(native[0]) == before and len(before) > 1
    finally:
        done.set()
        helper.join()
