"""Background sleep while 4 threads search and 1 adds: no error, no lost or orphaned cell."""

from collections.abc import Callable

import numpy as np

from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.sleep.regrouping import plan_merges
from tests.threads import run_concurrently

SEARCHES_PER_THREAD = 150
ADD_BATCHES = 60


def batch_vectors(batch: int, rng_seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(rng_seed + batch + 1)
    centres = np.random.default_rng(99).standard_normal((6, 32))
    return centres[rng.integers(0, 6, 5)] + 0.2 * rng.standard_normal((5, 32))


def texts(batch: int) -> list[str]:
    return [f"batch {batch} note {i}" for i in range(5)]


def consistent(memory: CellularMemory) -> None:
    groups = memory._state.groups
    members = np.bincount([memory.get(i).group_id for i in memory.ids()], minlength=groups.n_slots)
    assert members.tolist() == groups.counts.tolist()


def test_sleep_searches_and_adds_run_together_and_end_where_a_sequential_replay_ends():
    config = MemoryConfig(join_threshold=0.97, merge_threshold=0.8)  # ingest fragments, sleep merges
    with CellularMemory(encoder=MockEncoder(32), config=config) as memory:
        memory.add(texts(-1), vectors=batch_vectors(-1))

        def searcher(seed: int) -> Callable[[], None]:
            def search() -> None:
                rng = np.random.default_rng(seed)
                for _ in range(SEARCHES_PER_THREAD):
                    hits = memory.search(rng.standard_normal(32), k=5)
                    assert len({h.id for h in hits}) == len(hits) and hits

            return search

        def adder() -> None:
            for batch in range(ADD_BATCHES):
                memory.add(texts(batch), vectors=batch_vectors(batch))

        memory.start_sleep(0.002)
        errors = run_concurrently(*(searcher(s) for s in range(4)), adder, timeout=120)
        memory.stop_sleep()
        assert not errors, errors
        assert len(memory.sleep_reports) > 0 and not memory.sleep_errors
        memory.consolidate()
        consistent(memory)
        assert plan_merges(memory._state.groups, config.merge_threshold) == []  # fully consolidated
        concurrent_state = {i: memory.get(i).text for i in memory.ids()}

    with CellularMemory(encoder=MockEncoder(32), config=config) as replay:
        replay.add(texts(-1), vectors=batch_vectors(-1))
        for batch in range(ADD_BATCHES):
            replay.add(texts(batch), vectors=batch_vectors(batch))
        replay.consolidate()
        assert plan_merges(replay._state.groups, config.merge_threshold) == []
        assert sorted(concurrent_state.values()) == sorted(replay.get(i).text for i in replay.ids())
        assert len(concurrent_state) == len(replay) == 5 * (ADD_BATCHES + 1)
