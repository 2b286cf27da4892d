"""The agent's loop: write one turn, then search for it. 100K text cells in memory and in an embedded store
(`MAGBENCH_PERF_N`), and one million in memory (opt-in: `MAGBENCH_MILLION=1`).

Each memory answers 30 rounds of each: a one-cell add; a text search right after a one-cell add (the add
is the untimed setup); a text search with no write since the previous search. The summary gives the ratio
of the two searches (the cost a write adds to the next search) and checks nothing by hand: the figures are
pytest-benchmark's medians. Cells are topic sentences made unique by a number; the mock encoder embeds
them (MiniLM would add about 10 ms a turn here, the same with or without a write: the loop's engine cost
is what this measures).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile

import pytest

from reference import CellularMemory
from reference.encoders import MockEncoder
from tests.bench.conftest import N, record, record_ratio, time_queries

ROUNDS = 30
ENCODER = MockEncoder(384)
MEMORIES = [("in_memory", N), ("embedded", N)]
if os.environ.get("MAGBENCH_MILLION"):
    MEMORIES.append(("in_memory_1m", 1_000_000))


def loop_texts(count: int, *, start: int = 0) -> list[str]:
    from harness.data.generators.topics import topic_haystack

    sentences = topic_haystack(2_000, seed=5).texts
    return [f"{sentences[i % len(sentences)]} (note {i})" for i in range(start, start + count)]


@pytest.fixture(scope="module", params=MEMORIES, ids=[label for label, _ in MEMORIES])
def loop(request):
    """A memory of `size` text cells, and a source of new turns (texts it has not seen)."""
    label, size = request.param
    folder = tempfile.mkdtemp(prefix="magbench-loop-") if label == "embedded" else None
    memory = CellularMemory(path=folder, encoder=ENCODER)
    texts = loop_texts(size)
    for start in range(0, size, 50_000):
        memory.add(texts[start : start + 50_000], vectors=ENCODER.encode(texts[start : start + 50_000]))
    turns = iter(loop_texts(100_000, start=size))
    memory.search(next(turns), k=10)  # the first search of the process loads the compiled kernels
    yield label, memory, turns
    memory.close()
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def test_one_cell_add(benchmark, loop):
    label, memory, turns = loop
    time_queries(benchmark, memory.add, setup=lambda: ((next(turns),), {}), rounds=ROUNDS, warmup_rounds=2)
    record(f"loop_{label}_one_cell_add_s", benchmark.stats.stats.median)


def test_text_search_right_after_a_one_cell_add(benchmark, loop):
    label, memory, turns = loop
    written: list[str] = []

    def write_a_turn():
        written.append(next(turns))
        memory.add(written[-1])
        return (written[-1],), {"k": 10}

    found = []
    search = lambda text, k: found.append(memory.search(text, k=k))  # noqa: E731
    time_queries(benchmark, search, setup=write_a_turn, rounds=ROUNDS, warmup_rounds=2)
    record(f"loop_{label}_search_after_write_s", benchmark.stats.stats.median)
    record_ratio(f"loop_{label}_after_write_vs_without", f"loop_{label}_search_after_write_s", f"loop_{label}_search_s")
    assert [hits[0].text for hits in found] == written  # the turn just written is the top hit for its own text


def test_text_search_with_no_write_before_it(benchmark, loop):
    label, memory, _ = loop
    stored = itertools.cycle(loop_texts(1_000, start=7))
    search = lambda text: memory.search(text, k=10)  # noqa: E731
    time_queries(benchmark, search, setup=lambda: ((next(stored),), {}), rounds=ROUNDS, warmup_rounds=2)
    record(f"loop_{label}_search_s", benchmark.stats.stats.median)
