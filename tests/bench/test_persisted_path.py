"""The persisted write path against raw Chroma doing the same writes in the same run, at 20K and
`MAGBENCH_PERF_N` (100K) text cells: bulk ingest (batches of 1,000, vectors given), a one-turn add,
reopening until ready to search (raw Chroma: reopen and read every record with its embedding), and the
first text search after reopening against any other. The summary gives each ratio.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time

import chromadb
import pytest
from chromadb.config import Settings

from harness.runner import one_core
from reference import CellularMemory
from reference.encoders import MockEncoder
from tests.bench.conftest import N, record, record_ratio, time_queries
from tests.bench.test_agent_loop import loop_texts

BATCH = 1_000
ROUNDS = 30
ENCODER = MockEncoder(384)
SIZES = sorted({20_000, N})


class RawChroma:
    """What a user of Chroma alone writes: ids, embeddings and documents in one cosine collection."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
        self.collection = self.client.get_or_create_collection(
            "raw_cells", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )

    def add(self, ids, texts, vectors) -> None:
        self.collection.add(ids=ids, embeddings=vectors, documents=texts)

    def read_everything(self) -> int:
        return len(self.collection.get(include=["documents", "embeddings"])["ids"])

    def close(self) -> None:
        self.client.close()


@pytest.fixture(scope="module", params=SIZES, ids=[f"{n // 1000}K" for n in SIZES])
def stores(request):
    """A raw Chroma store and an engine store holding the same `size` cells, each ingest timed."""
    size = request.param
    texts = loop_texts(size)
    vectors = ENCODER.encode(texts)
    folders = [tempfile.mkdtemp(prefix="magbench-persisted-") for _ in range(2)]
    raw, engine = RawChroma(folders[0]), CellularMemory(path=folders[1], encoder=ENCODER)
    for name, write in (
        ("raw", lambda s: raw.add([str(i) for i in range(s, s + BATCH)], texts[s : s + BATCH], vectors[s : s + BATCH])),
        ("engine", lambda s: engine.add(texts[s : s + BATCH], vectors=vectors[s : s + BATCH])),
    ):
        started = time.perf_counter()
        for start in range(0, size, BATCH):
            write(start)
        record(f"persisted_{size}_{name}_ingest_cells_per_s", size / (time.perf_counter() - started))
    record_ratio(
        f"persisted_{size}_engine_vs_raw_ingest",
        f"persisted_{size}_engine_ingest_cells_per_s",
        f"persisted_{size}_raw_ingest_cells_per_s",
    )
    yield size, raw, engine, folders
    raw.close()
    engine.close()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def close_last(opened: list) -> None:
    """Close the store opened last, if any (setup between timed reopens)."""
    if opened:
        opened[-1].close()


def test_one_turn_add_raw(benchmark, stores):
    size, raw, _, _ = stores
    turns = iter(loop_texts(ROUNDS + 2, start=size))
    counter = iter(range(size, size + ROUNDS + 2))

    def turn():
        text = next(turns)
        return ([str(next(counter))], [text], ENCODER.encode([text])), {}

    time_queries(benchmark, raw.add, setup=turn, rounds=ROUNDS, warmup_rounds=2)
    record(f"persisted_{size}_raw_one_turn_add_s", benchmark.stats.stats.median)


def test_one_turn_add_engine(benchmark, stores):
    size, _, engine, _ = stores
    turns = iter(loop_texts(ROUNDS + 2, start=size))
    time_queries(benchmark, engine.add, setup=lambda: ((next(turns),), {}), rounds=ROUNDS, warmup_rounds=2)
    record(f"persisted_{size}_engine_one_turn_add_s", benchmark.stats.stats.median)
    record_ratio(
        f"persisted_{size}_engine_vs_raw_one_turn_add",
        f"persisted_{size}_engine_one_turn_add_s",
        f"persisted_{size}_raw_one_turn_add_s",
    )


def test_reopen_raw(benchmark, stores):
    size, raw, _, folders = stores
    raw.close()
    opened: list[RawChroma] = []

    def reopen_and_read() -> None:
        opened.append(RawChroma(folders[0]))
        assert opened[-1].read_everything() == size + ROUNDS + 2

    benchmark.pedantic(reopen_and_read, setup=lambda: close_last(opened), rounds=3)
    record(f"persisted_{size}_raw_reopen_and_read_s", benchmark.stats.stats.median)
    close_last(opened)


def test_reopen_engine_until_ready_to_search(benchmark, stores):
    size, _, engine, folders = stores
    engine.close()
    opened: list[CellularMemory] = []

    def reopen() -> None:
        opened.append(CellularMemory(path=folders[1], encoder=ENCODER))

    benchmark.pedantic(reopen, setup=lambda: close_last(opened), rounds=3)
    assert len(opened[-1]) == size + ROUNDS + 2
    close_last(opened)
    record(f"persisted_{size}_engine_reopen_s", benchmark.stats.stats.median)
    record_ratio(
        f"persisted_{size}_engine_vs_raw_reopen",
        f"persisted_{size}_engine_reopen_s",
        f"persisted_{size}_raw_reopen_and_read_s",
    )


def test_first_text_search_after_reopening(benchmark, stores):
    """The first text search of a freshly reopened store (the reopen untimed) against later ones."""
    size, _, _, folders = stores
    opened: list[CellularMemory] = []
    queries = iter(loop_texts(200, start=11))

    def reopen():
        close_last(opened)
        opened.append(CellularMemory(path=folders[1], encoder=ENCODER))
        return (next(queries),), {"k": 10}

    time_queries(benchmark, lambda text, k: opened[-1].search(text, k=k), setup=reopen, rounds=5, warmup_rounds=0)
    record(f"persisted_{size}_first_text_search_after_reopen_s", benchmark.stats.stats.median)
    later = []
    with one_core():
        for query in list(queries)[:30]:
            started = time.perf_counter()
            opened[-1].search(query, k=10)
            later.append(time.perf_counter() - started)
    close_last(opened)
    record(f"persisted_{size}_later_text_search_s", statistics.median(later))
    record_ratio(
        f"persisted_{size}_first_vs_later_text_search",
        f"persisted_{size}_first_text_search_after_reopen_s",
        f"persisted_{size}_later_text_search_s",
    )
