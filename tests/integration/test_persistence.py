"""Embedded Chroma persistence: reopen restores everything, across processes too."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from reference import BackendUnavailableError, CellularMemory, DimensionMismatchError, MemoryConfig
from reference.common.chroma import http_client, persistent_client
from reference.encoders import MockEncoder

TEXTS = [
    f"note {i}: {topic} {detail}"
    for i, (topic, detail) in enumerate(
        (t, d)
        for t in ("cats purr softly", "markets fell sharply", "Project Falcon ships in May", "rain in Lisbon")
        for d in ("today", "yesterday", "again", "as expected", "said Maria Lopez")
    )
]
QUERIES = ["cats purring", "Project Falcon", "market crash", "Maria Lopez", "weather in Lisbon"]


def answers(mem: CellularMemory) -> list[list[tuple[str, float, int]]]:
    return [[(h.id, round(h.score, 6), h.group_id) for h in mem.search(q, k=5)] for q in QUERIES]


@pytest.mark.parametrize("backend", ["numpy", "chroma"])
def test_reopen_restores_cells_groups_entities_and_access(tmp_path, backend):
    config = MemoryConfig(group_backend=backend)
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(), config=config) as mem:
        mem.add(TEXTS, metadata=[{"i": i} for i in range(len(TEXTS))])
        mem.delete(mem.ids()[:3])
        stats_before, ids_before = mem.stats(), mem.ids()
        centroids_before = mem._state.groups.active_centroids()
        before = answers(mem)
        accessed = {i: mem.get(i).access_count for i in ids_before}
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(), config=config) as mem:
        assert mem.stats() == stats_before and mem.ids() == ids_before
        np.testing.assert_allclose(mem._state.groups.active_centroids(), centroids_before, atol=1e-6)
        assert {i: mem.get(i).access_count for i in ids_before} == accessed
        assert mem.get(ids_before[0]).metadata == {"i": 3}
        assert answers(mem) == before


def test_a_memory_written_by_another_process_reads_back_identically(tmp_path):
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parents[2])!r})
        from reference import CellularMemory
        from reference.encoders import MockEncoder
        from tests.integration.test_persistence import TEXTS, answers
        with CellularMemory(path={str(tmp_path)!r}, encoder=MockEncoder()) as mem:
            mem.add(TEXTS)
            print(json.dumps(answers(mem)))
    """)
    written = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    before = json.loads(written.stdout.strip().splitlines()[-1])
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert len(mem) == len(TEXTS)
        assert json.loads(json.dumps(answers(mem))) == before


def test_reopening_with_another_dimension_is_refused(tmp_path):
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(384)) as mem:
        mem.add("hello")
    with pytest.raises(DimensionMismatchError, match="384"):
        CellularMemory(path=str(tmp_path), encoder=MockEncoder(128))


def test_unreachable_chroma_server_is_a_clear_error(dead_port):
    with pytest.raises(BackendUnavailableError, match="Chroma server"):
        http_client("127.0.0.1", dead_port)


@pytest.mark.parametrize("stored_before_failing", [False, True], ids=["fails-unwritten", "fails-after-commit"])
def test_a_failed_store_write_adds_nothing(tmp_path, monkeypatch, stored_before_failing):
    """A chunk can fail before it is written (disk full) or after (Chroma 1.5.9 commits to SQLite, then
    fails applying its log to a damaged vector segment): either way the batch leaves no trace."""
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        mem.add(TEXTS[:3])
        cells = mem._state.store.cells
        collection = cells._collection
        real_add = collection.add
        calls = []

        def fail_second_chunk(**kwargs):
            calls.append(1)
            if len(calls) < 2:
                return real_add(**kwargs)
            if stored_before_failing:
                real_add(**kwargs)
            raise RuntimeError("disk full")

        monkeypatch.setattr(cells, "batch", 2)
        monkeypatch.setattr(collection, "add", fail_second_chunk)
        with pytest.raises(BackendUnavailableError, match="disk full"):
            mem.add(TEXTS[3:8])
        assert len(mem) == 3 and collection.count() == 3
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert len(mem) == 3


class Killed(BaseException):
    """Stands for SIGKILL: escapes `except Exception`, so no rollback runs, as in a dead process."""


