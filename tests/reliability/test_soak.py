"""Soak: 4 search threads, 1 ingest thread and background sleep on a persistent memory, for a bounded
number of operations — zero exceptions, consistent counts, recall unchanged."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.measure.metrics import recall_at_k
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from tests.reliability.counts import record
from tests.threads import run_concurrently

SEARCHES_PER_THREAD = 250
INGEST_BATCHES = 40
BATCH = 25


def recall(memory: CellularMemory, vectors: np.ndarray, ids: list[str], queries: np.ndarray) -> float:
    truth = [[ids[i] for i in row] for row in exact_top_k(vectors, queries, 10).tolist()]
    return recall_at_k([[h.id for h in memory.search(q, k=10)] for q in queries], truth, 10)


def test_soak(tmp_path):
    data = clustered_unit_vectors(2_000 + INGEST_BATCHES * BATCH, 64, clusters=20, queries=100, seed=3)
    base, extra = data.vectors[:2_000], data.vectors[2_000:]
    with CellularMemory(
        path=str(tmp_path), encoder=MockEncoder(64), config=MemoryConfig(merge_threshold=0.8)
    ) as memory:
        ids = memory.add([f"base {i}" for i in range(len(base))], vectors=base)
        before = recall(memory, base, ids, data.queries)

        def searcher(seed: int) -> Callable[[], None]:
            def search() -> None:
                rng = np.random.default_rng(seed)
                for _ in range(SEARCHES_PER_THREAD):
                    hits = memory.search(data.queries[rng.integers(len(data.queries))], k=10)
                    assert len(hits) == 10 and len({h.id for h in hits}) == 10

            return search

        added: list[str] = []

        def ingester() -> None:
            for batch in range(INGEST_BATCHES):
                rows = extra[batch * BATCH : (batch + 1) * BATCH]
                added.extend(memory.add([f"extra {batch}-{i}" for i in range(BATCH)], vectors=rows))

        memory.start_sleep(0.01)
        errors = run_concurrently(*(searcher(s) for s in range(4)), ingester)
        memory.stop_sleep()
        assert not errors, errors[:3]
        assert not memory.sleep_errors
        assert len(memory) == len(base) + INGEST_BATCHES * BATCH == len(set(memory.ids()))
        every = np.vstack([base, extra])
        after = recall(memory, every, ids + added, data.queries)
        passes = len(memory.sleep_reports)
        merges = sum(len(r.merges) for r in memory.sleep_reports)
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(64)) as reopened:
        assert sorted(reopened.ids()) == sorted(ids + added)
    record(
        "soak",
        search_threads=4,
        searches=4 * SEARCHES_PER_THREAD,
        ingest_batches=INGEST_BATCHES,
        cells_ingested=INGEST_BATCHES * BATCH,
        sleep_passes=passes,
        merges=merges,
        recall_before=before,
        recall_after=after,
    )
    assert after >= before - 0.02, (before, after)
