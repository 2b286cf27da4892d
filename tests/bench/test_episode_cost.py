"""What the episode layer costs at 100K text cells (`MAGBENCH_PERF_N`) in memory, written as sessions of 20
turns: text searches (text and vector, fused, then each cell scored with its episode's and neighbours'
evidence and its turn form) with the default settings against the same searches with every stage after fusion
off (fusion alone), and
vector-only searches, which the layer must leave unchanged, likewise, each query timed both ways in the same
round. The summary gives each ratio."""

from __future__ import annotations

import itertools
import statistics
import time

import pytest

from reference import CellularMemory, MemoryConfig
from tests.bench.conftest import N, record, record_ratio, time_queries
from tests.bench.test_agent_loop import ENCODER, loop_texts

ROUNDS = 200
TURNS_PER_SESSION = 20
AFTER_FUSION = {
    name: getattr(MemoryConfig(), name)
    for name in ("episode_weight", "neighbour_weight", "asking_penalty", "speaker_weight")
}
"""The settings of the stages after fusion (context and turn form), at their defaults."""


@pytest.fixture(scope="module")
def sessions():
    texts = loop_texts(N)
    memory = CellularMemory(encoder=ENCODER)
    for start in range(0, N, 50_000):
        part = texts[start : start + 50_000]
        names = [f"session-{(start + i) // TURNS_PER_SESSION}" for i in range(len(part))]
        memory.add(part, vectors=ENCODER.encode(part), episode=names)
    queries = [(text, vector) for text, vector in zip(texts[::997], ENCODER.encode(texts[::997]))]
    memory.search(queries[0][0], vector=queries[0][1], k=10)  # the first search loads the compiled kernels
    yield memory, queries
    memory.close()


@pytest.mark.parametrize("query", ["text", "vector_only"])
def test_search_with_and_without_the_episode_layer(benchmark, sessions, query):
    """Each round searches one query once untimed (warming the caches for both settings), then times it
    with fusion alone and with the episode layer, in alternating order (whichever runs second finds warmer
    caches); pytest-benchmark then times it once more with the layer. The ratio is of the paired timings.
    Timing the settings in blocks one after the other made the first block pay for the machine's drift:
    1.02x in one run, 1.19x in the next, on the same code; a fixed order inside each round, 0.92x for the
    vector-only searches the layer does not touch."""
    memory, texts_and_vectors = sessions
    queries = itertools.cycle(texts_and_vectors)
    if query == "text":
        search = lambda text, vector: memory.search(text, vector=vector, k=10)  # noqa: E731
    else:
        search = lambda text, vector: memory.search(vector, k=10)  # noqa: E731
    settings = {"with_episodes": AFTER_FUSION, "fusion_alone": dict.fromkeys(AFTER_FUSION, 0.0)}
    spent: dict[str, list[float]] = {name: [] for name in settings}

    def both_settings_first():
        text, vector = next(queries)
        search(text, vector)
        order = list(settings) if len(spent["fusion_alone"]) % 2 else list(settings)[::-1]
        for name in order:
            memory.set_search_options(**settings[name])
            started = time.perf_counter()
            search(text, vector)
            spent[name].append(time.perf_counter() - started)
        memory.set_search_options(**AFTER_FUSION)
        return (text, vector), {}

    time_queries(benchmark, search, setup=both_settings_first, rounds=ROUNDS, warmup_rounds=2)
    for name, seconds in spent.items():
        record(f"episodes_{query}_search_{name}_s", statistics.median(seconds[2:]))
    record_ratio(
        f"episodes_{query}_search_cost",
        f"episodes_{query}_search_with_episodes_s",
        f"episodes_{query}_search_fusion_alone_s",
    )