def open_store(layout: str, path: Path) -> CellularMemory:
    """An embedded store (by path: Chroma and the sidecar) or one in the server layout (fields in Chroma's
    metadata), here over an embedded client so no server is needed."""
    if layout == "embedded":
        return CellularMemory(path=str(path), encoder=MockEncoder())
    return CellularMemory(client=persistent_client(str(path)), encoder=MockEncoder())


@pytest.mark.parametrize(
    ("layout", "dies_in", "survives"),
    [
        ("embedded", "add", False),  # between two chunks of Chroma's add: undone on reopen
        ("embedded", "end", True),  # after Chroma held it whole, before the write was unmarked: kept whole
        ("server", "add", False),
        ("server", "update", False),  # while marking the batch committed
    ],
)
def test_a_batch_whose_writer_died_is_whole_or_absent_on_reopen(tmp_path, monkeypatch, layout, dies_in, survives):
    with open_store(layout, tmp_path) as mem:
        mem.add(TEXTS[:3])
        store = mem._state.store
        monkeypatch.setattr(store.cells, "batch", 2)  # so a 6-cell batch takes three writes
        mem.add(TEXTS[3:9])  # a split batch that finishes stays whole
        owner = store.sidecar if dies_in == "end" else store.cells._collection
        real = getattr(owner, dies_in)
        calls = []

        def die_on_second_call(*args, **kwargs):
            calls.append(1)
            if len(calls) == 2 or dies_in == "end":
                raise Killed
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, dies_in, die_on_second_call)
        with pytest.raises(Killed):
            mem.add(TEXTS[9:15])
        monkeypatch.undo()
        mem._state.abandon()  # the process "dies": nothing more is written
        if layout == "embedded":
            mem._store.embedded.close()  # the OS would release its lock
    with open_store(layout, tmp_path) as mem:
        expected = TEXTS[:15] if survives else TEXTS[:9]
        assert len(mem) == len(expected) and [mem.get(i).text for i in mem.ids()] == expected
        mem.check_invariants()


@pytest.mark.parametrize("layout", ["embedded", "server"])
def test_reopening_gives_back_every_field_exactly(tmp_path, layout):
    stamp, importance = 1796134115.3159413, 0.123456789012345678
    with open_store(layout, tmp_path) as mem:
        [cell, other] = mem.add(
            ["a first note", "another note"],
            timestamps=[stamp, stamp],
            importance=[importance, importance],
            metadata=[{"x": 1e-300}, {}],
            scope="user:alice",
        )
        mem.update(cell, text="a precise note")
        before = mem.get(cell)
    with open_store(layout, tmp_path) as mem:
        after = mem.get(cell)
        assert mem.ids() == [other, cell]  # an updated cell counts as written last
        assert mem.search("precise", k=2, scope="user:alice")[0].id == cell
        assert mem.search("precise", scope="") == []
    assert after.timestamp == stamp and after.importance == importance and after.metadata == {"x": 1e-300}
    assert np.array_equal(after.vector, before.vector) and after.episode == before.episode
    assert (after.text, after.scope, after.history) == ("a precise note", "user:alice", before.history)
    assert [entry["text"] for entry in after.history] == ["a first note"]


def test_a_failed_rewrite_on_the_server_layout_puts_the_previous_cells_back_exactly(tmp_path, monkeypatch):
    with open_store("server", tmp_path) as mem:
        ids = mem.add(TEXTS[:4], metadata=[{"n": i} for i in range(4)])
        before = [mem.get(cell) for cell in ids]
        collection = mem._state.store.cells._collection
        real_upsert = collection.upsert

        def fail_second_chunk(**kwargs):
            fail_second_chunk.calls += 1
            if fail_second_chunk.calls == 2:
                raise RuntimeError("disk full")
            real_upsert(**kwargs)

        fail_second_chunk.calls = 0
        monkeypatch.setattr(mem._state.store.cells, "batch", 2)
        monkeypatch.setattr(collection, "upsert", fail_second_chunk)
        with pytest.raises(BackendUnavailableError, match="disk full"):
            mem.add(TEXTS[10:14], ids=ids, upsert=True)  # the first two cells rewritten, then the write fails
        monkeypatch.setattr(collection, "upsert", real_upsert)
    with open_store("server", tmp_path) as mem:
        after = [mem.get(cell) for cell in ids]
    assert [r.text for r in after] == [r.text for r in before]
    assert all(np.array_equal(a.vector, b.vector) for a, b in zip(after, before))
