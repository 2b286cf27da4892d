"""Latency scaling under pytest-benchmark: every system at every N, and a query-parameter sweep.

Serial only (`-n 0`). Sizes come from MAGBENCH_SIZES (default 1000,10000,25000,100000; add
1000000 to opt in to 1M). Build happens once per (system, N) outside the timed code; the first
queries are warm-up rounds. Recall@10 against exact search is attached to each benchmark.
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
from pathlib import Path

import pytest

from harness.data.generated import vectors_evalset
from harness.experiments.scaling import SYSTEMS as SCALING_SYSTEMS
from harness.measure.metrics import recall_at_k
from harness.measure.plan import SLOW_SYSTEMS
from harness.measure.timing import open_system
from tests.bench.conftest import time_queries

SIZES = [int(n) for n in os.environ.get("MAGBENCH_SIZES", "1000,10000,25000,100000").split(",")]
SWEEP_SIZE = max(SIZES)


@functools.cache
def evalset(n: int):
    return vectors_evalset(n, queries=200, seed=n)


@pytest.fixture(scope="module")
def built():
    """Systems built once per (name, N) and closed at the end of the module."""
    cache: dict[tuple[str, int], object] = {}
    folders = []

    def get(name: str, n: int):
        if (name, n) not in cache:
            folders.append(tempfile.TemporaryDirectory(prefix="magbench-bench-"))
            system = open_system(name, evalset(n), encoder="vectors", workdir=Path(folders[-1].name))
            system.add(evalset(n).docs)
            cache[name, n] = system
        return cache[name, n]

    yield get
    for system in cache.values():
        system.close()
    for folder in folders:
        folder.cleanup()


def timed_queries(benchmark, system, n: int) -> None:
    data = evalset(n)
    retrieved = [[h.doc_id for h in system.search(q, k=10)] for q in data.queries]
    benchmark.extra_info.update(n=n, recall_at_10=recall_at_k(retrieved, data.relevant(), 10))
    next_query = itertools.cycle(data.queries).__next__
    time_queries(benchmark, lambda: system.search(next_query(), k=10), rounds=len(data.queries), warmup_rounds=20)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", SCALING_SYSTEMS)
def test_latency_vs_n(benchmark, built, name, n):
    if n > SLOW_SYSTEMS.get(name, n):
        pytest.skip(f"{name} is built only up to N={SLOW_SYSTEMS[name]:,} (slow ingest)")
    benchmark.group = f"N={n}"
    timed_queries(benchmark, built(name, n), n)
    assert benchmark.extra_info["recall_at_10"] >= 0.9, f"{name} at its defaults: recall {benchmark.extra_info}"


SWEEPS = {
    "reference": ("probe_per_sqrt_n", (2, 4, 8, 16, 32)),
    "kmeans": ("nprobe", (1, 2, 3, 5, 8)),
    "faiss-ivf": ("nprobe", (1, 2, 4, 8, 16)),
}


@pytest.mark.parametrize(("name", "value"), [(name, value) for name, (_, values) in SWEEPS.items() for value in values])
def test_parameter_sweep(benchmark, built, name, value):
    param, values = SWEEPS[name]
    system = built(name, SWEEP_SIZE)
    benchmark.group = f"sweep N={SWEEP_SIZE}"
    system.set_query_params(**{param: value})
    benchmark.extra_info[param] = value
    timed_queries(benchmark, system, SWEEP_SIZE)
    if value == max(values):  # the most thorough setting of each system must reach high recall
        assert benchmark.extra_info["recall_at_10"] >= 0.95
