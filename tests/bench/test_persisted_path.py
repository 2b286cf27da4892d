"""The persisted write path against raw Chroma doing the same writes in the same run, at 20K and
`MAGBENCH_PERF_N` (100K) text cells: bulk ingest (batches of 1,000, vectors given), a one-turn add,
reopening until ready to search (raw Chroma: reopen and read every record with its embedding), and the
first text search after reopening against any other. The summary gives each ratio. The engine's compiled code is
loaded before anything is timed, as Chroma's is at import.

Raw Chroma writes ids, embeddings and documents, as a user of Chroma alone does. The engine gives Chroma
ids and embeddings only (its texts live in its own SQLite file): bulk ingest is also timed against raw
Chroma writing ids and embeddings alone, the floor of what the engine asks of Chroma.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from functools import partial

import chromadb
import pytest
from chromadb.config import Settings

from harness.measure.timing import one_core, one_cpu
from reference import CellularMemory
from reference.cells.table import new_ids
from reference.encoders import MockEncoder
from tests.bench.conftest import N, load_engine_code, record, record_ratio, time_queries
from tests.bench.test_agent_loop import loop_texts

BATCH = 1_000
ROUNDS = 30
ENCODER = MockEncoder(384)
SIZES = sorted({20_000, N})


class RawChroma:
    """What a user of Chroma alone writes: ids, embeddings and documents in one cosine collection."""

    def __init__(self, path: str, documents: bool = True) -> None:
        self.path, self.documents = path, documents
        self.client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
        self.collection = self.client.get_or_create_collection(
            "raw_cells", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )

    def add(self, ids, texts, vectors) -> None:
        self.collection.add(ids=ids, embeddings=vectors, **({"documents": texts} if self.documents else {}))

    def read_everything(self) -> int:
        return len(self.collection.get(include=["documents", "embeddings"])["ids"])

    def close(self) -> None:
        self.client.close()


@pytest.fixture(scope="module", params=SIZES, ids=[f"{n // 1000}K" for n in SIZES])
def stores(request):
    """A raw Chroma store and an engine store holding the same `size` cells (and, during ingest only, a raw
    Chroma store of ids and embeddings alone). Their writes alternate batch by batch (and turn by turn below),
    so that a change in the machine's load falls on all alike."""
    size = request.param
    load_engine_code()
    texts = loop_texts(size)
    vectors = ENCODER.encode(texts)
    folders = [tempfile.mkdtemp(prefix="magbench-persisted-") for _ in range(3)]
    raw, engine = RawChroma(folders[0]), CellularMemory(path=folders[1], encoder=ENCODER)
    vectors_only = RawChroma(folders[2], documents=False)
    ids = new_ids(size)  # every store writes the same ids, texts and vectors
    spent: dict[str, list[float]] = {"raw": [], "engine": [], "raw_vectors_only": []}
    for batch in (slice(start, start + BATCH) for start in range(0, size, BATCH)):
        spent["raw"].append(timed(partial(raw.add, ids[batch], texts[batch], vectors[batch])))
        spent["engine"].append(timed(partial(engine.add, texts[batch], vectors=vectors[batch], ids=ids[batch])))
        spent["raw_vectors_only"].append(timed(partial(vectors_only.add, ids[batch], texts[batch], vectors[batch])))
    vectors_only.close()
    for name, seconds in spent.items():
        record(f"persisted_{size}_{name}_ingest_cells_per_s", size / sum(seconds))
    for baseline in ("raw", "raw_vectors_only"):
        record_ratio(
            f"persisted_{size}_engine_vs_{baseline}_ingest",
            f"persisted_{size}_engine_ingest_cells_per_s",
            f"persisted_{size}_{baseline}_ingest_cells_per_s",
            rounds=[theirs / ours for ours, theirs in zip(spent["engine"], spent[baseline])],
        )
    yield size, raw, engine, folders
    raw.close()
    engine.close()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def paired(engine_seconds: list[float], raw_seconds: list[float]) -> list[float]:
    """The engine's time over the raw store's in each round (the two ran side by side in it)."""
    assert len(engine_seconds) == len(raw_seconds), "every timed round pairs one engine call with one raw call"
    return [ours / theirs for ours, theirs in zip(engine_seconds, raw_seconds)]


def close_last(opened: list) -> None:
    """Close the store opened last, if any (setup between timed reopens)."""
    if opened:
        opened[-1].close()


def test_one_turn_add(benchmark, stores):
    """One turn written to each store in turn (30 rounds); pytest-benchmark times the engine's, the raw
    store's are timed beside them in the same rounds, on one CPU (`one_cpu`). Each store's time includes encoding the
    turn, as the engine encodes the texts it is given."""
    size, raw, engine, _ = stores
    turns = iter(loop_texts(ROUNDS + 2, start=size))
    raw_seconds: list[float] = []

    def raw_turn_first():
        text, [cell_id] = next(turns), new_ids(1)
        raw_seconds.append(timed(lambda: raw.add([f"raw-{cell_id}"], [text], ENCODER.encode([text]))))
        return (text,), {"ids": [cell_id]}

    with one_cpu():  # a turn's latency, timed as queries are: Chroma's threads on the caller's CPU, both stores alike
        time_queries(benchmark, engine.add, setup=raw_turn_first, rounds=ROUNDS, warmup_rounds=2)
    record(f"persisted_{size}_engine_one_turn_add_s", benchmark.stats.stats.median)
    record(f"persisted_{size}_raw_one_turn_add_s", statistics.median(raw_seconds[2:]))
    record_ratio(
        f"persisted_{size}_engine_vs_raw_one_turn_add",
        f"persisted_{size}_engine_one_turn_add_s",
        f"persisted_{size}_raw_one_turn_add_s",
        rounds=paired(benchmark.stats.stats.data, raw_seconds[2:]),
    )


def test_reopen_until_ready(benchmark, stores):
    """Each round reopens the raw store and reads every record with its embedding, then reopens the engine's
    store until it is ready to search (pytest-benchmark times the engine's). Both hold the same count of cells,
    whichever tests wrote to them before."""
    size, raw, engine, folders = stores
    held = len(engine)
    raw.close()
    engine.close()
    raw_seconds: list[float] = []
    opened: list[CellularMemory] = []

    def raw_reopen_first():
        close_last(opened)
        started = time.perf_counter()
        reopened = RawChroma(folders[0])
        assert reopened.read_everything() == held
        raw_seconds.append(time.perf_counter() - started)
        reopened.close()

    benchmark.pedantic(
        lambda: opened.append(CellularMemory(path=folders[1], encoder=ENCODER)), setup=raw_reopen_first, rounds=3
    )
    assert len(opened[-1]) == held
    close_last(opened)
    record(f"persisted_{size}_engine_reopen_s", benchmark.stats.stats.median)
    record(f"persisted_{size}_raw_reopen_and_read_s", statistics.median(raw_seconds))
    record_ratio(
        f"persisted_{size}_engine_vs_raw_reopen",
        f"persisted_{size}_engine_reopen_s",
        f"persisted_{size}_raw_reopen_and_read_s",
        rounds=paired(benchmark.stats.stats.data, raw_seconds),
    )


def test_first_text_search_after_reopening(benchmark, stores):
    """The first text search of a freshly reopened store (the reopen untimed) against later ones."""
    size, _, engine, folders = stores
    engine.close()  # the store serves one process at a time (closed already when the reopen test ran first)
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
